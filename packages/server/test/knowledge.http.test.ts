import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { failure, type Success } from "./support/Contract.js"
import {
  type Caller,
  createPipeline,
  expect422,
  expectStatus,
  get,
  ok,
  post,
  put,
  sqlRows
} from "./support/Opportunities.js"
import { call, seedUser, TestServerLive, tokenFor } from "./support/TestServer.js"

const TABLES = "/api/user/knowledge-tables"
const pointsPath = (id: number) => `${TABLES}/${id}/points`

const products = {
  name: "Products",
  description: "The catalogue",
  columns: [
    { name: "name", data_type: "string", order: 1, is_searchable: true },
    { name: "sku", data_type: "string", order: 2, is_searchable: true, is_unique: true, is_filterable: true },
    { name: "price", data_type: "number", order: 3 }
  ]
}

const remove = (who: Caller, id: number, body: unknown) =>
  call(pointsPath(id), { method: "DELETE", token: who.token, body })

const giveCredits = (workspaceId: number, credits = 1000) =>
  sqlRows`update workspaces set training_credits = ${credits} where id = ${workspaceId}`

/** A user with a products table and credits. */
const fixture = (credits = 1000) =>
  Effect.gen(function*() {
    const alice = yield* seedUser()
    const table = ok(yield* post(alice, TABLES, products), "knowledge.create")
    yield* giveCredits(alice.workspace_id, credits)
    return { alice, table }
  })

const row = (i: number) => ({
  default_id: `p${i}`,
  name: `Stainless steel hex bolt ${i}`,
  sku: `SKU-${4450 + i}-B`,
  price: 1 + i
})

layer(TestServerLive())("knowledge tables over REST", (it) => {
  it.effect("create a table, list it with its columns, read the columns", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const created = yield* post(alice, TABLES, products)
      expect(created.status).toBe(200)
      expect(created.body).toMatchObject({
        status: true,
        code: 200,
        validation: [],
        message: "Knowledge table created successfully."
      })
      const table = ok(created, "knowledge.create")
      expect(table).toMatchObject({
        name: "Products",
        workspace_id: alice.workspace_id,
        columns_count: 3,
        points_count: 0,
        pipeline_ids: []
      })
      expect(table.columns.map((c) => [c.name, c.data_type, c.is_searchable, c.is_unique, c.is_filterable]))
        .toEqual([
          ["name", "string", true, false, false],
          ["sku", "string", true, true, true],
          ["price", "number", false, false, false]
        ])
      const list = ok(yield* get(alice, TABLES), "knowledge.list")
      expect(list).toEqual([table])
      expect(ok(yield* get(alice, `${TABLES}/${table.id}/columns`), "knowledge.columns")).toEqual(table.columns)
      expect422(yield* post(alice, TABLES, products), ["name"])
      expect422(yield* post(alice, TABLES, { name: "Empty", columns: [] }), ["columns"])
    }))

  it.effect("upsert creates, then updates in place by default_id (integer default_id accepted); no validation key", () =>
    Effect.gen(function*() {
      const { alice, table } = yield* fixture()
      const first = yield* put(alice, pointsPath(table.id), {
        points: [{ default_id: 1, name: "Blue kettle", sku: "K-1", price: 20 }, {
          default_id: "two",
          name: "Red kettle",
          sku: "K-2"
        }]
      })
      expect(first.status).toBe(200)
      expect(first.body).toEqual({
        status: true,
        code: 200,
        message: "Points upserted successfully.",
        data: { upserted: 2 }
      })
      expect(first.body).not.toHaveProperty("validation")
      const second = yield* put(alice, pointsPath(table.id), { points: [{ default_id: 1, price: 25 }] })
      expect(ok(second, "knowledge.upsert")).toEqual({ upserted: 1 })
      const page = ok(yield* get(alice, pointsPath(table.id)), "knowledge.points")
      expect(page.count).toBe(2)
      expect(page.user_id).toBe(alice.user_id)
      expect(page.source_id).toBe(table.id)
      expect(page.next_page_offset).toBeNull()
      const one = page.records.find((r) => r.default_id === "1")
      expect(one!.data).toEqual({ name: "Blue kettle", sku: "K-1", price: 25 })
      expect(ok(yield* get(alice, TABLES), "knowledge.list")[0]!.points_count).toBe(2)
      // the update changed no searchable text: only the two creations were charged
      const [ws] = yield* sqlRows<
        { c: number }
      >`select training_credits::float8 as c from workspaces where id = ${alice.workspace_id}`
      expect(Number(ws!.c)).toBe(998)
    }))

  it.effect("a wrong type, a duplicate unique value, a missing default_id and an empty points are 422", () =>
    Effect.gen(function*() {
      const { alice, table } = yield* fixture()
      ok(
        yield* put(alice, pointsPath(table.id), { points: [{ default_id: "a", name: "A", sku: "SKU-1" }] }),
        "knowledge.upsert"
      )
      const wrongType = yield* put(alice, pointsPath(table.id), {
        points: [{ default_id: "b", name: "B" }, { default_id: "c", price: "cheap" }]
      })
      expect422(wrongType, ["points.1.price"])
      expect(failure(wrongType).validation[0]!.message).toContain("must be a number")
      const taken = yield* put(alice, pointsPath(table.id), { points: [{ default_id: "b", name: "B", sku: "SKU-1" }] })
      expect422(taken, ["points.0.sku"])
      expect(failure(taken).validation[0]!.message).toContain("default_id a")
      const twice = yield* put(alice, pointsPath(table.id), {
        points: [{ default_id: "b", sku: "SKU-9" }, { default_id: "c", sku: "SKU-9" }]
      })
      expect422(twice, ["points.1.sku"])
      expect(failure(twice).validation[0]!.message).toContain("points.0")
      expect422(yield* put(alice, pointsPath(table.id), { points: [{ name: "no id" }] }), ["points.0.default_id"])
      expect422(yield* put(alice, pointsPath(table.id), { points: [] }), ["points"])
      expect(ok(yield* get(alice, pointsPath(table.id)), "knowledge.points").count).toBe(1)
    }))

  it.effect("without training credits an upsert is 422 on points and stores nothing", () =>
    Effect.gen(function*() {
      const { alice, table } = yield* fixture(0)
      const r = yield* put(alice, pointsPath(table.id), { points: [row(1)] })
      expect422(r, ["points"])
      expect(failure(r).validation[0]!.message).toContain("training credits")
      expect(ok(yield* get(alice, pointsPath(table.id)), "knowledge.points").count).toBe(0)
    }))

  it.effect("cursor pagination visits every row exactly once and ends with null; delete by ids", () =>
    Effect.gen(function*() {
      const { alice, table } = yield* fixture()
      ok(
        yield* put(alice, pointsPath(table.id), { points: Array.from({ length: 10 }, (_, i) => row(i)) }),
        "knowledge.upsert"
      )
      const seen: Array<string> = []
      let cursor: string | null = null
      let pages = 0
      do {
        const q: string = cursor === null ? "?per_page=3" : `?per_page=3&next_page_offset=${cursor}`
        const page: Success<"knowledge.points"> = ok(yield* get(alice, pointsPath(table.id) + q), "knowledge.points")
        expect(page.count).toBe(page.records.length)
        expect(page.count).toBeLessThanOrEqual(3)
        seen.push(...page.records.map((r) => r.default_id))
        cursor = page.next_page_offset
        pages++
      } while (cursor !== null && pages < 10)
      expect(cursor).toBeNull()
      expect(pages).toBe(4)
      expect([...seen].sort()).toEqual(Array.from({ length: 10 }, (_, i) => `p${i}`).sort())
      expect(new Set(seen).size).toBe(10)
      expect422(yield* get(alice, pointsPath(table.id) + "?per_page=0"), ["per_page"])

      const deleted = yield* remove(alice, table.id, { ids: ["p1", "p2", "nope"] })
      expect(deleted.status).toBe(200)
      expect(deleted.body).toEqual({
        status: true,
        code: 200,
        message: "Points deleted successfully.",
        data: { deleted: 2 }
      })
      expect(ok(yield* get(alice, pointsPath(table.id) + "?per_page=100"), "knowledge.points").count).toBe(8)
      expect422(yield* remove(alice, table.id, { ids: [] }), ["ids"])
    }))

  it.effect("another workspace's table answers 404 on every endpoint; a missing scope is 403", () =>
    Effect.gen(function*() {
      const { alice, table } = yield* fixture()
      const bob = yield* seedUser()
      const notFound = { status: false, code: 404, validation: [], message: "Knowledge table not found." }
      for (
        const r of [
          yield* get(bob, `${TABLES}/${table.id}/columns`),
          yield* get(bob, pointsPath(table.id)),
          yield* put(bob, pointsPath(table.id), { points: [row(1)] }),
          yield* remove(bob, table.id, { ids: ["p1"] }),
          yield* post(bob, `${TABLES}/${table.id}/search`, { query: "bolt" }),
          yield* get(bob, `${TABLES}/987654321/columns`)
        ]
      ) {
        expect(r.status).toBe(404)
        expect(r.body).toMatchObject(notFound)
      }
      expect(ok(yield* get(bob, TABLES), "knowledge.list")).toEqual([])

      const readOnly = { token: (yield* tokenFor(alice.email, ["knowledge:read"])).token }
      expectStatus(yield* put(readOnly, pointsPath(table.id), { points: [row(1)] }), 403)
      expectStatus(yield* remove(readOnly, table.id, { ids: ["p1"] }), 403)
      expectStatus(yield* post(readOnly, TABLES, { ...products, name: "Other" }), 403)
      ok(yield* get(readOnly, TABLES), "knowledge.list")
      const noKnowledge = { token: (yield* tokenFor(alice.email, ["pipelines:read"])).token }
      expectStatus(yield* get(noKnowledge, TABLES), 403)
      expectStatus(yield* get(noKnowledge, pointsPath(table.id)), 403)
      expectStatus(yield* post(noKnowledge, `${TABLES}/${table.id}/search`, { query: "bolt" }), 403)
    }))

  it.effect("hybrid search puts an exact product code first among similar rows; vector search scores by cosine", () =>
    Effect.gen(function*() {
      const { alice, table } = yield* fixture()
      ok(
        yield* put(alice, pointsPath(table.id), { points: Array.from({ length: 30 }, (_, i) => row(i)) }),
        "knowledge.upsert"
      )
      const hybrid = ok(yield* post(alice, `${TABLES}/${table.id}/search`, { query: "SKU-4471-B" }), "knowledge.search")
      expect(hybrid.mode).toBe("hybrid")
      expect(hybrid.results[0]).toMatchObject({ default_id: "p21", data: { sku: "SKU-4471-B" } })
      expect(hybrid.point_ids).toEqual(hybrid.results.map((r) => r.point_id))
      expect(hybrid.results.length).toBe(5)

      const vector = ok(
        yield* post(alice, `${TABLES}/${table.id}/search`, {
          query: "stainless steel hex bolt",
          use_hybrid: false,
          limit: 10
        }),
        "knowledge.search"
      )
      expect(vector.mode).toBe("vector")
      expect(vector.results.length).toBe(10)
      const scores = vector.results.map((r) => r.score)
      for (const s of scores) {
        expect(s).toBeGreaterThan(0)
        expect(s).toBeLessThanOrEqual(1.000001)
      }
      expect([...scores].sort((a, b) => b - a)).toEqual(scores)

      const filtered = ok(
        yield* post(alice, `${TABLES}/${table.id}/search`, { query: "bolt", filters: { sku: "SKU-4455-B" } }),
        "knowledge.search"
      )
      expect(filtered.results.map((r) => r.default_id)).toEqual(["p5"])
      expect422(yield* post(alice, `${TABLES}/${table.id}/search`, { query: "bolt", filters: { price: 3 } }), [
        "filters.price"
      ])
      expect422(yield* post(alice, `${TABLES}/${table.id}/search`, { query: "" }), ["query"])
    }))

  it.effect("hybrid search finds the one row with every query word when each word alone matches many rows, and falls back to each word", () =>
    Effect.gen(function*() {
      const { alice, table } = yield* fixture()
      const filler = "delivered in a sturdy box with a printed manual a spare seal a cleaning brush and a two year " +
        "warranty card covering parts labour and shipping to any address in the country within ten working days"
      // 60 rows with "steel", 60 with "kettle", each in long text (far from the query as vectors), and 40 short
      // rows that are near it as vectors but share no word with it ("steels kettles")
      ok(
        yield* put(alice, pointsPath(table.id), {
          points: [
            ...Array.from(
              { length: 60 },
              (_, i) => ({ default_id: `s${i}`, name: `steel ${filler} ${i}`, sku: `S-${i}` })
            ),
            ...Array.from(
              { length: 60 },
              (_, i) => ({ default_id: `k${i}`, name: `kettle ${filler} ${i}`, sku: `K-${i}` })
            ),
            ...Array.from(
              { length: 40 },
              (_, i) => ({ default_id: `n${i}`, name: `steels kettles ${i}`, sku: `N-${i}` })
            )
          ]
        }),
        "knowledge.upsert"
      )
      // stored after them all, so neither word's first rows include it
      ok(
        yield* put(alice, pointsPath(table.id), {
          points: [{ default_id: "target", name: `steel kettle ${filler}`, sku: "T-1" }]
        }),
        "knowledge.upsert"
      )
      const hybrid = ok(
        yield* post(alice, `${TABLES}/${table.id}/search`, { query: "steel kettle" }),
        "knowledge.search"
      )
      expect(hybrid.results[0]).toMatchObject({ default_id: "target" })
      const vector = ok(
        yield* post(alice, `${TABLES}/${table.id}/search`, { query: "steel kettle", use_hybrid: false }),
        "knowledge.search"
      )
      expect(vector.results.map((r) => r.default_id)).not.toContain("target")

      // no row has every word (a typo): each word still brings its own rows
      const typo = ok(yield* post(alice, `${TABLES}/${table.id}/search`, { query: "T-1 kettel" }), "knowledge.search")
      expect(typo.results[0]).toMatchObject({ default_id: "target" })
    }))

  it.effect("PUT pipeline attaches and detaches tables; a foreign table id is 422 and changes nothing", () =>
    Effect.gen(function*() {
      const { alice, table } = yield* fixture()
      const bob = yield* seedUser()
      const bobs = ok(yield* post(bob, TABLES, products), "knowledge.create")
      const p = yield* createPipeline(alice, "With knowledge")
      ok(
        yield* put(alice, `/api/user/pipelines/${p.id}`, { attach_knowledge_table_ids: [table.id] }),
        "pipelines.update"
      )
      expect(ok(yield* get(alice, TABLES), "knowledge.list")[0]!.pipeline_ids).toEqual([p.id])
      // attaching twice is harmless
      ok(
        yield* put(alice, `/api/user/pipelines/${p.id}`, { attach_knowledge_table_ids: [table.id] }),
        "pipelines.update"
      )
      expect(ok(yield* get(alice, TABLES), "knowledge.list")[0]!.pipeline_ids).toEqual([p.id])

      const foreign = yield* put(alice, `/api/user/pipelines/${p.id}`, {
        name: "Renamed",
        attach_knowledge_table_ids: [bobs.id]
      })
      expect422(foreign, ["attach_knowledge_table_ids.0"])
      expect(ok(yield* get(alice, `/api/user/pipelines/${p.id}`), "pipelines.get").name).toBe("With knowledge")
      expect(ok(yield* get(bob, TABLES), "knowledge.list")[0]!.pipeline_ids).toEqual([])
      expect422(yield* put(alice, `/api/user/pipelines/${p.id}`, { attach_knowledge_table_ids: [0] }), [
        "attach_knowledge_table_ids.0"
      ])

      ok(
        yield* put(alice, `/api/user/pipelines/${p.id}`, { detach_knowledge_table_ids: [table.id] }),
        "pipelines.update"
      )
      expect(ok(yield* get(alice, TABLES), "knowledge.list")[0]!.pipeline_ids).toEqual([])
    }))
})
