/**
 * Issue 18, "say what happens": a contact message the agent does not answer says why. Through the real
 * server with the deterministic local model (and a fake OpenAI server that answers 500s): the reason is on
 * the contact's message in the web-chat history and in MCP `list_messages` (not in the website widget's
 * history), a Warning log line names the conversation and the reason, and `parley_replies_skipped_total`
 * counts it by reason. Choosing a model whose provider has no key is a warning in the create and update
 * answers (REST and MCP).
 */
import { expect, layer } from "@effect/vitest"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { MessagesPage, PipelineWithStages, ReceiverAnswer } from "@parley/domain"
import { repliesMade, repliesSkipped } from "@parley/worker"
import { Effect, Layer, Metric, Schema } from "effect"
import { type ApiResponse, bodyAs } from "./support/Contract.js"
import { fakeOpenAi, type FakeOpenAiState } from "./support/FakeOpenAi.js"
import { mcpClient, textOf } from "./support/McpClient.js"
import { createStage, linkWebChannel, ok, post, put, sqlRows } from "./support/Opportunities.js"
import { call, fetchJson, giveCredits, seedUser, TestServer, TestServerLive } from "./support/TestServer.js"
import { captureWarnings } from "./support/Warnings.js"
import { basic, say } from "./support/WebChat.js"
import { eventually } from "./support/WebhookReceiver.js"

type Caller = { readonly token: string; readonly workspace_id: number }
type Channel = { readonly id: number; readonly client_id: string; readonly client_secret: string }

const { layer: CaptureWarnings, warnings } = captureWarnings()

const skippedCount = (reason: string) =>
  Effect.map(Metric.value(Metric.tagged(repliesSkipped, "reason", reason)), (s) => s.count)
const madeCount = Effect.map(Metric.value(repliesMade), (s) => s.count)

/** A pipeline answering at once on the local model (unless `settings` say otherwise), one stage, a web channel. */
const agent = (owner: Caller, settings: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const pipeline = ok(
      yield* post(owner, "/api/user/pipelines", {
        name: `Sales ${Math.random().toString(36).slice(2, 8)}`,
        agent_type_id: 1,
        ai_model_id: 1,
        language_id: 1
      }),
      "pipelines.create"
    )
    ok(
      yield* put(owner, `/api/user/pipelines/${pipeline.id}`, {
        instructions: "Our annual plan costs 990 euros per year.",
        reply_debounce_ms: 0,
        ...settings
      }),
      "pipelines.update"
    )
    yield* createStage(owner, pipeline.id, "Open", 1)
    const channel: Channel = yield* linkWebChannel(owner, pipeline.id)
    return { pipeline, channel }
  })

/** GET /api/user/messages/webchat for a contact, as a chat front end reads it (newest first). */
const history = (channel: Channel, contactId: string) =>
  Effect.flatMap(
    TestServer,
    ({ baseUrl }) =>
      fetchJson(`${baseUrl}/api/user/messages/webchat?contact_id=${encodeURIComponent(contactId)}&per_page=50`, {
        headers: { authorization: basic(channel), accept: "application/json" }
      })
  ).pipe(Effect.map((r) => ok(r, "webChat.history").data))

/** Waits until the contact message `id` is handled without a reply, and returns its history record. */
const unanswered = (channel: Channel, contactId: string, id: string) =>
  eventually(
    Effect.map(history(channel, contactId), (records) => {
      const record = records.find((r) => r.id === id)
      return record?.no_reply_reason ? record : undefined
    }),
    20_000
  )

/** What `create_pipeline` and `update_pipeline` answer as structured content (the fields read here). */
const PipelineSaved = Schema.Struct({ pipeline: PipelineWithStages, warning: Schema.NullOr(Schema.String) })

/** The message of a success envelope (where a warning is told). */
const messageOf = (r: ApiResponse) => bodyAs(r, Schema.Struct({ message: Schema.String })).message

/**
 * The SDK's client over Streamable HTTP; closed with the scope. A tool's structured content is decoded with
 * `schema`: a result of another shape fails the test.
 */
const mcp = (token: string) =>
  Effect.gen(function*() {
    const client = yield* mcpClient(token)
    return <A, I>(name: string, args: Record<string, unknown>, schema: Schema.Schema<A, I>) =>
      Effect.promise(() => client.callTool({ name, arguments: args }) as Promise<CallToolResult>).pipe(
        Effect.map((result) => {
          const text = textOf(result)
          if (result.isError) expect(text).toBe(`a successful ${name}`)
          const structured = Schema.decodeUnknownEither(schema)(result.structuredContent)
          if (structured._tag === "Left") return expect.fail(`${name} answered: ${structured.left.message}`)
          return { text, structured: structured.right }
        })
      )
  })

/** MCP `list_messages` of a pipeline: the entry of message `id`. */
const listed = (owner: Caller, pipelineId: number, id: string) =>
  Effect.scoped(Effect.gen(function*() {
    const use = yield* mcp(owner.token)
    const { structured } = yield* use("list_messages", { pipeline_id: pipelineId, limit: 100 }, MessagesPage)
    return structured.messages.find((m) => m.id === id)
  }))

/** The Warning line of the skipped turn in `conversationId`. */
const warningFor = (conversationId: number, reason: string) =>
  eventually(
    Effect.sync(() =>
      warnings.find((w) => w.annotations.conversation_id === String(conversationId) && w.annotations.reason === reason)
    )
  )

const conversationOf = (messageId: string) =>
  Effect.map(
    sqlRows<{ conversation_id: number }>`select conversation_id from messages where id = ${messageId}`,
    (rows) => Number(rows[0]!.conversation_id)
  )

/** Everything a no-reply turn shows: the history record, the list_messages entry, the Warning line. */
const expectNoReply = (
  owner: Caller,
  pipelineId: number,
  channel: Channel,
  contactId: string,
  id: string,
  reason: string
) =>
  Effect.gen(function*() {
    const record = yield* unanswered(channel, contactId, id)
    expect(record).toMatchObject({ role: "user", no_reply_reason: reason })
    const entry = yield* listed(owner, pipelineId, id)
    expect(entry).toMatchObject({ id, role: "user", no_reply_reason: reason })
    const conversationId = yield* conversationOf(id)
    const line = yield* warningFor(conversationId, reason)
    expect(line.message).toContain(`conversation ${conversationId}`)
    expect(line.message).toContain(reason)
    return { record, conversationId }
  })

layer(TestServerLive({ ENGINE_SWEEP_INTERVAL_MS: "1000" }).pipe(Layer.provide(CaptureWarnings)), {
  excludeTestServices: true
})(
  "no reply, and why",
  (it) => {
    it.effect("a workspace with 0 credits: the receiver takes the message, no reply is made, and no_credits is recorded, logged and counted", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        // as `parley user create` leaves it
        const [workspace] = yield* sqlRows<
          { credits: number }
        >`select credits::float8 as credits from workspaces where id = ${owner.workspace_id}`
        expect(workspace!.credits).toBe(0)
        const { channel, pipeline } = yield* agent(owner)
        const before = yield* skippedCount("no_credits")
        const made = yield* madeCount

        const id = yield* say(channel, "broke-1", "How much is the annual plan?")
        const { record } = yield* expectNoReply(owner, pipeline.id, channel, "broke-1", id, "no_credits")
        expect(record.status).toBe("received")
        // nothing was answered
        const records = yield* history(channel, "broke-1")
        expect(records.map((r) => r.role)).toEqual(["user"])
        expect(yield* skippedCount("no_credits")).toBe(before + 1)
        expect(yield* madeCount).toBe(made)
      }))

    it.effect("a workspace without an active subscription: no reply, no_subscription", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        yield* giveCredits(owner.workspace_id, { credits: 100, is_subscription_active: false })
        const { channel, pipeline } = yield* agent(owner)
        const before = yield* skippedCount("no_subscription")
        const id = yield* say(channel, "lapsed-1", "Hello?")
        yield* expectNoReply(owner, pipeline.id, channel, "lapsed-1", id, "no_subscription")
        expect(yield* skippedCount("no_subscription")).toBe(before + 1)
        expect((yield* history(channel, "lapsed-1")).map((r) => r.role)).toEqual(["user"])
      }))

    it.effect("a paused conversation: no reply, paused; the answered message before it has no reason", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        yield* giveCredits(owner.workspace_id)
        const { channel, pipeline } = yield* agent(owner)
        const made = yield* madeCount
        const first = yield* say(channel, "dana", "How much is the annual plan?")
        const answered = yield* eventually(
          Effect.map(
            history(channel, "dana"),
            (records) => records.find((r) => r.role === "assistant" && r.status === "sent_to_user")
          )
        )
        expect(answered.no_reply_reason).toBeNull()
        expect((yield* history(channel, "dana")).find((r) => r.id === first)!.no_reply_reason).toBeNull()
        expect((yield* listed(owner, pipeline.id, first))!.no_reply_reason).toBeNull()
        expect(yield* madeCount).toBe(made + 1)

        const conversationId = yield* conversationOf(first)
        ok(yield* put(owner, `/api/user/conversations/${conversationId}`, { status: "paused" }), "conversations.update")
        const before = yield* skippedCount("paused")
        const second = yield* say(channel, "dana", "Are you there?")
        yield* expectNoReply(owner, pipeline.id, channel, "dana", second, "paused")
        expect(yield* skippedCount("paused")).toBe(before + 1)
      }))

    it.effect("a conversation at max_conversation_messages: no reply, message_limit", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        yield* giveCredits(owner.workspace_id)
        const { channel, pipeline } = yield* agent(owner, { max_conversation_messages: 1 })
        yield* say(channel, "chatty", "How much is the annual plan?")
        yield* eventually(Effect.map(history(channel, "chatty"), (records) =>
          records.some((r) => r.role === "assistant")
            ? true
            : undefined))
        const before = yield* skippedCount("message_limit")
        const second = yield* say(channel, "chatty", "And the monthly plan?")
        yield* expectNoReply(owner, pipeline.id, channel, "chatty", second, "message_limit")
        expect(yield* skippedCount("message_limit")).toBe(before + 1)
        expect((yield* history(channel, "chatty")).filter((r) => r.role === "assistant")).toHaveLength(1)
      }))

    it.effect("a pipeline on an OpenAI model without OPENAI_API_KEY: no reply, model_not_configured, and no failed reply stored", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        yield* giveCredits(owner.workspace_id)
        // GPT-4.1 mini
        const { channel, pipeline } = yield* agent(owner, { ai_model_id: 11 })
        const before = yield* skippedCount("model_not_configured")
        const id = yield* say(channel, "gpt-fan", "Hello?")
        yield* expectNoReply(owner, pipeline.id, channel, "gpt-fan", id, "model_not_configured")
        const line = yield* warningFor(yield* conversationOf(id), "model_not_configured")
        expect(line.message).toContain("the model gpt-4.1-mini needs OPENAI_API_KEY")
        expect(yield* skippedCount("model_not_configured")).toBe(before + 1)
        expect((yield* history(channel, "gpt-fan")).map((r) => r.role)).toEqual(["user"])
      }))

    it.effect("the website widget's history does not tell the visitor why the agent is silent", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        yield* giveCredits(owner.workspace_id)
        const { pipeline } = yield* agent(owner)
        const widget = ok(
          yield* post(owner, "/api/user/channels", {
            kind: "widget",
            pipeline_id: pipeline.id,
            allowed_origins: ["https://shop.example"]
          }),
          "channels.create"
        )
        const visitor = ok(
          yield* call("/api/widget/session", {
            method: "POST",
            body: { client_id: widget.client_id },
            headers: { origin: "https://shop.example" }
          }),
          "widget.session"
        )
        // the credits run out after the visitor arrived
        yield* giveCredits(owner.workspace_id, { credits: 0 })
        const sent = yield* fetchJson(visitor.messages_url, {
          method: "POST",
          headers: {
            authorization: `Bearer ${visitor.session}`,
            origin: "https://shop.example",
            "content-type": "application/json"
          },
          body: JSON.stringify({ contact_id: visitor.contact_id, message: "Hello?" })
        })
        const id = bodyAs(sent, ReceiverAnswer).data!.message_id
        // the business sees it
        const entry = yield* eventually(
          Effect.map(listed(owner, pipeline.id, id), (m) => m?.no_reply_reason ? m : undefined),
          20_000
        )
        expect(entry.no_reply_reason).toBe("no_credits")
        // the visitor does not
        const page = ok(
          yield* call("/api/widget/messages", {
            headers: { authorization: `Bearer ${visitor.session}`, origin: "https://shop.example" }
          }),
          "widget.history"
        )
        const record = page.data.find((r) => r.id === id)
        expect(record).toMatchObject({ id, role: "user", message: "Hello?" })
        expect(record).not.toHaveProperty("no_reply_reason")
      }))

    it.effect("create and update answer with a warning when the pipeline's model has no provider key (REST and MCP)", () =>
      Effect.scoped(Effect.gen(function*() {
        const owner = yield* seedUser()
        const warning = "the model gpt-4.1-mini needs OPENAI_API_KEY; replies will not be made until it is set."
        const local = yield* post(owner, "/api/user/pipelines", {
          name: "Local",
          agent_type_id: 1,
          ai_model_id: 1,
          language_id: 1
        })
        expect(local.body).toMatchObject({
          status: true,
          code: 200,
          validation: [],
          message: "Pipeline created successfully."
        })

        const created = yield* post(owner, "/api/user/pipelines", {
          name: "Remote",
          agent_type_id: 1,
          ai_model_id: 11,
          language_id: 1
        })
        expect(created.status).toBe(200)
        expect(created.body).toMatchObject({
          status: true,
          code: 200,
          validation: [],
          message: `Pipeline created successfully. Warning: ${warning}`
        })
        expect(ok(created, "pipelines.create")).toMatchObject({ name: "Remote", ai_model_id: 11 })

        const localId = ok(local, "pipelines.create").id
        const switched = yield* put(owner, `/api/user/pipelines/${localId}`, { ai_model_id: 11 })
        expect(switched.body).toMatchObject({
          status: true,
          code: 200,
          message: `Pipeline updated successfully. Warning: ${warning}`
        })
        const back = yield* put(owner, `/api/user/pipelines/${localId}`, { ai_model_id: 1 })
        expect(messageOf(back)).toBe("Pipeline updated successfully.")

        // Smart Routing: a tier's model counts too (Claude Sonnet 4 needs ANTHROPIC_API_KEY)
        const models = yield* sqlRows<{ id: number; model: string }>`
          select m.id, m.model from ai_models m join ai_providers p on p.id = m.ai_provider_id where p.slug = 'anthropic' order by m.id limit 1`
        const routed = yield* put(owner, `/api/user/pipelines/${localId}`, {
          is_model_routing_enabled: true,
          is_model_routing: [
            { tier: "router", ai_model_id: 1 },
            { tier: "simple", ai_model_id: 1 },
            { tier: "moderate", ai_model_id: 11 },
            { tier: "complex", ai_model_id: models[0]!.id }
          ]
        })
        expect(messageOf(routed)).toBe(
          `Pipeline updated successfully. Warning: the model gpt-4.1-mini needs OPENAI_API_KEY and the model ${
            models[0]!.model
          } needs ANTHROPIC_API_KEY; replies will not be made until they are set.`
        )

        const use = yield* mcp(owner.token)
        const viaMcp = yield* use("create_pipeline", {
          name: "Remote by MCP",
          agent_type_id: 1,
          ai_model_id: 11,
          language_id: 1
        }, PipelineSaved)
        expect(viaMcp.structured.warning).toBe(warning)
        // a client that reads only the text gets the same JSON
        expect(JSON.parse(viaMcp.text).warning).toBe(warning)
        const localByMcp = yield* use("create_pipeline", {
          name: "Local by MCP",
          agent_type_id: 1,
          ai_model_id: 1,
          language_id: 1
        }, PipelineSaved)
        expect(localByMcp.structured.warning).toBeNull()
        const updated = yield* use("update_pipeline", {
          pipeline_id: localByMcp.structured.pipeline.id,
          ai_model_id: 11
        }, PipelineSaved)
        expect(updated.structured.warning).toBe(warning)
      })))
  }
)

const openAi: FakeOpenAiState = { requests: [], failing: true }

const FailingOpenAiServer = Layer.unwrapScoped(
  Effect.map(
    fakeOpenAi(openAi),
    (url) => TestServerLive({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: url, ENGINE_SWEEP_INTERVAL_MS: "1000" })
  )
).pipe(Layer.provide(CaptureWarnings))

layer(FailingOpenAiServer, { excludeTestServices: true })("no reply when the provider fails", (it) => {
  it.effect("after its retries the contact's message is marked provider_error, the failed reply keeps the error, and it is not retried again", () =>
    Effect.gen(function*() {
      openAi.failing = true
      openAi.requests.length = 0
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id)
      // the fallback off: the turn is recorded as failed and the contact hears nothing
      const { channel, pipeline } = yield* agent(owner, { ai_model_id: 11, handoff_on_failure: false })
      const before = yield* skippedCount("provider_error")

      const id = yield* say(channel, "unlucky", "Hello?")
      yield* expectNoReply(owner, pipeline.id, channel, "unlucky", id, "provider_error")
      const records = yield* history(channel, "unlucky")
      const failed = records.find((r) => r.role === "assistant")!
      expect(failed).toMatchObject({ status: "failed", no_reply_reason: null })
      expect(failed.error).toBeTruthy()
      expect(openAi.requests.filter((r) => r.url === "/v1/responses")).toHaveLength(3)
      expect(yield* skippedCount("provider_error")).toBe(before + 1)

      // handled: neither redelivered nor swept up again
      yield* Effect.sleep("2500 millis")
      expect(openAi.requests.filter((r) => r.url === "/v1/responses")).toHaveLength(3)

      // a turn handled before the reasons were public stored `failed`: it reads as provider_error too
      yield* sqlRows`update messages set handled_reason = 'failed' where id = ${id}`
      expect((yield* history(channel, "unlucky")).find((r) => r.id === id)!.no_reply_reason).toBe("provider_error")
      yield* sqlRows`update messages set handled_reason = 'provider_error' where id = ${id}`

      // the provider is back: the next message is answered
      openAi.failing = false
      const next = yield* say(channel, "unlucky", "Hello again?")
      const reply = yield* eventually(
        Effect.map(
          history(channel, "unlucky"),
          (all) => all.find((r) => r.role === "assistant" && r.status === "sent_to_user")
        ),
        20_000
      )
      expect(reply.message).toBe("The annual plan is 990 euros per year.")
      expect((yield* history(channel, "unlucky")).find((r) => r.id === next)!.no_reply_reason).toBeNull()
    }))

  it.effect("by default a failed reply is never silence: the fallback message goes to the contact and a person is asked for", () =>
    Effect.gen(function*() {
      openAi.failing = true
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id)
      const { channel, pipeline } = yield* agent(owner, { ai_model_id: 11 })
      expect(pipeline).toMatchObject({ fallback_message: null, handoff_on_failure: true })

      const id = yield* say(channel, "stranded", "What does the annual plan cost?")
      const fallback = yield* eventually(
        Effect.map(
          history(channel, "stranded"),
          (all) => all.find((r) => r.role === "assistant" && r.status === "sent_to_user")
        ),
        20_000
      )
      expect(fallback.message).toBe(
        "Sorry, I could not answer that just now. A member of our team will get back to you."
      )
      const conversationId = yield* conversationOf(id)
      const conversation = ok(
        yield* call(`/api/user/conversations/${conversationId}`, { token: owner.token }),
        "conversations.get"
      )
      expect(conversation.handoff).toMatchObject({ state: "waiting", requested_by: "rule" })
      expect(conversation.handoff.reason).toMatch(/^The reply could not be made: /)
      // the failed turn keeps its reason; the inbox shows what the contact wrote, flagged
      expect((yield* history(channel, "stranded")).find((r) => r.id === id)!.no_reply_reason).toBe("provider_error")
      const inbox = ok(
        yield* call(`/api/user/conversations?pipeline_id=${pipeline.id}`, { token: owner.token }),
        "conversations.list"
      )
      expect(inbox.conversations).toHaveLength(1)
      expect(inbox.conversations[0]).toMatchObject({
        last_message_preview: "What does the annual plan cost?",
        reply_failed: true
      })

      // the pipeline's own text, on the next conversation that fails
      ok(
        yield* put(owner, `/api/user/pipelines/${pipeline.id}`, {
          fallback_message: "We are on it: a colleague will answer here within the hour."
        }),
        "pipelines.update"
      )
      yield* say(channel, "stranded-2", "Hello?")
      const own = yield* eventually(
        Effect.map(
          history(channel, "stranded-2"),
          (all) => all.find((r) => r.role === "assistant" && r.status === "sent_to_user")
        ),
        20_000
      )
      expect(own.message).toBe("We are on it: a colleague will answer here within the hour.")
    }))
})
