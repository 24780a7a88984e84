/**
 * The holes a hostile client found (issue 17), each closed: text Postgres cannot store, integers beyond
 * their columns, loose path ids, bodies without a boundary or over their limit, and a 500 that says
 * which request it was. Every answer is in its listener's envelope.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { ReceiverAnswer, ReceiverRefusal } from "@parley/domain"
import { Cause, Effect, Layer, Logger, Schema } from "effect"
import * as Http from "node:http"
import * as Net from "node:net"
import { bodyAs, failure } from "./support/Contract.js"
import { ToolError } from "./support/McpClient.js"
import {
  count,
  createPipeline,
  createStage,
  expect422,
  funnel,
  get,
  linkWebChannel,
  ok,
  post,
  put
} from "./support/Opportunities.js"
import { call, fetchJson, giveCredits, seedUser, TestServer, TestServerLive } from "./support/TestServer.js"
import { basic, type WebCredentials } from "./support/WebChat.js"

const receive = (auth: string, body: string | FormData, contentType: string | undefined = "application/json") =>
  Effect.flatMap(TestServer, ({ receiverUrl }) =>
    fetchJson(`${receiverUrl}/web-chat/message`, {
      method: "POST",
      headers: {
        authorization: auth,
        ...(contentType === undefined || body instanceof FormData ? {} : { "content-type": contentType })
      },
      body
    }))

/** An MCP `tools/call` answered over JSON-RPC with a refused call's result. */
const RefusedToolCall = Schema.Struct({
  result: Schema.Struct({ isError: Schema.Boolean, structuredContent: ToolError })
})

/** A user with credits, a pipeline with stages and a web channel on it. */
const webAgent = Effect.gen(function*() {
  const owner = yield* seedUser()
  yield* giveCredits(owner.workspace_id)
  const { pipeline } = yield* funnel(owner)
  const channel = yield* linkWebChannel(owner, pipeline.id)
  return { owner, pipeline, channel }
})

/** The conversation a contact's first message opens on `channel`. */
const conversationOf = (channel: WebCredentials, contactId: string) =>
  Effect.gen(function*() {
    const said = yield* receive(basic(channel), JSON.stringify({ contact_id: contactId, message: "hello" }))
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<
      { id: number }
    >`select conversation_id as id from messages where id = ${bodyAs(said, ReceiverAnswer).data!.message_id}`.pipe(
      Effect.orDie
    )
    return row!.id
  })

const mcpCall = (token: string, name: string, args: Record<string, unknown>) =>
  Effect.flatMap(TestServer, ({ baseUrl }) =>
    fetchJson(`${baseUrl}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream"
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } })
    }))

/** What the server logged while the suite ran (at Error), to find a 500's cause by its request id. */
const logged: Array<{ level: string; message: string; annotations: Record<string, unknown> }> = []
const CaptureLogs = Logger.add(Logger.make(({ annotations, logLevel, message, cause }) => {
  if (logLevel._tag !== "Error") return
  logged.push({
    level: logLevel.label,
    message: `${String(message)} ${Cause.pretty(cause, { renderErrorCause: true })}`,
    annotations: Object.fromEntries(annotations)
  })
}))

layer(TestServerLive().pipe(Layer.provide(CaptureLogs)), { timeout: 120_000 })("bad input gets a clear 4xx", (it) => {
  describe("text Postgres cannot store (NUL, unpaired surrogates)", () => {
    it.effect("a NUL in a JSON field is a 422 naming the field, on a create and inside nested objects", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const pipelines = yield* count`select count(*) as n from pipelines where workspace_id = ${owner.workspace_id}`
        const nul = yield* post(owner, "/api/user/pipelines", {
          name: "nul\u0000x",
          agent_type_id: 2,
          ai_model_id: 1,
          language_id: 1
        })
        expect422(nul, ["name"])
        expect(failure(nul).validation[0]!.message).toBe("The name field must not contain NUL characters.")
        const nested = yield* post(owner, "/api/user/opportunities", {
          pipeline_id: 1,
          context: { "key\u0000": 1 },
          contact: { email: "a@b.co" }
        })
        expect422(nested, ["context"])
        const surrogate = yield* post(owner, "/api/user/pipelines", {
          name: "x\ud800y",
          agent_type_id: 2,
          ai_model_id: 1,
          language_id: 1
        })
        expect422(surrogate, ["name"])
        expect(failure(surrogate).validation[0]!.message).toMatch(/unpaired surrogate/)
        expect(yield* count`select count(*) as n from pipelines where workspace_id = ${owner.workspace_id}`).toBe(
          pipelines
        )
      }))

    it.effect("a NUL in a query parameter is a 422 naming it; in a path it finds nothing", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const q = yield* call("/api/user/opportunities?q=%00", { token: owner.token })
        expect422(q, ["q"])
        const path = yield* call("/api/user/opportunities/%00", { token: owner.token })
        expect(path.status).toBe(404)
        expect(path.body).toMatchObject({ status: false, code: 404, data: null })
      }))

    it.effect("the receiver answers a NUL in contact_id or message, JSON or multipart, with a 400 naming the field and stores nothing", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const f = yield* funnel(owner, "Receiver NUL")
        const channel = yield* linkWebChannel(owner, f.pipeline.id)
        const auth = basic(channel)
        const before = yield* count`select count(*) as n from messages where channel_id = ${channel.id}`
        for (const body of [{ contact_id: "a\u0000", message: "x" }, { contact_id: "a", message: "hello\u0000" }]) {
          const r = yield* receive(auth, JSON.stringify(body))
          expect(r.status).toBe(400)
          expect(Object.keys(bodyAs(r, Schema.Object)).sort()).toEqual(["data", "message", "status"])
          expect(bodyAs(r, ReceiverRefusal).data!.validation[0]!.field).toBe(
            body.contact_id === "a" ? "message" : "contact_id"
          )
        }
        const form = new FormData()
        form.set("contact_id", "visitor")
        form.set("message", "multi\u0000part")
        const multipart = yield* receive(auth, form)
        expect(multipart.status).toBe(400)
        expect(bodyAs(multipart, ReceiverRefusal).data!.validation).toEqual([{
          field: "message",
          message: "The message field must not contain NUL characters."
        }])
        expect(yield* count`select count(*) as n from messages where channel_id = ${channel.id}`).toBe(before)
      }))

    it.effect("a file's name with control characters (RFC 5987 filename*) is stored without them", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const f = yield* funnel(owner, "Receiver file names")
        const channel = yield* linkWebChannel(owner, f.pipeline.id)
        // browsers cannot send this, a hand-written client can: the parser decodes %00 and %07 into the name
        const body = [
          "--XYZ",
          "Content-Disposition: form-data; name=\"contact_id\"",
          "",
          "visitor",
          "--XYZ",
          "Content-Disposition: form-data; name=\"message\"",
          "",
          "a file",
          "--XYZ",
          "Content-Disposition: form-data; name=\"files\"; filename*=UTF-8''re%00port%07.txt",
          "Content-Type: text/plain",
          "",
          "hello",
          "--XYZ--",
          ""
        ].join("\r\n")
        const r = yield* receive(basic(channel), body, "multipart/form-data; boundary=XYZ")
        expect(r.body).toMatchObject({ status: true })
        const [stored] = yield* Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            sql<{ name: string }>`select files->0->>'name' as name from messages where id = ${
              bodyAs(r, ReceiverAnswer).data!.message_id
            }`
        ).pipe(Effect.orDie)
        expect(stored!.name).toBe("report.txt")
        // a raw control character in a part's headers is no multipart the parser reads
        const raw = new FormData()
        raw.set("contact_id", "visitor")
        raw.append("files", new Blob(["hello"], { type: "text/plain" }), "bell\u0007.txt")
        const refused = yield* receive(basic(channel), raw)
        expect(refused.status).toBe(400)
        expect(refused.body).toEqual({ status: false, message: "The multipart body could not be read.", data: null })
      }))

    it.effect("an operator's multipart message with a NUL is a 422 naming message", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const f = yield* funnel(owner, "Operator NUL")
        const channel = yield* linkWebChannel(owner, f.pipeline.id)
        const inbound = yield* receive(basic(channel), JSON.stringify({ contact_id: "visitor", message: "hi" }))
        const [row] = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql<
            { conversation_id: number }
          >`select conversation_id from messages where id = ${bodyAs(inbound, ReceiverAnswer).data!.message_id}`).pipe(
            Effect.orDie
          )
        const { baseUrl } = yield* TestServer
        const form = new FormData()
        form.set("message", "from\u0000operator")
        form.append("files[]", new Blob(["x"], { type: "text/plain" }), "x.txt")
        const r = yield* fetchJson(`${baseUrl}/api/user/${row!.conversation_id}/messages`, {
          method: "POST",
          headers: { authorization: `Bearer ${owner.token}`, accept: "application/json" },
          body: form
        })
        expect422(r, ["message"])
      }))

    it.effect("an MCP tool argument with a NUL is a tool error naming the argument, and nothing is created", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const r = yield* mcpCall(owner.token, "create_pipeline", {
          name: "m\u0000",
          agent_type_id: 2,
          ai_model_id: 1,
          language_id: 1
        })
        expect(r.status).toBe(200)
        const { result } = bodyAs(r, RefusedToolCall)
        expect(result.isError).toBe(true)
        expect(result.structuredContent.validation).toEqual([{
          field: "name",
          message: "The name argument must not contain NUL characters."
        }])
        expect(yield* count`select count(*) as n from pipelines where workspace_id = ${owner.workspace_id}`).toBe(0)
      }))
  })

  describe("integers within their columns", () => {
    it.effect("an integer above 2^31-1 in an integer field is a 422 naming it, on every such field", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const big = 2147483648
        const pipelineBody = { name: "Bounds", agent_type_id: 2, ai_model_id: 1, language_id: 1 }
        expect422(yield* post(owner, "/api/user/pipelines", { ...pipelineBody, max_conversation_messages: big }), [
          "max_conversation_messages"
        ])
        expect422(yield* post(owner, "/api/user/pipelines", { ...pipelineBody, followup_limit: big }), [
          "followup_limit"
        ])
        const pipeline = yield* createPipeline(owner, "Bounds")
        expect422(
          yield* post(owner, `/api/user/pipelines/${pipeline.id}/stages`, {
            name: "Open",
            nature: "neutral",
            order: big
          }),
          ["order"]
        )
        const stage = yield* createStage(owner, pipeline.id, "Open", 1)
        const action = {
          name: "Hook",
          method: "POST",
          url: "https://crm.example.com/x",
          is_active: false,
          fixed_trigger: "stage_started"
        }
        expect422(yield* post(owner, `/api/user/pipelines/${pipeline.id}/actions`, { ...action, max_fires: big }), [
          "max_fires"
        ])
        expect422(yield* post(owner, `/api/user/pipelines/${pipeline.id}/actions`, { ...action, order: big }), [
          "order"
        ])
        expect422(yield* put(owner, `/api/user/stages/${stage.id}`, { order: big }), ["order"])
        expect422(yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { attach_knowledge_table_ids: [big] }), [
          "attach_knowledge_table_ids.0"
        ])
        // ids are bigint columns: up to 2^53 - 1 they are not-found answers, beyond they are invalid
        expect422(
          yield* post(owner, "/api/user/opportunities", {
            // eslint-disable-next-line no-loss-of-precision -- a literal past 2^53 on purpose: past the column's range
            pipeline_id: 9007199254740993,
            contact: { email: "a@b.co" }
          }),
          ["pipeline_id"]
        )
        const unknown = yield* post(owner, "/api/user/opportunities", {
          pipeline_id: 9007199254740991,
          contact: { email: "a@b.co" }
        })
        expect422(unknown, ["pipeline_id"])
        expect(failure(unknown).validation[0]!.message).not.toMatch(/integer id/)
      }))

    it.effect("a numeric path id beyond any row is a 404 or 422, never a 500", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        for (
          const path of [
            "/api/user/opportunities/99999999999999999999",
            "/api/user/pipelines/99999999999999999999",
            "/api/user/channels/2147483648"
          ]
        ) {
          const r = yield* call(path, { token: owner.token })
          expect([404, 422]).toContain(r.status)
          expect(r.body).toMatchObject({ status: false, code: r.status, data: null })
        }
      }))
  })

  describe("path ids", () => {
    it.effect("only ^[1-9][0-9]*$ reaches a row: %201, 1e0, 0x1, 1.0, +1 and 01 are 422 and rotate nothing", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const channel = ok(yield* post(owner, "/api/user/channels", { kind: "web" }), "channels.create")
        const loose = ["%201", "1e0", "0x1", "1.0", "+1", "01"].map((s) => s.replace("1", String(channel.id)))
        for (const id of [...loose, `${channel.id}%20`]) {
          const r = yield* post(owner, `/api/user/channels/${id}/rotate`, undefined)
          expect(r.status, id).toBe(422)
          expect(failure(r).validation, id).toEqual([{
            field: "channel",
            message: "The channel field must be a positive integer id."
          }])
        }
        const after = ok(yield* get(owner, `/api/user/channels/${channel.id}`), "channels.get")
        expect(after.client_id).toBe(channel.client_id)
      }))
  })

  describe("bodies", () => {
    it.effect("multipart/form-data without a boundary is a 400 on the API and the receiver", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const r = yield* call("/api/user/pipelines", {
          method: "POST",
          token: owner.token,
          rawBody: "x",
          headers: { "content-type": "multipart/form-data" }
        })
        expect(r.status).toBe(400)
        expect(r.body).toMatchObject({ status: false, code: 400, data: null })
        expect(failure(r).message).toMatch(/boundary/)
        const f = yield* funnel(owner, "No boundary")
        const channel = yield* linkWebChannel(owner, f.pipeline.id)
        const received = yield* receive(basic(channel), "x", "multipart/form-data")
        expect(received.status).toBe(400)
        expect(received.body).toEqual({ status: false, message: bodyAs(received, ReceiverAnswer).message, data: null })
      }))

    it.effect("a JSON body over 1 MB is a 413 on both listeners, announced or chunked; knowledge upserts may send 16 MB", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const { baseUrl, receiverUrl } = yield* TestServer
        const big = JSON.stringify({
          name: "x".repeat(2 * 1024 * 1024),
          agent_type_id: 2,
          ai_model_id: 1,
          language_id: 1
        })
        const announced = yield* call("/api/user/pipelines", {
          method: "POST",
          token: owner.token,
          rawBody: big,
          headers: { "content-type": "application/json" }
        })
        expect(announced.status).toBe(413)
        expect(announced.body).toEqual({
          status: false,
          code: 413,
          validation: [],
          message: "The request body may not be larger than 1 MB.",
          data: null
        })
        // a stream has no Content-Length: read up to the limit, then refused
        const chunked = yield* Effect.promise(() =>
          postChunked(`${baseUrl}/api/user/pipelines`, big, { authorization: `Bearer ${owner.token}` })
        )
        expect(chunked.status).toBe(413)
        // a client that asks first is told before it sends a byte of the body
        const asked = yield* Effect.promise(() =>
          askFirst(`${baseUrl}/api/user/pipelines`, 50 * 1024 * 1024, { authorization: `Bearer ${owner.token}` })
        )
        expect(asked).toEqual({ status: 413, continued: false })
        const f = yield* funnel(owner, "Big bodies")
        const channel = yield* linkWebChannel(owner, f.pipeline.id)
        const receiverBig = yield* Effect.promise(() =>
          postChunked(`${receiverUrl}/web-chat/message`, big, { authorization: basic(channel) })
        )
        expect(receiverBig.status).toBe(413)
        expect(JSON.parse(receiverBig.body)).toEqual({
          status: false,
          message: "The request body may not be larger than 1 MB.",
          data: null
        })
        // a client that reads nothing until it has written its whole body (20 MB, Connection: close) still
        // reads the 413, never a reset
        const huge = Buffer.alloc(20 * 1024 * 1024, "a")
        for (const chunked of [false, true]) {
          const answer = yield* Effect.promise(() =>
            sendAllThenRead(`${receiverUrl}/web-chat/message`, huge, basic(channel), chunked)
          )
          expect(answer.error, `chunked: ${chunked}`).toBeUndefined()
          expect(answer.statusLine).toBe("HTTP/1.1 413 Payload Too Large")
          expect(answer.body).toContain("The request body may not be larger than 1 MB.")
        }

        yield* giveCredits(owner.workspace_id, { training_credits: 1000 })
        const table = ok(
          yield* post(owner, "/api/user/knowledge-tables", {
            name: "Big rows",
            columns: [{ name: "body", data_type: "string", order: 1, is_searchable: true }]
          }),
          "knowledge.create"
        )
        const points = Array.from(
          { length: 300 },
          (_, i) => ({ default_id: `r${i}`, body: `row ${i} ${"lorem ipsum ".repeat(800)}` })
        )
        const upsert = yield* put(owner, `/api/user/knowledge-tables/${table.id}/points`, { points })
        expect(JSON.stringify({ points }).length).toBeGreaterThan(2 * 1024 * 1024)
        expect(upsert.body).toMatchObject({ status: true, code: 200, data: { upserted: 300 } })
      }))
  })

  describe("memory", () => {
    it.effect("20 concurrent 50 MB bodies to each listener are refused with 413 and leave the server's memory where it was", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const f = yield* funnel(owner, "Flood")
        const channel = yield* linkWebChannel(owner, f.pipeline.id)
        const { baseUrl, receiverUrl } = yield* TestServer
        const targets = [
          { url: `${baseUrl}/api/user/pipelines`, headers: { authorization: `Bearer ${owner.token}` } },
          { url: `${receiverUrl}/web-chat/message`, headers: { authorization: basic(channel) } }
        ]
        const rss = () => process.memoryUsage().rss
        const before = rss()
        const answers = yield* Effect.promise(() =>
          Promise.all(
            targets.flatMap((t) => Array.from({ length: 20 }, (_, i) => flood(t.url, t.headers, i % 2 === 1)))
          )
        )
        const grown = rss() - before
        expect(answers.map((a) => a.status)).toEqual(answers.map(() => 413))
        expect(grown).toBeLessThan(50 * 1024 * 1024)
      }))
  })

  describe("422 messages", () => {
    it.effect("a type mismatch reads like every other 422: the field, then what it must be", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        yield* giveCredits(owner.workspace_id)
        const { pipeline } = yield* funnel(owner)
        const r = yield* post(owner, "/api/user/opportunities", {
          pipeline_id: pipeline.id,
          tags: "one",
          context: [],
          contact: { email: "types@example.com" }
        })
        expect422(r, ["tags", "context"])
        const messages = Object.fromEntries(
          failure(r).validation.map((v) => [v.field, v.message])
        )
        expect(messages).toEqual({
          tags: "The tags field must be a list of strings.",
          context: "The context field must be an object or null."
        })
        const conversation = yield* conversationOf(yield* linkWebChannel(owner, pipeline.id), "types-visitor")
        const notes = yield* put(owner, `/api/user/conversations/${conversation}`, { notes: "a string" })
        expect422(notes, ["notes"])
        expect(failure(notes).validation[0]!.message).toBe("The notes field must be a list of strings or null.")
      }))
  })

  describe("limits in characters", () => {
    it.effect("an emoji counts as one character: 9,999 letters and one emoji fit the 10,000, 10,001 characters do not", () =>
      Effect.gen(function*() {
        const { channel, owner, pipeline } = yield* webAgent
        const { baseUrl } = yield* TestServer
        const say = (body: Record<string, unknown>) => receive(basic(channel), JSON.stringify(body))
        const fits = "a".repeat(9_999) + "😀"
        const over = "a".repeat(10_000) + "😀"
        const contactKey = "b".repeat(254) + "😀"
        expect((yield* say({ contact_id: contactKey, message: fits })).status).toBe(200)
        const refused = yield* say({ contact_id: "emoji-visitor", message: over })
        expect(refused.status).toBe(400)
        expect(JSON.stringify(refused.body)).toContain("may not be greater than 10000 characters")
        expect((yield* say({ contact_id: "b".repeat(255) + "😀", message: "hi" })).status).toBe(400)

        const initiate = yield* fetchJson(`${baseUrl}/api/user/web-chat/initiate`, {
          method: "POST",
          headers: { authorization: basic(channel), "content-type": "application/json" },
          body: JSON.stringify({ contact_id: "emoji-initiate", name: "n".repeat(254) + "😀" })
        })
        expect(initiate.status).toBe(200)
        const opportunity = yield* post(owner, "/api/user/opportunities", {
          pipeline_id: pipeline.id,
          name: "o".repeat(254) + "😀",
          contact: { email: "emoji@example.com" }
        })
        expect(opportunity.status).toBe(200)
        expect422(
          yield* post(owner, "/api/user/opportunities", {
            pipeline_id: pipeline.id,
            name: "o".repeat(255) + "😀",
            contact: { email: "emoji2@example.com" }
          }),
          ["name"]
        )
        const [conversation] = yield* Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql<{ id: number }>`select id from conversations where external_chat_id = ${contactKey}`
        ).pipe(Effect.orDie)
        expect(
          ok(yield* post(owner, `/api/user/${conversation!.id}/messages`, { message: fits }), "messages.send").message
        ).toBe(fits)
        expect422(yield* post(owner, `/api/user/${conversation!.id}/messages`, { message: over }), ["message"])
      }))
  })

  describe("500s", () => {
    it.effect("a defect on the receiver is logged at Error with its request id, its route and its cause", () =>
      Effect.gen(function*() {
        const { channel } = yield* webAgent
        const sql = yield* SqlClient.SqlClient
        yield* sql`alter table conversations rename to conversations_away`.pipe(Effect.orDie)
        const r = yield* receive(basic(channel), JSON.stringify({ contact_id: "defect-visitor", message: "hello" }))
          .pipe(
            Effect.ensuring(sql`alter table conversations_away rename to conversations`.pipe(Effect.orDie))
          )
        expect(r.status).toBe(500)
        const requestId = r.headers.get("x-request-id")!
        expect(bodyAs(r, ReceiverAnswer).message).toBe(
          `Internal server error (request id ${requestId}). The error was logged.`
        )
        const line = logged.find((l) => l.annotations.request_id === requestId)
        expect(line?.message).toMatch(/conversations/)
        expect(line?.annotations).toMatchObject({ listener: "receiver", http_route: "/web-chat/message" })
      }))

    it.effect("a 5xx a route answers itself (the channel refused the operator's message) is logged at Error too", () =>
      Effect.gen(function*() {
        const { channel, owner } = yield* webAgent
        const conversation = yield* conversationOf(channel, "refused-visitor")
        ok(yield* put(owner, `/api/user/channels/${channel.id}`, { is_active: false }), "channels.update")
        const r = yield* post(owner, `/api/user/${conversation}/messages`, { message: "Are you still there?" })
        expect(r.status).toBe(500)
        const requestId = r.headers.get("x-request-id")!
        const line = logged.find((l) => l.annotations.request_id === requestId)
        expect(line?.message).toMatch(/inactive/)
        expect(line?.annotations).toMatchObject({
          listener: "api",
          http_status: 500,
          http_route: "/api/user/:conversation/messages"
        })
      }))

    it.effect("a defect answers the envelope with a request id, which the Error log line carries with the cause", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const sql = yield* SqlClient.SqlClient
        // a real defect: the table the handler reads is gone
        yield* sql`alter table variables rename to variables_away`.pipe(Effect.orDie)
        const pipeline = yield* createPipeline(owner, "Defect")
        const r = yield* call(`/api/user/pipelines/${pipeline.id}/variables`, { token: owner.token }).pipe(
          Effect.ensuring(sql`alter table variables_away rename to variables`.pipe(Effect.orDie))
        )
        expect(r.status).toBe(500)
        const requestId = r.headers.get("x-request-id")!
        expect(requestId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
        expect(r.body).toEqual({
          status: false,
          code: 500,
          validation: [],
          message: `Internal server error (request id ${requestId}). The error was logged.`,
          data: null
        })
        const line = logged.find((l) => l.annotations.request_id === requestId)
        expect(line?.message).toMatch(/variables/)
        expect(line?.annotations.http_route).toBe("/api/user/pipelines/:pipeline/variables")
        // a client's own request id is kept when it is a plain token
        const tagged = yield* call("/api/user/me", { token: owner.token, headers: { "x-request-id": "client-123" } })
        expect(tagged.headers.get("x-request-id")).toBe("client-123")
      }))
  })
})

/**
 * A client that writes its whole request (headers and body) before it reads a byte of the answer, as simple
 * clients do: what it reads once done, or the socket error it met instead.
 */
const sendAllThenRead = (url: string, body: Buffer, authorization: string, chunked: boolean) =>
  new Promise<{ statusLine: string; body: string; error: string | undefined }>((resolve) => {
    const { hostname, pathname, port } = new URL(url)
    const socket = Net.connect(Number(port), hostname)
    const received: Array<Buffer> = []
    let error: string | undefined
    socket.pause()
    socket.on("error", (e: NodeJS.ErrnoException) => (error = e.code ?? e.message))
    socket.on("close", () => {
      const text = Buffer.concat(received).toString("utf8")
      resolve({ statusLine: text.split("\r\n")[0] ?? "", body: text.slice(text.indexOf("\r\n\r\n") + 4), error })
    })
    const framing = chunked ? "Transfer-Encoding: chunked" : `Content-Length: ${body.length}`
    socket.write(
      `POST ${pathname} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: ${authorization}\r\nContent-Type: application/json\r\n${framing}\r\nConnection: close\r\n\r\n`
    )
    const payload = chunked
      ? Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from("\r\n0\r\n\r\n")])
      : body
    socket.write(payload, () => {
      socket.on("data", (chunk: Buffer) => received.push(chunk))
      socket.resume()
    })
  })

/** A POST whose body is streamed without Content-Length (Transfer-Encoding: chunked). */
const postChunked = (url: string, body: string, headers: Record<string, string>) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = Http.request(url, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json", "transfer-encoding": "chunked" }
    }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }))
    })
    req.on("error", reject)
    const bytes = Buffer.from(body)
    for (let i = 0; i < bytes.length; i += 64 * 1024) req.write(bytes.subarray(i, i + 64 * 1024))
    req.end()
  })

const FLOOD_BYTES = 50 * 1024 * 1024

/**
 * Streams a 50 MB body (announced, or chunked) and stops sending once the answer arrives, as a client
 * does that reads while it writes.
 */
const flood = (url: string, headers: Record<string, string>, chunked: boolean) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    let answered = false
    const req = Http.request(url, {
      method: "POST",
      headers: {
        ...headers,
        "content-type": "application/json",
        ...(chunked ? { "transfer-encoding": "chunked" } : { "content-length": String(FLOOD_BYTES) })
      }
    }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => {
        answered = true
        req.destroy()
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") })
      })
    })
    req.on("error", (e) => answered ? undefined : reject(e))
    const chunk = Buffer.alloc(64 * 1024, 0x20)
    let sent = 0
    const pump = () => {
      while (!answered && sent < FLOOD_BYTES) {
        sent += chunk.length
        if (!req.write(chunk)) return void req.once("drain", pump)
      }
      if (!answered) req.end()
    }
    pump()
  })

/** A POST announcing `bytes` with `Expect: 100-continue`: the answer, and whether the server said to go on. */
const askFirst = (url: string, bytes: number, headers: Record<string, string>) =>
  new Promise<{ status: number; continued: boolean }>((resolve, reject) => {
    let continued = false
    const req = Http.request(url, {
      method: "POST",
      headers: {
        ...headers,
        "content-type": "application/json",
        "content-length": String(bytes),
        expect: "100-continue"
      }
    }, (res) => {
      res.resume()
      res.on("end", () => {
        req.destroy()
        resolve({ status: res.statusCode ?? 0, continued })
      })
    })
    req.on("continue", () => {
      continued = true
      req.destroy()
    })
    req.on("error", (e) => continued ? resolve({ status: 0, continued }) : reject(e))
    req.flushHeaders()
  })
