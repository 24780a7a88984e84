/**
 * Changing the embedding model: points embedded by the local model are embedded again in the background
 * when the server restarts with OpenAI embeddings (a local fake of `POST /v1/embeddings`), without
 * charging the workspace; a further restart with the same model embeds nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import {
  call,
  type ChildDatabase,
  childDatabase,
  type Running,
  serve,
  startReceiver,
  stop,
  until
} from "./support/ChildServer.js"
import { ok } from "./support/Contract.js"

/** One-hot by a word the text contains ("alpha" → 0, "beta" → 1, ...): exact and easy to tell apart. */
const words = ["alpha", "beta", "gamma", "delta"]
const fakeVector = (text: string) => {
  const v = new Array<number>(256).fill(0)
  const i = words.findIndex((w) => text.toLowerCase().includes(w))
  v[i < 0 ? 255 : i] = 1
  return v
}

/** The points and the embedding state, read with the server stopped. */
const pointsOf = async (database: ChildDatabase) => {
  const points = await database.query<{ default_id: string; embedding_model: string; embedding: string }>(
    "select default_id, embedding_model, embedding::text as embedding from knowledge_points order by default_id"
  )
  const state = await database.query<{ model: string }>("select model from knowledge_embedding_state")
  return { points, state: state.map((r) => r.model) }
}

describe("re-embedding after an embedding model change", () => {
  it(
    "embeds every point again with the new model in the background, once, free of charge",
    { timeout: 120_000 },
    async () => {
      const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-reembed-"))
      const database = await childDatabase(dataDir)
      const inputs: Array<string> = []
      const openai = await startReceiver((rawBody) => {
        const body = JSON.parse(rawBody) as { input: Array<string> | string; model: string; dimensions: number }
        const input = Array.isArray(body.input) ? body.input : [body.input]
        inputs.push(...input)
        return {
          status: 200,
          body: JSON.stringify({
            object: "list",
            model: body.model,
            data: input.map((text, index) => ({ object: "embedding", index, embedding: fakeVector(text) })),
            usage: { prompt_tokens: input.length, total_tokens: input.length }
          })
        }
      })
      const openAiEnv = {
        ...database.env,
        EMBEDDING_PROVIDER: "openai",
        EMBEDDING_MODEL: "text-embedding-3-small",
        OPENAI_API_KEY: "sk-test",
        OPENAI_BASE_URL: openai.url.replace(/\/hook$/, "/v1")
      }
      let server: Running | undefined
      try {
        server = await serve(dataDir, database.env)
        const { token, workspace_id } = JSON.parse(
          Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8")
        ) as { token: string; workspace_id: number }
        const table = await call(`${server.api}/api/user/knowledge-tables`, {
          token,
          method: "POST",
          json: {
            name: "Greek",
            columns: [{ name: "word", data_type: "string", order: 1, is_searchable: true }]
          }
        })
        expect(table.status).toBe(200)
        const tableId = ok(table, "knowledge.create").id
        const upsert = await call(`${server.api}/api/user/knowledge-tables/${tableId}/points`, {
          token,
          method: "PUT",
          json: { points: words.map((word, i) => ({ default_id: i + 1, word })) }
        })
        expect(ok(upsert, "knowledge.upsert")).toEqual({ upserted: 4 })
        const credits = async (s: Running) =>
          ok(await call(`${s.api}/api/user/me`, { token }), "account.me").workspaces.find((w) => w.id === workspace_id)!
            .training_credits
        const creditsBefore = await credits(server)
        await stop(server)
        server = undefined

        // the Greek words, and the demo's own knowledge ("About Parley") beside them
        const local = await pointsOf(database)
        expect(local.points.filter((p) => /^\d+$/.test(p.default_id))).toHaveLength(4)
        expect(local.points.map((p) => p.embedding_model)).toEqual(Array(local.points.length).fill("local-hash-256"))
        expect(local.state).toEqual(["local-hash-256"])

        // the new model: every point is embedded again from its searchable text
        server = await serve(dataDir, openAiEnv)
        await until("re-embedding", () => (inputs.length >= local.points.length ? true : undefined), 30_000).catch(
          (e) => {
            throw new Error(`${e}\n${server?.output()}`)
          }
        )
        expect(inputs).toHaveLength(local.points.length)
        expect(inputs.filter((i) => i.startsWith("word: ")).sort()).toEqual(words.map((w) => `word: ${w}`).sort())
        const search = await call(`${server.api}/api/user/knowledge-tables/${tableId}/search`, {
          token,
          method: "POST",
          json: { query: "gamma", use_hybrid: false, limit: 2 }
        })
        expect(search.status).toBe(200)
        expect(ok(search, "knowledge.search").results[0]).toMatchObject({ default_id: "3", score: 1 })
        expect(await credits(server)).toBe(creditsBefore)
        await stop(server)
        server = undefined

        const remote = await pointsOf(database)
        expect(remote.points.map((p) => p.embedding_model)).toEqual(
          Array(local.points.length).fill("openai:text-embedding-3-small:256")
        )
        const greek = remote.points.filter((p) => /^\d+$/.test(p.default_id))
        expect(greek.map((p) => JSON.parse(p.embedding).indexOf(1))).toEqual([0, 1, 2, 3])
        expect(remote.state).toEqual(["openai:text-embedding-3-small:256"])

        // same model again: nothing to embed
        inputs.length = 0
        server = await serve(dataDir, openAiEnv)
        await new Promise((r) => setTimeout(r, 1500))
        expect(inputs).toEqual([])
      } finally {
        await stop(server)
        await openai.close()
        await database.drop()
        Fs.rmSync(dataDir, { recursive: true, force: true })
      }
    }
  )
})
