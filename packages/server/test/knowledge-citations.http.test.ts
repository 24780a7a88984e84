/**
 * Citations (issue 41) through the real server: a document table fed by a real file source and a real page of a
 * local site (TestSite), a hand-written point beside them, a pipeline whose model is a local OpenAI-compatible
 * server (FakeModelServer) given the retrieved knowledge. The reply records the points it was given; with
 * `cite_sources` its text ends with the sources' links (never the hand-written point), without it it does not; the
 * model never reads the links back; another workspace sees none of it.
 */
import { describe, expect, it as plain, layer } from "@effect/vitest"
import { citationOf, withoutSources, withSources } from "@parley/domain"
import { Effect, Layer } from "effect"
import { type FakeModelServer, fakeModelServer } from "./support/FakeModelServer.js"
import { documentColumns, SOURCES_ENV } from "./support/KnowledgeSources.js"
import { mcpClient } from "./support/McpClient.js"
import { type Caller, createStage, get, linkWebChannel, ok, post, put, sqlRows } from "./support/Opportunities.js"
import { fetchJson, giveCredits, seedUser, TestServer, TestServerLive } from "./support/TestServer.js"
import { startTestSite } from "./support/TestSite.js"
import { basic, say } from "./support/WebChat.js"
import { eventually } from "./support/WebhookReceiver.js"

const MODEL = "llama3.1:8b"
const TABLES = "/api/user/knowledge-tables"
let fake: FakeModelServer

const Server = Layer.unwrapScoped(
  Effect.map(fakeModelServer({ models: [MODEL] }), (f) => {
    fake = f
    return TestServerLive(SOURCES_ENV)
  })
)

const returns = `# Returns policy

Returns of a kettle are accepted within thirty days of delivery with the receipt.
`

/** A source once its sync ended. */
const ready = (who: Caller, table: number, source: number) =>
  eventually(Effect.map(get(who, `${TABLES}/${table}/sources/${source}`), (r) => {
    const s = ok(r, "knowledge.source")
    return s.status === "ready" || s.status === "failed" ? s : undefined
  }))

/** The assistant reply a web-chat contact got (the one starting with `text`, when given). */
const replyTo = (channel: { client_id: string; client_secret: string }, contactId: string, text = "") =>
  eventually(
    Effect.flatMap(TestServer, ({ baseUrl }) =>
      fetchJson(`${baseUrl}/api/user/messages/webchat?contact_id=${contactId}&per_page=50`, {
        headers: { authorization: basic(channel), accept: "application/json" }
      })).pipe(
        Effect.map((r) =>
          ok(r, "webChat.history").data.find((m) =>
            m.role === "assistant" && m.message?.startsWith(text) === true
          )
        )
      ),
    20_000
  )

/** The knowledge of the last chat completion request, and what it said of earlier replies. */
const lastPrompt = () => JSON.stringify(fake.requests.filter((r) => r.path === "/v1/chat/completions").at(-1)!.body)

layer(Server, { excludeTestServices: true })("citations", (it) => {
  it.scoped("a reply records the points it used; cite_sources ends it with their sources' links", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const other = yield* seedUser()
      yield* giveCredits(owner.workspace_id, { credits: 5, training_credits: 1_000 })
      const site = yield* Effect.acquireRelease(
        Effect.promise(() => startTestSite()),
        (s) => Effect.promise(() => s.close())
      )
      site.setPage(
        "/kettles",
        `<!doctype html><html><head><title>Kettle care</title></head><body><main><article><h1>Kettle care</h1>
         <p>Descale the kettle every month with white vinegar to keep the warranty valid.</p></article></main></body></html>`
      )

      // the table: a file, a page, and a point written by hand
      const table = ok(yield* post(owner, TABLES, { name: "Help", columns: documentColumns }), "knowledge.create").id
      const form = new FormData()
      form.append("file", new Blob([returns], { type: "text/markdown" }), "returns.md")
      const { baseUrl } = yield* TestServer
      const file = ok(
        yield* fetchJson(`${baseUrl}${TABLES}/${table}/sources`, {
          method: "POST",
          headers: { authorization: `Bearer ${owner.token}`, accept: "application/json" },
          body: form
        }),
        "knowledge.addSource"
      )
      const url = `${site.origin}/kettles`
      const page = ok(yield* post(owner, `${TABLES}/${table}/sources`, { kind: "url", url }), "knowledge.addSource")
      expect((yield* ready(owner, table, file.id)).status).toBe("ready")
      expect((yield* ready(owner, table, page.id)).status).toBe("ready")
      ok(
        yield* put(owner, `${TABLES}/${table}/points`, {
          points: [{ default_id: "note-1", text: "Kettles bought in the outlet store are returned there." }]
        }),
        "knowledge.upsert"
      )

      // the agent: the local model server, knowledge searched for every reply, no citing by default
      const provider = ok(
        yield* post(owner, "/api/user/ai-providers", {
          kind: "openai_compatible",
          name: "Local",
          base_url: fake.openAiUrl
        }),
        "aiModels.createProvider"
      )
      const model = ok(
        yield* post(owner, "/api/user/ai-models", { ai_provider_id: provider.id, model: MODEL, name: "Llama" }),
        "aiModels.createModel"
      )
      const pipeline = ok(
        yield* post(owner, "/api/user/pipelines", {
          name: "Kettles",
          agent_type_id: 1,
          ai_model_id: model.id,
          language_id: 1,
          rag_mode: "hybrid"
        }),
        "pipelines.create"
      )
      expect(pipeline.cite_sources).toBe(false)
      ok(
        yield* put(owner, `/api/user/pipelines/${pipeline.id}`, {
          reply_debounce_ms: 0,
          no_of_relevant_points: 5,
          attach_knowledge_table_ids: [table]
        }),
        "pipelines.update"
      )
      yield* createStage(owner, pipeline.id, "Open", 1)
      const channel = yield* linkWebChannel(owner, pipeline.id)

      const answer = "You can return it within thirty days; descale it monthly."
      fake.script(MODEL, { text: answer })
      yield* say(channel, "ann", "Can I return my kettle, and how do I descale it?")
      const plain = yield* replyTo(channel, "ann")
      expect(plain.message).toBe(answer)
      // the model was given the points
      expect(lastPrompt()).toContain("thirty days of delivery")
      expect(lastPrompt()).toContain("white vinegar")

      // the reply records them: each point's table and id, a source's title, URL or file name
      const [stored] = yield* sqlRows<{ conversation_id: string }>`
        select conversation_id from messages where id = ${plain.id}`
      const conversation = stored!.conversation_id
      const listed = ok(yield* get(owner, `/api/user/conversations/${conversation}/messages`), "conversations.messages")
      const cited = listed.messages.find((m) => m.id === plain.id)!.citations!
      expect(cited.every((c) => c.knowledge_table_id === table)).toBe(true)
      expect(cited).toContainEqual(expect.objectContaining({
        point_id: expect.stringMatching(new RegExp(`^src${file.id}-`)),
        source_id: file.id,
        source: "returns.md"
      }))
      expect(cited).toContainEqual(expect.objectContaining({
        point_id: expect.stringMatching(new RegExp(`^src${page.id}-`)),
        source_id: page.id,
        source: url,
        title: "Kettle care"
      }))
      expect(cited).toContainEqual({
        knowledge_table_id: table,
        point_id: "note-1",
        source_id: null,
        title: null,
        source: null,
        page: null
      })
      // the contact's message carries none
      expect(listed.messages.find((m) => m.role === "user")!.citations).toBeUndefined()

      // another workspace sees neither the conversation nor its citations
      expect((yield* get(other, `/api/user/conversations/${conversation}/messages`)).status).toBe(404)

      // cite_sources on, over MCP: the reply ends with each source once, the hand-written point never
      const client = yield* mcpClient(owner.token)
      const updated = yield* Effect.promise(() =>
        client.callTool({ name: "update_pipeline", arguments: { pipeline_id: pipeline.id, cite_sources: true } })
      )
      expect(updated.isError).not.toBe(true)
      expect(ok(yield* get(owner, `/api/user/pipelines/${pipeline.id}`), "pipelines.get").cite_sources).toBe(true)
      fake.script(MODEL, { text: answer })
      yield* say(channel, "bob", "Can I return my kettle, and how do I descale it?")
      const withLinks = (yield* replyTo(channel, "bob")).message!
      const [reply, footer] = withLinks.split("\n\nSources:\n")
      expect(reply).toBe(answer)
      const lines = footer!.split("\n")
      expect(lines).toContain(`- Kettle care (${url})`)
      expect(lines.filter((l) => l.includes("returns.md"))).toHaveLength(1)
      expect(lines).toHaveLength(2)
      expect(footer).not.toContain("outlet")

      // the next turn: the model reads its earlier reply without the links
      fake.script(MODEL, { text: "Anything else?" })
      yield* say(channel, "bob", "Thanks!")
      yield* replyTo(channel, "bob", "Anything else?")
      expect(lastPrompt()).toContain("descale it monthly.")
      expect(lastPrompt()).not.toContain("Sources:")
    }))
})

describe("sources' lines", () => {
  plain("a file's pages are listed together, a page once, a point written by hand never", () => {
    const cited = [
      citationOf(1, "src4-aa", { title: "Returns\npolicy", source: "returns.pdf", page: 3 }),
      citationOf(1, "src5-bb", { title: "Kettle care", source: "https://help.example.com/kettles" }),
      citationOf(1, "src4-cc", { title: "Returns policy", source: "returns.pdf", page: 2 }),
      citationOf(1, "src5-dd", { title: "Kettle care", source: "https://help.example.com/kettles" }),
      citationOf(1, "note-1", { text: "By hand" })
    ]
    expect(cited[0]).toMatchObject({ source_id: 4, page: 3 })
    expect(cited[4]).toMatchObject({ source_id: null, source: null })
    const reply = withSources("Yes.", cited)
    expect(reply).toBe(
      "Yes.\n\nSources:\n- Returns policy (returns.pdf, pages 2, 3)\n- Kettle care (https://help.example.com/kettles)"
    )
    expect(withoutSources(reply)).toBe("Yes.")
    expect(withSources("Yes.", [cited[4]!])).toBe("Yes.")
  })
})
