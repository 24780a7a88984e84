/**
 * The agent with the `openai` provider against a local fake OpenAI-compatible server (Responses API):
 * the reply's cost comes from the catalogue's prices and the usage the provider reports, is summed on
 * the conversation and charged to the workspace (a handoff bridge the model writes as well); a provider that keeps
 * failing is retried with backoff
 * and then recorded on the message as failed (the contact's message: `provider_error`).
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { type OpenAiRequest, type OpenAiRequestBody, openAiResponse, textOutput } from "./support/FakeOpenAi.js"
import { createPipeline, createStage, linkWebChannel, ok, post, put, sqlRows } from "./support/Opportunities.js"
import { seedUser, TestServerLive } from "./support/TestServer.js"
import { say } from "./support/WebChat.js"
import { eventually } from "./support/WebhookReceiver.js"

/** What the fake server received, and how it answers next. */
const fake = { requests: [] as Array<OpenAiRequest>, mode: "ok" as "ok" | "fail" }

const responseBody = (body: OpenAiRequestBody | undefined) =>
  openAiResponse(`resp_${fake.requests.length}`, body?.model ?? "", [
    textOutput("The annual plan is 990 euros per year.")
  ], {
    input: 1000,
    output: 500
  })

const FakeOpenAi = Layer.unwrapScoped(Effect.gen(function*() {
  const server = yield* Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<Http.Server>((resolve) => {
        const s = Http.createServer((req, res) => {
          let raw = ""
          req.on("data", (c) => (raw += c))
          req.on("end", () => {
            const body: OpenAiRequestBody | undefined = raw ? JSON.parse(raw) : undefined
            fake.requests.push({ url: req.url, body, authorization: req.headers.authorization })
            if (req.url !== "/v1/responses") return res.writeHead(404).end()
            if (fake.mode === "fail") {
              return res.writeHead(500, { "content-type": "application/json" }).end(
                JSON.stringify({ error: { message: "overloaded" } })
              )
            }
            res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(responseBody(body)))
          })
        })
        s.listen(0, "127.0.0.1", () => resolve(s))
      })
    ),
    (s) =>
      Effect.promise(() =>
        new Promise<void>((r) => {
          s.closeAllConnections()
          s.close(() => r())
        })
      )
  )
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
  return TestServerLive({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: url, ENGINE_SWEEP_INTERVAL_MS: "1000" })
}))

const setup = Effect.gen(function*() {
  const owner = yield* seedUser()
  yield* sqlRows`update workspaces set credits = 10, is_subscription_active = true where id = ${owner.workspace_id}`
  const pipeline = yield* createPipeline(owner, "Sales")
  // GPT-4.1 mini: 0.40 USD per million input tokens, 1.60 per million output tokens
  ok(
    yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { ai_model_id: 11, reply_debounce_ms: 0 }),
    "pipelines.update"
  )
  yield* createStage(owner, pipeline.id, "Open", 1)
  const channel = yield* linkWebChannel(owner, pipeline.id)
  return { owner, channel, pipeline }
})

const replyTo = (id: string) =>
  eventually(
    Effect.map(
      sqlRows<
        {
          message: string | null
          status: string
          cost: number
          model: string | null
          input_tokens: number
          output_tokens: number
          error: string | null
          conversation_id: number
        }
      >`
        select message, status, cost_for_user::float8 as cost, model, input_tokens, output_tokens, error, conversation_id
        from messages where in_reply_to = ${id}`,
      (rows) => rows[0]?.status === "ai_generated" ? undefined : rows[0]
    ),
    20_000
  )

layer(FakeOpenAi, { excludeTestServices: true })("the agent on the openai provider", (it) => {
  it.effect("charges the catalogue price of the reported usage to the message, the conversation and the workspace", () =>
    Effect.gen(function*() {
      fake.mode = "ok"
      fake.requests.length = 0
      const { channel, owner } = yield* setup
      const id = yield* say(channel, "c-1", "How much is the annual plan?")
      const reply = yield* replyTo(id)
      expect(reply).toMatchObject({
        message: "The annual plan is 990 euros per year.",
        status: "sent_to_user",
        model: "gpt-4.1-mini",
        input_tokens: 1000,
        output_tokens: 500
      })
      // (1000 × 0.40 + 500 × 1.60) / 1,000,000
      expect(reply!.cost).toBeCloseTo(0.0012, 10)
      const [conversation] = yield* sqlRows<
        { cost: number }
      >`select cost_for_user::float8 as cost from conversations where id = ${reply!.conversation_id}`
      expect(conversation!.cost).toBeCloseTo(0.0012, 10)
      const [workspace] = yield* sqlRows<
        { credits: number }
      >`select credits::float8 as credits from workspaces where id = ${owner.workspace_id}`
      expect(workspace!.credits).toBeCloseTo(10 - 0.0012, 6)
      // the request: the model, the key, the system prompt with the pipeline's agent, then the contact's words
      const request = fake.requests.find((r) => r.url === "/v1/responses")!
      expect(request.authorization).toBe("Bearer sk-test")
      expect(request.body?.model).toBe("gpt-4.1-mini")
      expect(JSON.stringify(request.body?.input)).toContain("How much is the annual plan?")
      expect(JSON.stringify(request.body?.input)).toContain("Sales")
    }))

  it.effect("Smart Routing's router reads the contact's latest message with the context_message_count messages before it", () =>
    Effect.gen(function*() {
      fake.mode = "ok"
      fake.requests.length = 0
      const { channel, owner, pipeline } = yield* setup
      ok(
        yield* put(owner, `/api/user/pipelines/${pipeline.id}`, {
          context_message_count: 2,
          is_model_routing_enabled: true,
          is_model_routing: ["router", "simple", "moderate", "complex"].map((tier) => ({ tier, ai_model_id: 11 }))
        }),
        "pipelines.update"
      )
      const said = [
        "Do you sell tractors?",
        "What colours do the gearboxes come in?",
        "Yes, compare all of them please."
      ]
      for (const message of said) yield* replyTo(yield* say(channel, "c-3", message))
      const routed = fake.requests.filter((r) => JSON.stringify(r.body).includes("[task: classify-request]"))
      expect(routed).toHaveLength(3)
      const last = JSON.stringify(routed[2]!.body)
      // the latest message is the router's question; the two messages before it (the contact's second and
      // the agent's answer to it) are its context; the first message is past the count
      expect(last).toContain(said[2])
      expect(last).toContain(`Contact: ${said[1]}`)
      expect(last).toContain("Agent: The annual plan is 990 euros per year.")
      expect(last).not.toContain(said[0])
      // the first message had nothing before it
      expect(JSON.stringify(routed[0]!.body)).not.toContain("Conversation so far")
    }))

  it.effect("a handoff bridge the model writes is charged like a reply: on the message and to the workspace", () =>
    Effect.gen(function*() {
      fake.mode = "ok"
      fake.requests.length = 0
      const { channel, owner, pipeline } = yield* setup
      ok(
        yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { handoff_bridge_mode: "ai_generated" }),
        "pipelines.update"
      )
      const reply = yield* replyTo(yield* say(channel, "c-4", "How much is the annual plan?"))
      ok(
        yield* post(owner, `/api/user/conversations/${reply!.conversation_id}/handoff`, {
          action: "request",
          reason: "Pricing question"
        }),
        "conversations.handoff"
      )
      const bridge = yield* eventually(
        Effect.map(
          sqlRows<{ cost: number; model: string | null }>`
            select cost_for_user::float8 as cost, model from messages
            where conversation_id = ${reply!.conversation_id} and call_type = 'handoff_bridge'`,
          (rows) => rows[0]
        ),
        20_000
      )
      expect(bridge).toMatchObject({ model: "gpt-4.1-mini" })
      expect(bridge!.cost).toBeCloseTo(0.0012, 10)
      const [workspace] = yield* sqlRows<
        { credits: number }
      >`select credits::float8 as credits from workspaces where id = ${owner.workspace_id}`
      expect(workspace!.credits).toBeCloseTo(10 - 0.0012 - 0.0012, 6)
    }))

  it.effect("concurrent turns at the credit boundary never take the balance below zero: a reply it cannot pay is not made", () =>
    Effect.gen(function*() {
      fake.mode = "ok"
      const { channel, owner } = yield* setup
      // four replies of 0.0012 fit, a fifth does not
      yield* sqlRows`update workspaces set credits = 0.005 where id = ${owner.workspace_id}`
      const ids = yield* Effect.all(
        Array.from({ length: 8 }, (_, i) => say(channel, `boundary-${i}`, "How much is the annual plan?")),
        { concurrency: "unbounded" }
      )
      const handled = yield* eventually(
        Effect.map(
          sqlRows<{ id: string; reason: string | null }>`
            select id, handled_reason as reason from messages where id = any(${`{${
            ids.join(",")
          }}`}::text[]) and handled_at is not null`,
          (rows) => (rows.length === ids.length ? rows : undefined)
        ),
        30_000
      )
      const replies = yield* sqlRows<{ cost: number }>`
        select cost_for_user::float8 as cost from messages where in_reply_to = any(${`{${
        ids.join(",")
      }}`}::text[]) and status <> 'failed'`
      expect(replies).toHaveLength(4)
      expect(handled.filter((m) => m.reason === "no_credits")).toHaveLength(4)
      const [workspace] = yield* sqlRows<
        { credits: number }
      >`select credits::float8 as credits from workspaces where id = ${owner.workspace_id}`
      expect(workspace!.credits).toBeCloseTo(0.005 - 4 * 0.0012, 10)
      expect(workspace!.credits).toBeGreaterThanOrEqual(0)
    }))

  it.effect("a written bridge the credits cannot pay for gives way to the pipeline's text, at no cost", () =>
    Effect.gen(function*() {
      fake.mode = "ok"
      const { channel, owner, pipeline } = yield* setup
      ok(
        yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { handoff_bridge_mode: "ai_generated" }),
        "pipelines.update"
      )
      const reply = yield* replyTo(yield* say(channel, "c-5", "How much is the annual plan?"))
      yield* sqlRows`update workspaces set credits = 0.001 where id = ${owner.workspace_id}`
      ok(
        yield* post(owner, `/api/user/conversations/${reply!.conversation_id}/handoff`, {
          action: "request",
          reason: "Pricing question"
        }),
        "conversations.handoff"
      )
      const bridge = yield* eventually(
        Effect.map(
          sqlRows<{ cost: number; model: string | null; message: string }>`
            select cost_for_user::float8 as cost, model, message from messages
            where conversation_id = ${reply!.conversation_id} and call_type = 'handoff_bridge'`,
          (rows) => rows[0]
        ),
        20_000
      )
      expect(bridge).toMatchObject({ cost: 0, model: null })
      expect(bridge!.message).not.toBe("The annual plan is 990 euros per year.")
      const [workspace] = yield* sqlRows<
        { credits: number }
      >`select credits::float8 as credits from workspaces where id = ${owner.workspace_id}`
      expect(workspace!.credits).toBeCloseTo(0.001, 10)
    }))

  it.effect("a provider that keeps failing is retried with backoff, then the reply is recorded as failed", () =>
    Effect.gen(function*() {
      fake.mode = "fail"
      fake.requests.length = 0
      const { channel } = yield* setup
      const id = yield* say(channel, "c-2", "Hello?")
      const reply = yield* replyTo(id)
      expect(reply).toMatchObject({ status: "failed", model: "gpt-4.1-mini", cost: 0 })
      expect(reply!.error).toBeTruthy()
      // the reply's three attempts (the failure then asks for a person, whose summary calls the model too)
      const replyCalls = fake.requests.filter((r) =>
        r.url === "/v1/responses" && JSON.stringify(r.body ?? {}).includes("[task: reply]")
      )
      expect(replyCalls).toHaveLength(3)
      const [handled] = yield* sqlRows<{ handled_reason: string }>`select handled_reason from messages where id = ${id}`
      expect(handled!.handled_reason).toBe("provider_error")
    }))
})
