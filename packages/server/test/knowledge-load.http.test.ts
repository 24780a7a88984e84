/**
 * A large knowledge load over REST (knowledge/Graph.ts): the upserts drop the HNSW graph once the load is
 * large against the table, search stays exact meanwhile, and the keeper builds the graph again once the
 * writes pause; a small upsert into the loaded table then goes into the graph as before.
 */
import { expect, layer } from "@effect/vitest"
import { Duration, Effect, Metric, Schedule } from "effect"
import { localEmbedding, toVector } from "../src/knowledge/Embedder.js"
import { GRAPH_INDEX, graphBuilds, graphSuspensions } from "../src/knowledge/Graph.js"
import { ok, post, put, sqlRows } from "./support/Opportunities.js"
import { seedUser, TestServerLive } from "./support/TestServer.js"

const TABLES = "/api/user/knowledge-tables"

const products = {
  name: "Catalogue",
  columns: [
    { name: "name", data_type: "string", order: 1, is_searchable: true },
    { name: "description", data_type: "string", order: 2, is_searchable: true }
  ]
}

const nouns = [
  "kettle",
  "lamp",
  "chair",
  "desk",
  "backpack",
  "blender",
  "toaster",
  "speaker",
  "drill",
  "mug",
  "bottle",
  "jacket"
]
const materials = ["steel", "oak", "bamboo", "glass", "copper", "wool", "leather", "marble"]
const row = (i: number) => ({
  default_id: `p${i}`,
  name: `${materials[i % materials.length]} ${nouns[(i * 7) % nouns.length]} ${i}`,
  description: `model ${i % 97} in ${materials[(i * 3) % materials.length]}, series ${Math.floor(i / 13)}`
})
const batch = (from: number, n: number) => Array.from({ length: n }, (_, j) => row(from + j))

const suspensions = Metric.value(graphSuspensions).pipe(Effect.map((s) => s.count))
const builds = Metric.value(graphBuilds).pipe(Effect.map((s) => s.count))

/** The graph in the catalog: absent, or whether it is valid, and its definition. */
const graph = sqlRows<{ valid: boolean; definition: string }>`
  select i.indisvalid as valid, pg_get_indexdef(i.indexrelid) as definition
  from pg_index i where i.indexrelid = to_regclass(${GRAPH_INDEX})`.pipe(Effect.map((rows) => rows[0]))

const QUERY = "oak desk in copper"

/** The exact top 5 by cosine distance, index scans off. */
const exactTop = (tableId: number) =>
  sqlRows<{ default_id: string }>`
    select default_id from knowledge_points where knowledge_table_id = ${tableId} and embedding is not null
    order by embedding <=> ${toVector(localEmbedding(QUERY))}::vector, id limit 5`.pipe(
    Effect.map((rows) => rows.map((r) => r.default_id))
  )

layer(TestServerLive(), { excludeTestServices: true, timeout: 120_000 })("a large knowledge load", (it) => {
  it.effect(
    "runs without the HNSW graph, searches exactly meanwhile, and the graph is built once writes pause",
    () =>
      Effect.gen(function*() {
        const alice = yield* seedUser()
        const table = ok(yield* post(alice, TABLES, products), "knowledge.create")
        yield* sqlRows`update workspaces set training_credits = 10000 where id = ${alice.workspace_id}`
        const points = `${TABLES}/${table.id}/points`
        const suspended = yield* suspensions
        const built = yield* builds
        expect((yield* graph)?.valid).toBe(true)

        // 3 × 500 rows: the second batch makes the load 1,000 rows, more than half the table
        for (let b = 0; b < 3; b++) {
          expect(ok(yield* put(alice, points, { points: batch(b * 500, 500) }), "knowledge.upsert")).toEqual({
            upserted: 500
          })
        }
        expect(yield* suspensions).toBe(suspended + 1)

        // a search while the graph is absent (no build between the look at the catalog and the answer) is exact
        const absent = (yield* graph) === undefined
        const during = ok(
          yield* post(alice, `${TABLES}/${table.id}/search`, { query: QUERY, limit: 5, use_hybrid: false }),
          "knowledge.search"
        )
        const exact = yield* exactTop(table.id)
        expect(exact).toHaveLength(5)
        if (absent && (yield* builds) === built) {
          expect(during.results.map((r) => r.default_id)).toEqual(exact)
        }
        const hybrid = ok(
          yield* post(alice, `${TABLES}/${table.id}/search`, { query: "p1234 copper", limit: 5, use_hybrid: true }),
          "knowledge.search"
        )
        expect(hybrid.results.length).toBe(5)

        // the keeper builds the graph once the writes pause, as migration 0015 defined it
        // (counted once the build and the ANALYZE after it are done; the index is valid a little earlier)
        yield* builds.pipe(
          Effect.repeat({ schedule: Schedule.spaced(Duration.millis(200)), until: (n) => n === built + 1 }),
          Effect.timeout(Duration.minutes(2))
        )
        const rebuilt = yield* graph
        expect(rebuilt?.valid).toBe(true)
        expect(rebuilt?.definition).toMatch(/USING hnsw \(embedding vector_cosine_ops\) WITH \(ef_construction='128'\)/)
        expect(yield* builds).toBe(built + 1)
        const after = ok(
          yield* post(alice, `${TABLES}/${table.id}/search`, { query: QUERY, limit: 5, use_hybrid: false }),
          "knowledge.search"
        )
        expect(after.results.map((r) => r.default_id)).toEqual(exact)

        // a small upsert into the loaded table (after the pause): into the graph, which stays
        expect(ok(yield* put(alice, points, { points: batch(1500, 100) }), "knowledge.upsert")).toEqual({
          upserted: 100
        })
        expect(yield* suspensions).toBe(suspended + 1)
        expect((yield* graph)?.valid).toBe(true)
        const [{ n }] = (yield* sqlRows<{ n: number }>`
        select count(*)::int as n from knowledge_points where knowledge_table_id = ${table.id}`) as [{ n: number }]
        expect(n).toBe(1600)
      }),
    240_000
  )
})
