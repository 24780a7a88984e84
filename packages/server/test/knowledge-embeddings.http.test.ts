/**
 * Issue 40: a knowledge table embeds with a provider's embedding model, through the real server and a local model
 * server (FakeModelServer: OpenAI's `/v1/embeddings`, Gemini's `:batchEmbedContents`). Switching a table's model
 * re-embeds its points in the background (a provider failure pauses it, recorded, and it resumes), search keeps
 * finding the same rows before, during and after; models another workspace owns, or without the `embeddings`
 * capability, are refused.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber, Layer, Ref } from "effect"
import { type FakeModelServer, fakeModelServer } from "./support/FakeModelServer.js"
import { type Caller, del, expect422, get, ok, post, put } from "./support/Opportunities.js"
import { giveCredits, seedUser, TestServerLive } from "./support/TestServer.js"
import { eventually } from "./support/WebhookReceiver.js"

const KEY = "sk-embed-secret-4711"
const GEMINI_KEY = "gm-embed-key-1"
const DIMENSIONS = 96
const TABLES = "/api/user/knowledge-tables"
let fake: FakeModelServer

const Server = Layer.unwrapScoped(Effect.map(
  fakeModelServer({ apiKey: KEY, geminiKey: GEMINI_KEY, dimensions: DIMENSIONS }),
  (f) => {
    fake = f
    return TestServerLive({ KNOWLEDGE_REEMBED_POLL_MS: "100", KNOWLEDGE_REEMBED_RETRY_MS: "300" })
  }
))

/** Words each used by one point only, so every query has one right answer. */
const WORDS = ("apple banana cherry walnut mango papaya quince lemon melon olive peach pear plum grape fig kiwi lime " +
  "guava date orange").split(" ")
const POINTS = 150
const point = (i: number) => ({
  default_id: `p${i}`,
  name: `${WORDS[i % WORDS.length]} crate number ${i}`,
  note: `batch ${Math.floor(i / WORDS.length)}`
})

const embeddingModel = (who: Caller, body: Record<string, unknown>) =>
  Effect.gen(function*() {
    const provider = ok(
      yield* post(who, "/api/user/ai-providers", {
        kind: "openai_compatible",
        name: `Embeddings ${Math.random().toString(36).slice(2, 8)}`,
        base_url: fake.openAiUrl,
        api_key: KEY,
        skip_check: true
      }),
      "aiModels.createProvider"
    )
    return ok(
      yield* post(who, "/api/user/ai-models", {
        ai_provider_id: provider.id,
        model: "fake-embed",
        name: "Fake embeddings",
        capabilities: ["embeddings"],
        ...body
      }),
      "aiModels.createModel"
    )
  })

const newTable = (who: Caller, body: Record<string, unknown> = {}) =>
  Effect.map(
    post(who, TABLES, {
      name: `Crates ${Math.random().toString(36).slice(2, 8)}`,
      columns: [
        { name: "name", data_type: "string", order: 1, is_searchable: true },
        { name: "note", data_type: "string", order: 2 }
      ],
      ...body
    }),
    (r) => ok(r, "knowledge.create")
  )

/** The default_ids a search finds. */
const found = (who: Caller, tableId: number, query: string, hybrid: boolean) =>
  Effect.map(
    post(who, `${TABLES}/${tableId}/search`, { query, use_hybrid: hybrid, limit: 5 }),
    (r) => ok(r, "knowledge.search").results.map((h) => h.default_id)
  )

/** Each of the first words' queries finds its point, by vector alone and hybrid; the failures, as text. */
const misses = (who: Caller, tableId: number) =>
  Effect.map(
    Effect.forEach(WORDS.slice(0, 5), (word, i) =>
      Effect.gen(function*() {
        const query = `${word} crate number ${i}`
        const hybrid = yield* found(who, tableId, query, true)
        const vector = yield* found(who, tableId, query, false)
        return [
          ...(hybrid.includes(`p${i}`) ? [] : [`hybrid "${query}": ${hybrid.join(",")}`]),
          ...(vector.includes(`p${i}`) ? [] : [`vector "${query}": ${vector.join(",")}`])
        ]
      })),
    (all) => all.flat()
  )

const tableOf = (who: Caller, id: number) => Effect.map(get(who, `${TABLES}/${id}`), (r) => ok(r, "knowledge.get"))

layer(Server, { excludeTestServices: true })("knowledge tables on a provider's embedding model", (it) => {
  it.effect(
    "switching a table's model re-embeds in the background; search finds the same rows throughout",
    () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        yield* giveCredits(owner.workspace_id, { training_credits: 1000 })
        const model = yield* embeddingModel(owner, {})
        const table = yield* newTable(owner)
        expect(table).toMatchObject({ embedding_model_id: null, embedding_dimensions: 256, reembedding: null })
        ok(
          yield* put(owner, `${TABLES}/${table.id}/points`, {
            points: Array.from({ length: POINTS }, (_, i) => point(i))
          }),
          "knowledge.upsert"
        )
        expect(yield* misses(owner, table.id)).toEqual([])

        // searching all along, from before the switch until after it completed
        const problems = yield* Ref.make<Array<string>>([])
        const searches = yield* Ref.make(0)
        const searching = yield* Effect.forever(
          Effect.gen(function*() {
            const missed = yield* misses(owner, table.id)
            yield* Ref.update(problems, (p) => [...p, ...missed])
            yield* Ref.update(searches, (n) => n + 1)
          })
        ).pipe(Effect.fork)

        // the provider fails the first batch: the re-embedding pauses, says why, and resumes
        fake.failNext({ kind: "status", status: 503 }, { times: 2, path: "/embeddings" })
        fake.latencyMs = 100
        const switched = ok(
          yield* put(owner, `${TABLES}/${table.id}`, { embedding_model_id: model.id }),
          "knowledge.update"
        )
        expect(switched.embedding_model_id).toBeNull()
        expect(switched.reembedding).toMatchObject({ model_id: model.id, total: POINTS })
        const paused = yield* eventually(
          Effect.map(tableOf(owner, table.id), (t) => t.reembedding?.last_error != null ? t : undefined)
        )
        expect(paused.embedding_model_id).toBeNull()
        expect(paused.reembedding!.last_error).toMatch(/503/)
        expect(paused.reembedding!.last_error).not.toContain(KEY)
        // a point upserted meanwhile: embedded by the old model for now, by the new one too (or by the re-embedding)
        ok(
          yield* put(owner, `${TABLES}/${table.id}/points`, { points: [{ default_id: "mid", name: "rhubarb crate" }] }),
          "knowledge.upsert"
        )
        expect(yield* found(owner, table.id, "rhubarb crate", false)).toContain("mid")
        const done = yield* eventually(
          Effect.map(tableOf(owner, table.id), (t) => {
            expect(t.reembedding === null || t.reembedding.done <= t.reembedding.total).toBe(true)
            return t.reembedding === null ? t : undefined
          }),
          15_000
        )
        expect(done).toMatchObject({
          embedding_model_id: model.id,
          embedding_dimensions: DIMENSIONS,
          points_count: POINTS + 1
        })
        expect(yield* found(owner, table.id, "rhubarb crate", false)).toContain("mid")
        fake.latencyMs = 0
        // a few searches on the new vectors, then the loop stops
        const after = yield* Ref.get(searches)
        yield* eventually(Effect.map(Ref.get(searches), (n) => n >= after + 2))
        yield* Fiber.interrupt(searching)
        expect(yield* Ref.get(problems)).toEqual([])
        expect(yield* Ref.get(searches)).toBeGreaterThan(2)

        // the provider was asked with the key, for every point and the queries since
        const embedded = fake.requests.filter((r) => r.path === "/v1/embeddings")
        expect(embedded.every((r) => r.headers.authorization === `Bearer ${KEY}`)).toBe(true)
        expect(embedded.flatMap((r) => (r.body as { input: Array<string> }).input).length).toBeGreaterThan(POINTS)

        // a point upserted now is embedded by the table's model; search finds it by its words
        ok(
          yield* put(owner, `${TABLES}/${table.id}/points`, {
            points: [{ default_id: "new", name: "zucchini crate" }]
          }),
          "knowledge.upsert"
        )
        expect(yield* found(owner, table.id, "zucchini crate", false)).toContain("new")
        expect(yield* misses(owner, table.id)).toEqual([])

        // and back to the server's embedder
        ok(yield* put(owner, `${TABLES}/${table.id}`, { embedding_model_id: null }), "knowledge.update")
        const back = yield* eventually(
          Effect.map(tableOf(owner, table.id), (t) => t.reembedding === null ? t : undefined),
          15_000
        )
        expect(back).toMatchObject({ embedding_model_id: null, embedding_dimensions: 256 })
        expect(yield* misses(owner, table.id)).toEqual([])
      }),
    { timeout: 30_000 }
  )

  it.effect("a table created on a Gemini embedding model embeds through batchEmbedContents", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id, { training_credits: 100 })
      const provider = ok(
        yield* post(owner, "/api/user/ai-providers", {
          kind: "google",
          name: "Gemini",
          base_url: fake.geminiUrl,
          api_key: GEMINI_KEY,
          skip_check: true
        }),
        "aiModels.createProvider"
      )
      const model = ok(
        yield* post(owner, "/api/user/ai-models", {
          ai_provider_id: provider.id,
          model: "text-embedding-004",
          name: "Gemini embeddings",
          capabilities: ["embeddings"]
        }),
        "aiModels.createModel"
      )
      const table = yield* newTable(owner, { embedding_model_id: model.id })
      expect(table).toMatchObject({ embedding_model_id: model.id, embedding_dimensions: null, reembedding: null })
      ok(
        yield* put(owner, `${TABLES}/${table.id}/points`, { points: Array.from({ length: 10 }, (_, i) => point(i)) }),
        "knowledge.upsert"
      )
      expect(yield* tableOf(owner, table.id)).toMatchObject({ embedding_dimensions: DIMENSIONS })
      expect(yield* misses(owner, table.id)).toEqual([])
      const calls = fake.requests.filter((r) => r.path.endsWith("/text-embedding-004:batchEmbedContents"))
      expect(calls.length).toBeGreaterThan(0)
      expect(calls.every((r) => r.headers["x-goog-api-key"] === GEMINI_KEY)).toBe(true)
      // the table's model is in use: neither it nor its provider is deleted, and the answer names the table
      const inUse = yield* del(owner, `/api/user/ai-models/${model.id}`)
      expect(inUse.status).toBe(409)
      expect((inUse.body as { message: string }).message).toContain(`knowledge tables: ${table.name} (#${table.id})`)
      expect((yield* del(owner, `/api/user/ai-providers/${model.ai_provider_id}`)).status).toBe(409)
    }))

  it.effect("another workspace's model, or one without the embeddings capability, is a 422", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const other = yield* seedUser()
      const theirs = yield* embeddingModel(other, {})
      const chat = yield* embeddingModel(owner, { model: "fake-chat", name: "Chat", capabilities: ["tools"] })
      const table = yield* newTable(owner)
      for (const id of [theirs.id, chat.id]) {
        expect422(
          yield* post(owner, TABLES, {
            name: "Refused",
            columns: [{ name: "a", data_type: "string", order: 1, is_searchable: true }],
            embedding_model_id: id
          }),
          ["embedding_model_id"]
        )
        expect422(yield* put(owner, `${TABLES}/${table.id}`, { embedding_model_id: id }), ["embedding_model_id"])
      }
      expect(yield* tableOf(owner, table.id)).toMatchObject({ embedding_model_id: null, reembedding: null })
    }))
})
