/**
 * Knowledge search at scale, on the embedded database.
 * Run: pnpm bench:knowledge   (or: npx tsx bench/knowledge.ts [rows] [queries])
 *
 * 1. A real `parley serve` on a fresh data dir with the demo seed; the demo workspace gets enough
 *    training credits (`parley workspace set`, through the server's admin endpoint).
 * 2. A products table (name, sku, category, description searchable; price not) and N generated rows
 *    (bench/knowledge-data.ts, deterministic: names from word lists, a category, a 15–40 word description
 *    drawn Zipf-like from a 3,000-word vocabulary so common words match thousands of rows, a unique code
 *    "SKU-012345-B"), upserted over REST in batches of 500 (or, BENCH_LOAD=import, as a CSV file through
 *    `parley knowledge import`): each row embedded, its GIN entry written on insert, its HNSW entry too,
 *    or, in a large load, the graph built after it (knowledge/Graph.ts).
 *    BENCH_TEXT=topical: 40% of a description's words from its product type's terms.
 * 3. Q queries (Q - 20 natural-language ones built from a row's words, 20 exact product codes), one at a
 *    time, each in hybrid and in pure vector mode: latency p50 / p95 as the client sees it.
 * 4. The server stopped, the data dir opened with PGlite: for every query the exact top 5 (the same
 *    `order by embedding <=> q` with index scans disabled) against what vector mode returned: recall@5.
 * 5. Product-code queries: the fraction whose row is the top hit in hybrid mode.
 *
 * The load is timed to its last request and to the rows being searchable through the HNSW graph (a
 * server that builds the graph after a large load reports `parley_knowledge_graph_ready` 0 until it is
 * built; one that writes it row by row is done with the last request); the server's CPU time covers both.
 */
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { embeddedDataPath, openPglite } from "../packages/server/src/db/Database.js"
import { localEmbedding, toVector } from "../packages/server/src/knowledge/Embedder.js"
import { DEFAULT_EF_SEARCH, keywordTerms, termQueries } from "../packages/server/src/knowledge/KnowledgeSearch.js"
import { generate, type Query, type TextKind } from "./knowledge-data.js"
import { cpuMs } from "./postgres.js"
import { send } from "./support.js"

const N = Number(process.argv[2] ?? 100_000)
const QUERIES = Number(process.argv[3] ?? 200)
const BATCH = 500
const root = Path.resolve(import.meta.dirname, "..")
const tsx = Path.join(root, "node_modules/.bin/tsx")
const main = Path.join(root, "packages/server/src/cli/main.ts")

// BENCH_LOAD=import: the rows as a CSV file through `parley knowledge import` (default rest: PUT .../points)
const LOAD = process.env.BENCH_LOAD ?? "rest"
if (LOAD !== "rest" && LOAD !== "import") throw new Error("BENCH_LOAD must be rest or import")
// BENCH_TEXT=topical: descriptions that read like their product's (default uniform, the catalogue of every run so far)
const TEXT = (process.env.BENCH_TEXT ?? "uniform") as TextKind
// what the server runs with (the bench passes the environment on to it)
const EF_SEARCH = Number(process.env.KNOWLEDGE_EF_SEARCH ?? DEFAULT_EF_SEARCH.vector)
const EF_HYBRID = Number(process.env.KNOWLEDGE_HYBRID_EF_SEARCH ?? DEFAULT_EF_SEARCH.hybrid)
if (TEXT !== "topical" && TEXT !== "uniform") throw new Error("BENCH_TEXT must be topical or uniform")
const { products, queries } = generate(N, QUERIES, TEXT)

// ---------------------------------------------------------------------------------------------------
// the server (own start, so the data dir survives the stop for the exact-search pass)

interface Running {
  readonly api: string
  readonly metrics: string | undefined
  readonly child: ChildProcess
  readonly demo: { token: string; workspace_id: number }
}

// BENCH_DATA_DIR: load once into that dir, and on later runs with the same row count only search
// (the rows are generated from a fixed seed, so the queries are the same)
const reuse = process.env.BENCH_DATA_DIR
const dataDir = reuse ?? Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-bench-knowledge-"))
const serve = () =>
  new Promise<Running>((resolve, reject) => {
    // node itself (not the tsx wrapper), so the child's pid is the server's for its CPU time
    // BENCH_NODE_ARGS: more node options for the server (diagnosis: `--cpu-prof --cpu-prof-dir=/tmp/prof`)
    const nodeArgs = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter((a) => a !== "")
    const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", main, "serve"], {
      cwd: root,
      env: {
        ...process.env,
        PARLEY_DATA_DIR: dataDir,
        PORT: "0",
        RECEIVER_PORT: "0",
        METRICS_PORT: "0",
        PARLEY_SEED_DEMO: "true",
        LOG_LEVEL: "Warning"
      }
    })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      const api = /API\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1]
      const metrics = /Metrics\s+(http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(output)?.[1]
      if (api && metrics && output.includes("PARLEY_TOKEN")) {
        resolve({
          api,
          metrics,
          child,
          demo: JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8"))
        })
      }
    })
    child.stderr.on("data", (c: Buffer) => (output += c.toString()))
    child.on("exit", (code) => reject(new Error(`server exited (${code}):\n${output}`)))
  })
const stop = (child: ChildProcess) =>
  new Promise<void>((done) => {
    if (child.exitCode !== null) return done()
    child.on("exit", () => done())
    child.kill("SIGTERM")
  })
const cli = (args: Array<string>) =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(tsx, [main, ...args], {
      cwd: root,
      env: { ...process.env, PARLEY_DATA_DIR: dataDir, LOG_LEVEL: "Warning" }
    })
    let output = ""
    child.stdout.on("data", (c: Buffer) => (output += c.toString()))
    child.stderr.on("data", (c: Buffer) => (output += c.toString()))
    child.on(
      "exit",
      (code) => (code === 0 ? resolve(output) : reject(new Error(`parley ${args.join(" ")} (${code}):\n${output}`)))
    )
  })

const quantile = (xs: ReadonlyArray<number>, q: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0
}
const ms = (x: number) => x.toFixed(1)

let server: Running | undefined
try {
  server = await serve()
  const { api, demo } = server
  const headers = { authorization: `Bearer ${demo.token}`, "content-type": "application/json" }
  const call = async (method: string, path: string, body?: unknown) => {
    const r = await send({
      method,
      url: `${api}${path}`,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    if (r.status < 200 || r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.body.slice(0, 500)}`)
    return JSON.parse(r.body).data
  }
  const batchTimes: Array<number> = []
  let loadSeconds = 0
  let requestSeconds = 0
  let loadCpuMs = 0
  let requestCpuMs = 0
  let builds: number | undefined
  const load = async () => {
    await cli(["workspace", "set", "--workspace-id", String(demo.workspace_id), "--training-credits", String(N + 1000)])

    const table = await call("POST", "/api/user/knowledge-tables", {
      name: "Products",
      description: "Generated catalogue",
      columns: [
        { name: "name", data_type: "string", order: 1, is_searchable: true },
        { name: "sku", data_type: "string", order: 2, is_searchable: true, is_filterable: true },
        { name: "category", data_type: "string", order: 3, is_searchable: true, is_filterable: true },
        { name: "description", data_type: "string", order: 4, is_searchable: true },
        { name: "price", data_type: "number", order: 5 }
      ]
    })

    // load
    // BENCH_PROFILE_LOAD=true with BENCH_NODE_ARGS="--import ./bench/cpu-profile.mjs": the load's requests profiled
    const profile = () => process.env.BENCH_PROFILE_LOAD === "true" && server!.child.kill("SIGUSR2")
    profile()
    const cpuBefore = cpuMs(server!.child.pid!)
    const loadStarted = performance.now()
    if (LOAD === "import") {
      // `parley knowledge import` of a CSV through the running server's admin endpoint, batches of BATCH
      const file = Path.join(dataDir, "products.csv")
      const cell = (v: string | number) => /[",\n]/.test(String(v)) ? `"${String(v).replace(/"/g, "\"\"")}"` : String(v)
      Fs.writeFileSync(
        file,
        [
          "default_id,name,sku,category,description,price",
          ...products.map((p) => [p.default_id, p.name, p.sku, p.category, p.description, p.price].map(cell).join(","))
        ].join("\n")
      )
      const out = await cli([
        "knowledge",
        "import",
        "--table-id",
        String(table.id),
        "--file",
        file,
        "--batch-size",
        String(BATCH)
      ])
      if (!out.includes(`Upserted ${N} rows, rejected 0`)) throw new Error(out)
    }
    for (let i = 0; LOAD === "rest" && i < N; i += BATCH) {
      const t0 = performance.now()
      const r = await call("PUT", `/api/user/knowledge-tables/${table.id}/points`, {
        points: products.slice(i, i + BATCH)
      })
      batchTimes.push(performance.now() - t0)
      if (r.upserted !== Math.min(BATCH, N - i)) throw new Error(`upserted ${r.upserted}`)
      if ((i / BATCH) % 20 === 19) {
        const last = batchTimes.slice(-20).reduce((a, b) => a + b, 0) / 20
        console.log(
          `  ${i + BATCH} rows, ${((performance.now() - loadStarted) / 1000).toFixed(0)} s, last batches ${
            ms(last)
          } ms each, ` +
            `server CPU ${((cpuMs(server!.child.pid!) - cpuBefore) / (i + BATCH)).toFixed(2)} ms a row`
        )
      }
    }

    requestSeconds = (performance.now() - loadStarted) / 1000
    requestCpuMs = cpuMs(server!.child.pid!) - cpuBefore
    profile()
    // a server that builds the HNSW graph after a large load (parley_knowledge_graph_ready 0 meanwhile):
    // the rows are searchable through the graph once it is built
    const metric = async (name: string): Promise<number | undefined> => {
      // the embedded database's build holds the server's one thread: no answer until it is done
      const text = await send({ method: "GET", url: server!.metrics! }).then((r) => r.body, () => undefined)
      if (text === undefined) return metric(name)
      const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(text)
      return m ? Number(m[1]) : undefined
    }
    while ((await metric("parley_knowledge_graph_ready")) === 0) await new Promise((r) => setTimeout(r, 250))
    loadSeconds = (performance.now() - loadStarted) / 1000
    loadCpuMs = cpuMs(server!.child.pid!) - cpuBefore
    builds = await metric("parley_knowledge_graph_builds_total")
    return table
  }
  const existing = (await call("GET", "/api/user/knowledge-tables")).find((t: any) => t.name === "Products")
  if (existing && existing.points_count !== N) {
    throw new Error(`${dataDir} holds ${existing.points_count} rows, not ${N}`)
  }
  const tableId = (existing ?? await load()).id as number
  const firstTen = batchTimes.slice(0, 10).reduce((a, b) => a + b, 0) / Math.min(10, batchTimes.length)
  const lastTen = batchTimes.slice(-10).reduce((a, b) => a + b, 0) / Math.min(10, batchTimes.length)

  // queries: warm up, then each query in both modes, one at a time
  for (const q of queries.slice(0, 10)) {
    await call("POST", `/api/user/knowledge-tables/${tableId}/search`, { query: q.text, limit: 5, use_hybrid: true })
    await call("POST", `/api/user/knowledge-tables/${tableId}/search`, { query: q.text, limit: 5, use_hybrid: false })
  }
  const results: Record<"hybrid" | "vector", Array<{ ms: number; ids: Array<string>; defaultIds: Array<string> }>> = {
    hybrid: [],
    vector: []
  }
  for (const mode of ["hybrid", "vector"] as const) {
    for (const q of queries) {
      const t0 = performance.now()
      const r = await call("POST", `/api/user/knowledge-tables/${tableId}/search`, {
        query: q.text,
        limit: 5,
        use_hybrid: mode === "hybrid"
      })
      results[mode].push({
        ms: performance.now() - t0,
        ids: r.point_ids,
        defaultIds: r.results.map((h: any) => h.default_id)
      })
    }
  }
  await stop(server.child)
  server = undefined

  // exact search on the stopped server's data
  const exact = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const db = yield* openPglite({ dataDir: embeddedDataPath(dataDir) })
    return yield* Effect.promise(async () => {
      const out: Array<{ ids: Array<string>; fifth: number; hnswDistances: Array<number> }> = []
      const t0 = performance.now()
      for (const [i, q] of queries.entries()) {
        const v = toVector(localEmbedding(q.text))
        await db.exec("begin; set local enable_indexscan = off; set local enable_bitmapscan = off")
        const top = await db.query<{ id: string; d: number }>(
          `select id::text as id, embedding <=> $1::vector as d from knowledge_points
           where knowledge_table_id = $2 and embedding is not null order by embedding <=> $1::vector limit 5`,
          [v, tableId]
        )
        await db.exec("commit")
        const hnswIds = results.vector[i]!.ids
        const hnsw = hnswIds.length === 0 ? { rows: [] } : await db.query<{ id: string; d: number }>(
          `select id::text as id, embedding <=> $1::vector as d from knowledge_points where id::text = any($2::text[])`,
          [v, hnswIds]
        )
        // in the order vector mode returned them (the lookup returns rows in table order)
        const distanceOf = new Map(hnsw.rows.map((r) => [r.id, Number(r.d)]))
        out.push({
          ids: top.rows.map((r) => r.id),
          fifth: Number(top.rows[top.rows.length - 1]?.d ?? 0),
          hnswDistances: hnswIds.map((id) => distanceOf.get(id) ?? Infinity)
        })
      }
      const plan = await db.query<{ "QUERY PLAN": string }>(
        `explain select id from knowledge_points where knowledge_table_id = $2 and embedding is not null order by embedding <=> $1::vector limit 5`,
        [toVector(localEmbedding(queries[0]!.text)), tableId]
      )
      // where a request's time goes, statement by statement, in this process's own PGlite (no HTTP)
      const parts = { hnsw: [] as Array<number>, keyword: [] as Array<number> }
      for (const q of queries) {
        const v = toVector(localEmbedding(q.text))
        let t = performance.now()
        await db.exec(`begin; set local hnsw.ef_search = ${EF_SEARCH}`)
        await db.query(
          `select id::text, embedding <=> $1::vector from knowledge_points where knowledge_table_id = $2 and embedding is not null
                        order by embedding <=> $1::vector limit 40`,
          [v, tableId]
        )
        await db.exec("commit")
        parts.hnsw.push(performance.now() - t)
        const terms = keywordTerms(q.text)
        t = performance.now()
        const tsTerms = termQueries(terms)
        // the server's keyword statement (rows with every term; each term's own rows only when none has them all)
        await db.query(
          `with every_term as (select p.id from knowledge_points p where p.knowledge_table_id = $2
             and p.tsv @@ to_tsquery('simple', $4) limit 50),
           cand as (select id from every_term union
             select c.id from unnest($1::text[]) as term,
             lateral (select p.id from knowledge_points p where p.knowledge_table_id = $2 and p.tsv @@ plainto_tsquery('simple', term) limit 50) c
             where not exists (select 1 from every_term))
           select p.id::text from knowledge_points p join cand using (id)
           order by ts_rank_cd(p.tsv, to_tsquery('simple', $3)) desc limit 50`,
          [
            `{${terms.map((x) => `"${x.replace(/["\\]/g, "")}"`).join(",")}}`,
            tableId,
            tsTerms.join(" | ") || "''",
            tsTerms.join(" & ") || "''"
          ]
        )
        parts.keyword.push(performance.now() - t)
      }
      console.log(
        `  in-process statements, p50 / p95 ms: HNSW top 40 (ef_search ${EF_SEARCH}) ${
          ms(quantile(parts.hnsw, 0.5))
        } / ${ms(quantile(parts.hnsw, 0.95))}; ` +
          `keyword side over every query term (the server skips the common ones) ${
            ms(quantile(parts.keyword, 0.5))
          } / ${ms(quantile(parts.keyword, 0.95))}`
      )
      console.log(
        `  exact pass: ${((performance.now() - t0) / 1000).toFixed(1)} s; the served plan: ${
          plan.rows.map((r) => r["QUERY PLAN"].replace(/'\[[^\]]*\]'/g, "q").trim()).join(" / ")
        }`
      )
      return out
    })
  })))

  // figures
  const strict: Array<number> = []
  const tolerant: Array<number> = []
  for (const [i, e] of exact.entries()) {
    const got = results.vector[i]!.ids.slice(0, 5)
    const truth = new Set(e.ids)
    strict.push(got.filter((id) => truth.has(id)).length / Math.max(1, e.ids.length))
    // a hit tied with the exact 5th distance counts too (equal distances have no fixed order)
    tolerant.push(
      Math.min(
        e.ids.length,
        got.filter((id) => truth.has(id)).length +
          exact[i]!.hnswDistances.filter((d, j) => !truth.has(got[j] ?? "") && d <= e.fifth + 1e-6).length
      ) / Math.max(1, e.ids.length)
    )
  }
  const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, x) => a + x, 0) / Math.max(1, xs.length)
  const recall = mean(strict)
  const recallTies = mean(tolerant)
  const nl = queries.map((q, i) => [q, i] as const).filter(([q]) => !q.code)
  const codes = queries.map((q, i) => [q, i] as const).filter(([q]) => q.code)
  const codeTop = codes.filter(([q, i]) => results.hybrid[i]!.defaultIds[0] === products[q.target]!.default_id).length
  const codeTopVector = codes.filter(([q, i]) =>
    results.vector[i]!.defaultIds[0] === products[q.target]!.default_id
  ).length
  const nlTarget = (mode: "hybrid" | "vector") =>
    nl.filter(([q, i]) => results[mode][i]!.defaultIds.includes(products[q.target]!.default_id)).length

  const lat = (mode: "hybrid" | "vector", which: ReadonlyArray<readonly [Query, number]>) =>
    which.map(([, i]) => results[mode][i]!.ms)
  console.log(
    `\nKnowledge search, ${N} rows (${TEXT} text, loaded by ${
      LOAD === "rest" ? "REST" : "CSV import"
    }), ${queries.length} queries (${codes.length} product codes), node ${process.version}\n`
  )
  // load: until the last request answered; searchable: until the HNSW graph covers the rows (the same on a
  // server that writes the graph row by row); server CPU over the load and the build
  console.log(
    "| rows | batches of | load s | searchable s | rows/s | server CPU ms a row: load / with the graph | graph builds | first 10 batches ms | last 10 batches ms |"
  )
  console.log("|---|---|---|---|---|---|---|---|---|")
  if (loadSeconds > 0) {
    console.log(
      `| ${N} | ${BATCH} | ${requestSeconds.toFixed(0)} | ${loadSeconds.toFixed(0)} | ${
        (N / loadSeconds).toFixed(0)
      } | ` +
        `${(requestCpuMs / N).toFixed(2)} / ${(loadCpuMs / N).toFixed(2)} | ${builds ?? "-"} | ${
          batchTimes.length > 0 ? `${ms(firstTen)} | ${ms(lastTen)}` : "- | -"
        } |`
    )
  } else console.log(`| ${N} | (loaded by an earlier run into ${dataDir}) | | | | | | | |`)
  console.log("\n| mode | queries | p50 ms | p95 ms | max ms | NL p95 ms | code p95 ms |")
  console.log("|---|---|---|---|---|---|---|")
  for (const mode of ["hybrid", "vector"] as const) {
    const all = results[mode].map((r) => r.ms)
    console.log(
      `| ${mode} | ${all.length} | ${ms(quantile(all, 0.5))} | ${ms(quantile(all, 0.95))} | ${ms(Math.max(...all))} | ${
        ms(quantile(lat(mode, nl), 0.95))
      } | ${ms(quantile(lat(mode, codes), 0.95))} |`
    )
  }
  console.log(`\nef_search: vector ${EF_SEARCH}, hybrid ${EF_HYBRID}`)
  console.log(
    `recall@5, HNSW (vector mode as served, ef_search ${EF_SEARCH}) vs exact: ${
      recall.toFixed(3)
    } (ties with the exact 5th distance counted: ${recallTies.toFixed(3)})`
  )
  console.log(
    `recall@5 by query kind: natural language ${mean(nl.map(([, i]) => strict[i]!)).toFixed(3)}, ` +
      `product codes ${mean(codes.map(([, i]) => strict[i]!)).toFixed(3)}`
  )
  console.log(`product code is the top hit: hybrid ${codeTop}/${codes.length}, vector ${codeTopVector}/${codes.length}`)
  console.log(
    `NL query's source row in the top 5: hybrid ${nlTarget("hybrid")}/${nl.length}, vector ${
      nlTarget("vector")
    }/${nl.length}`
  )
} finally {
  if (server) await stop(server.child)
  if (reuse) console.log(`data dir kept: ${dataDir}`)
  else Fs.rmSync(dataDir, { recursive: true, force: true })
}
process.exit(0)
