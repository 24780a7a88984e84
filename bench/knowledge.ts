/**
 * Knowledge search at scale, on the embedded database.
 * Run: pnpm bench:knowledge   (or: npx tsx bench/knowledge.ts [rows] [queries])
 *
 * 1. A real `parley serve` on a fresh data dir with the demo seed; the demo workspace gets enough
 *    training credits (`parley workspace set`, through the server's admin endpoint).
 * 2. A products table (name, sku, category, description searchable; price not) and N generated rows
 *    (deterministic: names from word lists, a category, a 15–40 word description drawn Zipf-like from a
 *    3,000-word vocabulary so common words match thousands of rows, a unique code "SKU-012345-B"),
 *    upserted over REST in batches of 500 (each row embedded, its HNSW and GIN entries written on insert).
 * 3. Q queries (Q - 20 natural-language ones built from a row's words, 20 exact product codes), one at a
 *    time, each in hybrid and in pure vector mode: latency p50 / p95 as the client sees it.
 * 4. The server stopped, the data dir opened with PGlite: for every query the exact top 5 (the same
 *    `order by embedding <=> q` with index scans disabled) against what vector mode returned: recall@5.
 * 5. Product-code queries: the fraction whose row is the top hit in hybrid mode.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Effect } from "effect"
import { embeddedDataPath, openPglite } from "../packages/server/src/db/Database.js"
import { localEmbedding, toVector } from "../packages/server/src/knowledge/Embedder.js"
import { EF_SEARCH, keywordTerms } from "../packages/server/src/knowledge/Knowledge.js"
import { send } from "./support.js"

const N = Number(process.argv[2] ?? 100_000)
const QUERIES = Number(process.argv[3] ?? 200)
const CODE_QUERIES = Math.min(20, QUERIES)
const BATCH = 500
const root = Path.resolve(import.meta.dirname, "..")
const tsx = Path.join(root, "node_modules/.bin/tsx")
const main = Path.join(root, "packages/server/src/cli/main.ts")

// ---------------------------------------------------------------------------------------------------
// deterministic data

/** mulberry32 */
const rng = (seed: number) => () => {
  seed |= 0
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
const random = rng(42)
const pick = <A>(xs: ReadonlyArray<A>) => xs[Math.floor(random() * xs.length)]!

const adjectives = ("compact premium classic modern rugged portable heavy-duty lightweight deluxe smart wireless ergonomic " +
  "foldable adjustable eco vintage professional mini ultra silent waterproof rechargeable stainless insulated reusable").split(" ")
const materials = ("steel aluminium bamboo oak walnut ceramic glass cotton linen wool leather silicone copper brass carbon " +
  "granite marble nylon canvas titanium").split(" ")
const nouns = ("kettle lamp chair desk backpack blender toaster speaker headphones drill mug bottle jacket boots tent " +
  "cushion rug shelf cabinet knife pan skillet grinder monitor keyboard mouse charger router camera tripod bicycle helmet " +
  "scooter stroller crib mattress pillow blanket towel umbrella wallet watch sunglasses thermostat vacuum humidifier " +
  "heater fan planter hose trimmer").split(" ")
const categories = ("kitchen lighting furniture outdoor audio tools apparel footwear bedding bath office computing " +
  "photography cycling baby garden climate travel accessories cleaning").split(" ")

// a few hundred real words first (the frequent ranks), then generated words to 3,000
const common = ("the and with for your this that from our are you can use easy quality design durable perfect home " +
  "daily great comfort clean fits size colour warranty included free shipping return order stock available delivery " +
  "price new best light strong soft handle cover battery power charge hours water resistant dishwasher safe " +
  "machine wash assembly required dimensions weight capacity litres watts volts inch cm kg grams material finish " +
  "matte gloss black white grey blue green red natural wood metal plastic frame base lid seal grip non-slip " +
  "compatible model version set pack piece pair spare replacement part kit accessory care instructions guide " +
  "support help question answer how long does take when will arrive exchange refund policy days within " +
  "customer service contact email phone chat open monday friday hours store pickup local international " +
  "gift card discount code sale offer bundle save subscribe account login password reset track shipment " +
  "damaged missing item replace repair technician install setup manual download app bluetooth wifi pairing " +
  "reset button light indicator blinking error noise smell heat overheating leak crack scratch stain wash " +
  "dry iron fold store travel carry bag case strap zip pocket lining sole lace heel toe width fit true " +
  "small medium large extra organic recycled sustainable vegan certified tested approved energy efficient " +
  "quiet fast slow speed setting timer auto shutoff safety lock child proof indoor outdoor weather uv").split(" ")
const syllables = "ka lo mi ne ra su ti vo ze pa dri fen gal hor jun kel mar nor pel quin ros sal tev urn vel wex yar zol".split(" ")
const vocabulary = [...new Set(common)]
while (vocabulary.length < 3000) {
  const w = pick(syllables) + pick(syllables) + (random() < 0.6 ? pick(syllables) : "")
  if (!vocabulary.includes(w)) vocabulary.push(w)
}
// Zipf (s = 1): P(rank r) ∝ 1/r
const cumulative: Array<number> = []
vocabulary.reduce((acc, _, r) => (cumulative.push(acc + 1 / (r + 1)), acc + 1 / (r + 1)), 0)
const zipfWord = () => {
  const x = random() * cumulative[cumulative.length - 1]!
  let lo = 0
  let hi = cumulative.length - 1
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (cumulative[mid]! < x) lo = mid + 1
    else hi = mid
  }
  return vocabulary[lo]!
}

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)
const skuOf = (i: number) => `SKU-${String(i).padStart(6, "0")}-${"ABCDEFGHJK"[i % 10]}`

interface Product {
  readonly default_id: string
  readonly name: string
  readonly sku: string
  readonly category: string
  readonly description: string
  readonly price: number
}

const products: Array<Product> = Array.from({ length: N }, (_, i) => {
  const length = 15 + Math.floor(random() * 26)
  const description = cap(Array.from({ length }, zipfWord).join(" ")) + "."
  return {
    default_id: `p${i}`,
    name: `${cap(pick(adjectives))} ${pick(materials)} ${pick(nouns)}`,
    sku: skuOf(i),
    category: pick(categories),
    description,
    price: Math.round(random() * 50000) / 100
  }
})

const templates = [
  (w: string) => `do you have a ${w}`,
  (w: string) => `${w}`,
  (w: string) => `looking for ${w}`,
  (w: string) => `which ${w} is available`,
  (w: string) => `I need a ${w} please`
]
interface Query {
  readonly text: string
  readonly target: number
  readonly code: boolean
}
const queries: Array<Query> = []
for (let q = 0; q < QUERIES - CODE_QUERIES; q++) {
  const target = Math.floor(random() * N)
  const p = products[target]!
  const descWords = p.description.toLowerCase().replace(/[.]/g, "").split(" ")
  const start = Math.floor(random() * Math.max(1, descWords.length - 4))
  const words = `${p.name.toLowerCase()} ${descWords.slice(start, start + 2 + Math.floor(random() * 3)).join(" ")}`
  queries.push({ text: pick(templates)(words), target, code: false })
}
for (let q = 0; q < CODE_QUERIES; q++) {
  const target = Math.floor(random() * N)
  queries.push({ text: products[target]!.sku, target, code: true })
}

// ---------------------------------------------------------------------------------------------------
// the server (own start, so the data dir survives the stop for the exact-search pass)

interface Running {
  readonly api: string
  readonly child: ChildProcess
  readonly demo: { token: string; workspace_id: number }
}

// BENCH_DATA_DIR: load once into that dir, and on later runs with the same row count only search
// (the rows are generated from a fixed seed, so the queries are the same)
const reuse = process.env.BENCH_DATA_DIR
const dataDir = reuse ?? Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-bench-knowledge-"))
const serve = () =>
  new Promise<Running>((resolve, reject) => {
    const child = spawn(tsx, [main, "serve"], {
      cwd: root,
      env: { ...process.env, PARLEY_DATA_DIR: dataDir, PORT: "0", RECEIVER_PORT: "0", PARLEY_SEED_DEMO: "true", LOG_LEVEL: "Warning" }
    })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      const api = /API\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1]
      if (api && output.includes("PARLEY_TOKEN")) {
        resolve({ api, child, demo: JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8")) })
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
    const child = spawn(tsx, [main, ...args], { cwd: root, env: { ...process.env, PARLEY_DATA_DIR: dataDir, LOG_LEVEL: "Warning" } })
    let output = ""
    child.stdout.on("data", (c: Buffer) => (output += c.toString()))
    child.stderr.on("data", (c: Buffer) => (output += c.toString()))
    child.on("exit", (code) => (code === 0 ? resolve(output) : reject(new Error(`parley ${args.join(" ")} (${code}):\n${output}`))))
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
    const r = await send({ method, url: `${api}${path}`, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
    if (r.status < 200 || r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.body.slice(0, 500)}`)
    return JSON.parse(r.body).data
  }
  const batchTimes: Array<number> = []
  let loadSeconds = 0
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
    const loadStarted = performance.now()
    for (let i = 0; i < N; i += BATCH) {
      const t0 = performance.now()
      const r = await call("PUT", `/api/user/knowledge-tables/${table.id}/points`, { points: products.slice(i, i + BATCH) })
      batchTimes.push(performance.now() - t0)
      if (r.upserted !== Math.min(BATCH, N - i)) throw new Error(`upserted ${r.upserted}`)
      if ((i / BATCH) % 20 === 19) {
        const last = batchTimes.slice(-20).reduce((a, b) => a + b, 0) / 20
        console.log(`  ${i + BATCH} rows, ${((performance.now() - loadStarted) / 1000).toFixed(0)} s, last batches ${ms(last)} ms each`)
      }
    }

    loadSeconds = (performance.now() - loadStarted) / 1000
    return table
  }
  const existing = (await call("GET", "/api/user/knowledge-tables")).find((t: any) => t.name === "Products")
  if (existing && existing.points_count !== N) throw new Error(`${dataDir} holds ${existing.points_count} rows, not ${N}`)
  const tableId = (existing ?? await load()).id as number
  const firstTen = batchTimes.slice(0, 10).reduce((a, b) => a + b, 0) / Math.min(10, batchTimes.length)
  const lastTen = batchTimes.slice(-10).reduce((a, b) => a + b, 0) / Math.min(10, batchTimes.length)

  // queries: warm up, then each query in both modes, one at a time
  for (const q of queries.slice(0, 10)) {
    await call("POST", `/api/user/knowledge-tables/${tableId}/search`, { query: q.text, limit: 5, use_hybrid: true })
    await call("POST", `/api/user/knowledge-tables/${tableId}/search`, { query: q.text, limit: 5, use_hybrid: false })
  }
  const results: Record<"hybrid" | "vector", Array<{ ms: number; ids: Array<string>; defaultIds: Array<string> }>> = { hybrid: [], vector: [] }
  for (const mode of ["hybrid", "vector"] as const) {
    for (const q of queries) {
      const t0 = performance.now()
      const r = await call("POST", `/api/user/knowledge-tables/${tableId}/search`, { query: q.text, limit: 5, use_hybrid: mode === "hybrid" })
      results[mode].push({ ms: performance.now() - t0, ids: r.point_ids, defaultIds: r.results.map((h: any) => h.default_id) })
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
        out.push({ ids: top.rows.map((r) => r.id), fifth: Number(top.rows[top.rows.length - 1]?.d ?? 0), hnswDistances: hnsw.rows.map((r) => Number(r.d)) })
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
        await db.query(`select id::text, embedding <=> $1::vector from knowledge_points where knowledge_table_id = $2 and embedding is not null
                        order by embedding <=> $1::vector limit 40`, [v, tableId])
        await db.exec("commit")
        parts.hnsw.push(performance.now() - t)
        const terms = keywordTerms(q.text)
        t = performance.now()
        await db.query(
          `with cand as (select distinct c.id from unnest($1::text[]) as term,
             lateral (select p.id from knowledge_points p where p.knowledge_table_id = $2 and p.tsv @@ plainto_tsquery('simple', term) limit 50) c)
           select p.id::text from knowledge_points p join cand using (id)
           order by ts_rank_cd(p.tsv, to_tsquery('simple', $3)) desc limit 50`,
          [`{${terms.map((x) => `"${x.replace(/["\\]/g, "")}"`).join(",")}}`, tableId,
            terms.map((x) => `(${x.replace(/[^\p{L}\p{N}]+/gu, " ").trim().split(" ").filter(Boolean).join(" & ")})`).filter((x) => x !== "()").join(" | ") || "''"]
        )
        parts.keyword.push(performance.now() - t)
      }
      console.log(`  in-process statements, p50 / p95 ms: HNSW top 40 (ef_search ${EF_SEARCH}) ${ms(quantile(parts.hnsw, 0.5))} / ${ms(quantile(parts.hnsw, 0.95))}; ` +
        `keyword side over every query term (the server skips the common ones) ${ms(quantile(parts.keyword, 0.5))} / ${ms(quantile(parts.keyword, 0.95))}`)
      console.log(`  exact pass: ${((performance.now() - t0) / 1000).toFixed(1)} s; the served plan: ${plan.rows.map((r) => r["QUERY PLAN"].replace(/'\[[^\]]*\]'/g, "q").trim()).join(" / ")}`)
      return out
    })
  })))

  // figures
  let strict = 0
  let tolerant = 0
  for (const [i, e] of exact.entries()) {
    const got = results.vector[i]!.ids.slice(0, 5)
    const truth = new Set(e.ids)
    strict += got.filter((id) => truth.has(id)).length / Math.max(1, e.ids.length)
    // a hit tied with the exact 5th distance counts too (equal distances have no fixed order)
    tolerant += Math.min(e.ids.length, got.filter((id) => truth.has(id)).length +
      exact[i]!.hnswDistances.filter((d, j) => !truth.has(got[j] ?? "") && d <= e.fifth + 1e-6).length) / Math.max(1, e.ids.length)
  }
  const recall = strict / exact.length
  const recallTies = tolerant / exact.length
  const nl = queries.map((q, i) => [q, i] as const).filter(([q]) => !q.code)
  const codes = queries.map((q, i) => [q, i] as const).filter(([q]) => q.code)
  const codeTop = codes.filter(([q, i]) => results.hybrid[i]!.defaultIds[0] === products[q.target]!.default_id).length
  const codeTopVector = codes.filter(([q, i]) => results.vector[i]!.defaultIds[0] === products[q.target]!.default_id).length
  const nlTarget = (mode: "hybrid" | "vector") =>
    nl.filter(([q, i]) => results[mode][i]!.defaultIds.includes(products[q.target]!.default_id)).length

  const lat = (mode: "hybrid" | "vector", which: ReadonlyArray<readonly [Query, number]>) => which.map(([, i]) => results[mode][i]!.ms)
  console.log(`\nKnowledge search, ${N} rows, ${queries.length} queries (${codes.length} product codes), node ${process.version}\n`)
  console.log("| rows | batches of | load s | rows/s | first 10 batches ms | last 10 batches ms |")
  console.log("|---|---|---|---|---|---|")
  if (loadSeconds > 0) console.log(`| ${N} | ${BATCH} | ${loadSeconds.toFixed(0)} | ${(N / loadSeconds).toFixed(0)} | ${ms(firstTen)} | ${ms(lastTen)} |`)
  else console.log(`| ${N} | (loaded by an earlier run into ${dataDir}) | | | | |`)
  console.log("\n| mode | queries | p50 ms | p95 ms | max ms | NL p95 ms | code p95 ms |")
  console.log("|---|---|---|---|---|---|---|")
  for (const mode of ["hybrid", "vector"] as const) {
    const all = results[mode].map((r) => r.ms)
    console.log(`| ${mode} | ${all.length} | ${ms(quantile(all, 0.5))} | ${ms(quantile(all, 0.95))} | ${ms(Math.max(...all))} | ${ms(quantile(lat(mode, nl), 0.95))} | ${ms(quantile(lat(mode, codes), 0.95))} |`)
  }
  console.log(`\nrecall@5, HNSW (vector mode as served, ef_search ${EF_SEARCH}) vs exact: ${recall.toFixed(3)} (ties with the exact 5th distance counted: ${recallTies.toFixed(3)})`)
  console.log(`product code is the top hit: hybrid ${codeTop}/${codes.length}, vector ${codeTopVector}/${codes.length}`)
  console.log(`NL query's source row in the top 5: hybrid ${nlTarget("hybrid")}/${nl.length}, vector ${nlTarget("vector")}/${nl.length}`)
} finally {
  if (server) await stop(server.child)
  if (reuse) console.log(`data dir kept: ${dataDir}`)
  else Fs.rmSync(dataDir, { recursive: true, force: true })
}
process.exit(0)
