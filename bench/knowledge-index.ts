/**
 * The HNSW index alone, in-process: how its build parameters trade recall@5 against latency and build
 * time on the knowledge bench's catalogue, without the server or the load over REST.
 * Run: npx tsx bench/knowledge-index.ts [rows] [m] [ef_construction] [ef_search,...]
 *   env BENCH_TEXT=topical|uniform (default uniform: the catalogue of bench/knowledge.ts),
 *       BENCH_HALFVEC=true (index the vectors as halfvec), BENCH_INDEX_DIR (keep the built table
 *       there and reuse it on the next run with the same parameters).
 *
 * Rows are embedded with Parley's local embedding exactly as the server embeds a products table (its
 * searchable columns rendered "name: value"), bulk-inserted, indexed with CREATE INDEX, analysed.
 * Then 100 natural-language queries of the bench: the exact top 5 (index scans off) against what an
 * HNSW scan returns (top 40, as the server asks, first 5 compared) at each ef_search; and what inserting
 * one more batch of 500 rows into the built graph costs.
 */
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { openPglite } from "../packages/server/src/db/Database.js"
import { localEmbedding, toVector } from "../packages/server/src/knowledge/Embedder.js"
import { generate, type Product, type TextKind } from "./knowledge-data.js"

const N = Number(process.argv[2] ?? 100_000)
const M = Number(process.argv[3] ?? 16)
const EF_CONSTRUCTION = Number(process.argv[4] ?? 64)
const EF_SEARCH = (process.argv[5] ?? "40,100,200,400").split(",").map(Number)
const TEXT = (process.env.BENCH_TEXT ?? "uniform") as TextKind
const HALFVEC = process.env.BENCH_HALFVEC === "true"
if (TEXT !== "topical" && TEXT !== "uniform") throw new Error("BENCH_TEXT must be topical or uniform")

const { products, queries } = generate(N, 120, TEXT)
const nl = queries.filter((q) => !q.code)
const searchText = (p: Product) =>
  `name: ${p.name}\nsku: ${p.sku}\ncategory: ${p.category}\ndescription: ${p.description}`
const column = HALFVEC ? "embedding::halfvec(256)" : "embedding"
const ops = HALFVEC ? "halfvec_cosine_ops" : "vector_cosine_ops"
const cast = HALFVEC ? "::halfvec(256)" : "::vector"
const table = `bench_${TEXT}_${N}_m${M}_e${EF_CONSTRUCTION}${HALFVEC ? "_half" : ""}`
const dir = process.env.BENCH_INDEX_DIR ?? Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-bench-index-"))
const ms = (x: number) => x.toFixed(1)
const quantile = (xs: ReadonlyArray<number>, q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? 0

await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const db = yield* openPglite({ dataDir: dir })
  yield* Effect.promise(async () => {
    await db.exec("create extension if not exists vector; set maintenance_work_mem = '512MB'")
    if ((await db.query(`select 1 from pg_class where relname = $1`, [table])).rows.length === 0) {
      await db.exec(`create table ${table} (id int primary key, embedding vector(256))`)
      let t = performance.now()
      for (let i = 0; i < N; i += 1000) {
        const chunk = products.slice(i, i + 1000)
        await db.query(`insert into ${table} select a, b::vector from unnest($1::int[], $2::text[]) as u(a, b)`, [
          chunk.map((_, j) => i + j),
          chunk.map((p) => toVector(localEmbedding(searchText(p))))
        ])
      }
      console.log(`embedded and inserted ${N} rows: ${ms((performance.now() - t) / 1000)} s`)
      t = performance.now()
      await db.exec(
        `create index on ${table} using hnsw ((${column}) ${ops}) with (m = ${M}, ef_construction = ${EF_CONSTRUCTION})`
      )
      console.log(
        `CREATE INDEX hnsw m=${M} ef_construction=${EF_CONSTRUCTION}${HALFVEC ? " (halfvec)" : ""}: ${
          ms((performance.now() - t) / 1000)
        } s`
      )
      await db.exec(`analyze ${table}`)
    }
    const exact: Array<{ readonly ids: ReadonlySet<number>; readonly fifth: number }> = []
    for (const q of nl) {
      await db.exec("begin; set local enable_indexscan = off; set local enable_bitmapscan = off")
      const top = await db.query<{ id: number; d: number }>(
        `select id, embedding <=> $1::vector as d from ${table} order by embedding <=> $1::vector limit 5`,
        [toVector(localEmbedding(q.text))]
      )
      await db.exec("commit")
      exact.push({ ids: new Set(top.rows.map((r) => r.id)), fifth: Number(top.rows[top.rows.length - 1]?.d ?? 0) })
    }
    console.log(`\n${N} rows (${TEXT} text), ${nl.length} queries, node ${process.version}\n`)
    console.log("| m | ef_construction | ef_search | recall@5 | counting ties | p50 ms | p95 ms |")
    console.log("|---|---|---|---|---|---|---|")
    for (const ef of EF_SEARCH) {
      let recall = 0
      let ties = 0
      const times: Array<number> = []
      for (const [i, q] of nl.entries()) {
        const v = toVector(localEmbedding(q.text))
        const t = performance.now()
        await db.exec(`begin; set local hnsw.ef_search = ${ef}`)
        const r = await db.query<{ id: number }>(`select id from ${table} order by ${column} <=> $1${cast} limit 40`, [
          v
        ])
        await db.exec("commit")
        times.push(performance.now() - t)
        const got = r.rows.slice(0, 5).map((g) => g.id)
        const { fifth, ids } = exact[i]!
        recall += got.filter((id) => ids.has(id)).length / Math.max(1, ids.size)
        // a returned row at the exact 5th distance (or nearer) is as near as exact search's own pick
        const others = got.filter((id) => !ids.has(id))
        const near = others.length === 0 ? [] : (await db.query<{ d: number }>(
          `select embedding <=> $1::vector as d from ${table} where id = any($2::int[])`,
          [v, others]
        )).rows.filter((x) => Number(x.d) <= fifth + 1e-6)
        ties += Math.min(ids.size, got.length - others.length + near.length) / Math.max(1, ids.size)
      }
      console.log(
        `| ${M} | ${EF_CONSTRUCTION} | ${ef} | ${(recall / nl.length).toFixed(3)} | ${
          (ties / nl.length).toFixed(3)
        } | ${ms(quantile(times, 0.5))} | ${ms(quantile(times, 0.95))} |`
      )
    }
    // what one more upsert batch costs on this graph: 500 new rows inserted (and rolled back), three times
    const batches: Array<number> = []
    for (let round = 0; round < 3; round++) {
      const fresh = generate(500, 0, TEXT).products.map((p, i) => ({ ...p, name: `${p.name} ${round}-${i}` }))
      const t = performance.now()
      await db.exec("begin")
      await db.query(`insert into ${table} select a, b::vector from unnest($1::int[], $2::text[]) as u(a, b)`, [
        fresh.map((_, i) => N + round * 1000 + i),
        fresh.map((p) => toVector(localEmbedding(searchText(p))))
      ])
      await db.exec("rollback")
      batches.push(performance.now() - t)
    }
    console.log(
      `\ninserting 500 more rows into the graph (embedding included), three batches: ${
        batches.map((b) => ms(b)).join(", ")
      } ms ` +
        `(${ms(Math.min(...batches) / 500)} ms a row at best)`
    )
  })
})))
if (process.env.BENCH_INDEX_DIR === undefined) Fs.rmSync(dir, { recursive: true, force: true })
