/**
 * The pipeline's `handoff_after_failures` rule (issue 19, docs/handoff.md), which applies with
 * `handoff_on_failure` off: when the model's provider fails that many replies in a row (a local fake
 * OpenAI server answering 500), the conversation asks for a person by rule, and the contact gets the
 * bridge message, which needs no model. With the default, the first failure does (issue 36).
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { fakeOpenAi, type FakeOpenAiState } from "./support/FakeOpenAi.js"
import { createStage, get, linkWebChannel, ok, post, sqlRows } from "./support/Opportunities.js"
import { fetchJson, giveCredits, seedUser, TestServer, TestServerLive } from "./support/TestServer.js"
import { say } from "./support/WebChat.js"
import { eventually } from "./support/WebhookReceiver.js"

const openAi: FakeOpenAiState = { requests: [], failing: true }

const FailingOpenAiServer = Layer.unwrapScoped(
  Effect.map(
    fakeOpenAi(openAi),
    (url) => TestServerLive({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: url, ENGINE_SWEEP_INTERVAL_MS: "1000" })
  )
)

layer(FailingOpenAiServer, { excludeTestServices: true })("handing off after failed replies", (it) => {
  it.effect("two failed replies in a row ask for a person by rule; the bridge message goes out", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id, { credits: 100, is_subscription_active: true })
      const pipeline = ok(
        yield* post(owner, "/api/user/pipelines", {
          name: "Remote",
          agent_type_id: 1,
          ai_model_id: 11,
          language_id: 1,
          reply_debounce_ms: 0,
          handoff_on_failure: false,
          handoff_after_failures: 2
        }),
        "pipelines.create"
      )
      yield* createStage(owner, pipeline.id, "Open", 1)
      const channel = yield* linkWebChannel(owner, pipeline.id)
      const reasonOf = (messageId: string) =>
        Effect.map(
          sqlRows<{ r: string | null }>`select handled_reason as r from messages where id = ${messageId}`,
          (rows) => rows[0]!.r
        )

      const first = yield* say(channel, "failing-1", "Hello?")
      yield* eventually(Effect.map(reasonOf(first), (r) => r === "provider_error" || undefined), 20_000)
      const id = (yield* sqlRows<{ id: number }>`select conversation_id as id from messages where id = ${first}`)[0]!.id
      expect(ok(yield* get(owner, `/api/user/conversations/${id}`), "conversations.get").handoff.state).toBe("ai")

      const second = yield* say(channel, "failing-1", "Anyone?")
      yield* eventually(Effect.map(reasonOf(second), (r) => r === "provider_error" || undefined), 20_000)
      const waiting = yield* eventually(
        Effect.map(get(owner, `/api/user/conversations/${id}`), (r) => {
          const c = ok(r, "conversations.get")
          return c.handoff.state === "waiting" ? c : undefined
        }),
        20_000
      )
      expect(waiting.handoff).toMatchObject({ requested_by: "rule", reason: "2 replies in a row could not be made" })
      const bridge = yield* eventually(
        Effect.map(
          sqlRows<
            { message: string }
          >`select message from messages where conversation_id = ${id} and call_type = 'handoff_bridge'
                                     and status = 'sent_to_user'`,
          (rows) => rows[0]
        ),
        20_000
      )
      expect(bridge.message).toBe(
        "I'm bringing in a member of our team to help with this. They will reply here shortly."
      )
    }))

  it.effect("the website widget's history shows the visitor the fallback message, never the reply that failed nor the provider's error", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id, { credits: 100, is_subscription_active: true })
      const pipeline = ok(
        yield* post(owner, "/api/user/pipelines", {
          name: "Remote widget",
          agent_type_id: 1,
          ai_model_id: 11,
          language_id: 1,
          reply_debounce_ms: 0
        }),
        "pipelines.create"
      )
      yield* createStage(owner, pipeline.id, "Open", 1)
      const widget = ok(
        yield* post(owner, "/api/user/channels", {
          kind: "widget",
          pipeline_id: pipeline.id,
          allowed_origins: ["https://shop.example.com"]
        }),
        "channels.create"
      )
      const { baseUrl, receiverUrl } = yield* TestServer
      const origin = { origin: "https://shop.example.com" }
      const session = ok(
        yield* fetchJson(`${baseUrl}/api/widget/session`, {
          method: "POST",
          headers: { ...origin, "content-type": "application/json" },
          body: JSON.stringify({ client_id: widget.client_id })
        }),
        "widget.session"
      )
      const auth = { ...origin, authorization: `Bearer ${session.session}` }
      const sent = yield* fetchJson(`${receiverUrl}/web-chat/message`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ contact_id: session.contact_id, message: "Hello?" })
      })
      expect(sent.status).toBe(200)
      // the failed reply is stored (with the provider's error), and the fallback goes out as the bridge of a handoff
      yield* eventually(
        Effect.map(
          sqlRows<{ n: number }>`
            select count(*)::int as n from messages where conversation_id = ${session.conversation_id}
              and role = 'assistant' and ((status = 'failed') or (call_type = 'handoff_bridge' and status = 'sent_to_user'))`,
          (rows) => rows[0]!.n === 2 || undefined
        ),
        20_000
      )
      const history = ok(yield* fetchJson(`${baseUrl}/api/widget/messages`, { headers: auth }), "widget.history").data
      expect(history.map((m) => [m.role, m.message])).toEqual([
        ["assistant", "Sorry, I could not answer that just now. A member of our team will get back to you."],
        ["user", "Hello?"]
      ])
      expect(JSON.stringify(history)).not.toContain("overloaded")
    }))
})
