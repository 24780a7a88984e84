/**
 * Issue 38, followups on a channel with a service window: against the fake Graph API, with the server's clock
 * moved forward. A step inside WhatsApp's 24-hour window is sent through the Graph API; a step after the window
 * closed is skipped with `outside_service_window` and the sequence goes on to its end, whose stage's opening is
 * skipped too (no free-form greeting may go).
 */
import { expect, layer } from "@effect/vitest"
import { followupSteps } from "@parley/worker"
import { Effect, Layer, Metric } from "effect"
import { API_VERSION, fakeGraph, graphState, inbound, postWebhook, sends, webhookFor } from "./support/FakeGraph.js"
import {
  assistantMessages,
  awaitingInterval,
  followupSetup,
  followupsIn,
  MINUTE,
  passInterval,
  sequenceOf,
  stageOf
} from "./support/Followups.js"
import { makeOffsetClock } from "./support/OffsetClock.js"
import { freshPhone, ok, post, put, sqlRows } from "./support/Opportunities.js"
import { TestServerLive } from "./support/TestServer.js"
import { eventually } from "./support/WebhookReceiver.js"

const APP_SECRET = "followups-app-secret"
const clock = makeOffsetClock()
const graph = graphState("106540352242923", "EAAG-followups-token")
// the fake keeps Meta's window by the server's (moved) clock
graph.now = () => Date.now() + clock.offsetMs()

const Server = Layer.unwrapScoped(
  Effect.map(fakeGraph(graph), (url) => TestServerLive({ META_GRAPH_API_URL: url, ENGINE_SWEEP_INTERVAL_MS: "1000" }))
).pipe(Layer.provide(clock.layer))

const outsideWindow = Effect.map(
  Metric.value(Metric.tagged(followupSteps, "outcome", "outside_service_window")),
  (s) => s.count
)

/** The pipeline on WhatsApp, a contact who wrote, and the AI's reply sent: the sequence is waiting for step 1. */
const contactReplied = (setup: Effect.Effect.Success<ReturnType<typeof followupSetup>>) =>
  Effect.gen(function*() {
    const channel = ok(
      yield* post(setup.owner, "/api/user/channels", {
        kind: "whatsapp",
        pipeline_id: setup.pipeline.id,
        credentials: {
          phone_number_id: graph.phoneNumberId,
          access_token: graph.token,
          app_secret: APP_SECRET,
          business_account_id: graph.businessAccountId,
          api_version: API_VERSION
        }
      }),
      "channels.create"
    ) as unknown as { webhook_url: string }
    const waId = freshPhone()
    const said = yield* postWebhook(
      channel.webhook_url,
      APP_SECRET,
      webhookFor(graph, [{
        messages: [inbound(waId, `wamid.${waId}.1`, graph.now(), { type: "text", text: { body: "What is Parley?" } })],
        names: { [waId]: "Dana" }
      }])
    )
    expect(said.status).toBe(200)
    const [contact] = yield* eventually(
      Effect.map(
        sqlRows<{ conversation_id: number; opportunity_id: number }>`
          select conversation_id::int, opportunity_id::int from messages where external_message_id = ${`wamid.${waId}.1`}`,
        (rows) => rows.length > 0 ? rows : undefined
      )
    )
    const { conversation_id: conversationId, opportunity_id: opportunityId } = contact!
    yield* eventually(
      Effect.map(assistantMessages(conversationId), (rows) => rows[0]?.status === "sent_to_user" ? true : undefined),
      20_000
    )
    yield* eventually(sequenceOf(opportunityId))
    return { waId, conversationId, opportunityId }
  })

layer(Server, { excludeTestServices: true })("followups on WhatsApp", (it) => {
  it.effect("a step inside the window is sent; one after it closed is skipped and the sequence goes on", () =>
    Effect.gen(function*() {
      const setup = yield* followupSetup("https://example.com/parley-hook", { intervals: 2 })
      const { noResponse } = setup
      const { conversationId, opportunityId, waId } = yield* contactReplied(setup)
      const skippedBefore = yield* outsideWindow

      // step 1, a minute after the reply: inside the window, through the Graph API
      yield* awaitingInterval(opportunityId, 1)
      yield* passInterval(clock, opportunityId, 1, MINUTE)
      const [first] = yield* eventually(
        Effect.map(
          followupsIn(conversationId),
          (rows) => rows.length === 1 && rows[0]!.status === "sent_to_user" ? rows : undefined
        ),
        20_000
      )
      expect(sends(graph).some((r) => r.body.to === waId && r.body.text?.body === first!.message)).toBe(true)
      const sentBefore = sends(graph).filter((r) => r.body.to === waId).length

      // step 2, a day later: the window has closed, so it is skipped; the sequence ends and moves the opportunity
      yield* awaitingInterval(opportunityId, 2)
      yield* passInterval(clock, opportunityId, 2, 25 * 60 * MINUTE)
      yield* eventually(
        Effect.map(stageOf(opportunityId), (stage) => stage === noResponse.id ? true : undefined),
        20_000
      )
      expect(yield* outsideWindow).toBe(skippedBefore + 1)
      expect(yield* followupsIn(conversationId)).toHaveLength(1)
      // the "No response" stage's static opening is not sent outside the window either
      expect((yield* assistantMessages(conversationId)).filter((m) => m.call_type === "opening")).toEqual([])
      expect(sends(graph).filter((r) => r.body.to === waId)).toHaveLength(sentBefore)
    }))

  it.effect("after the window closed, a step and the next stage's opening go as the templates they name", () =>
    Effect.gen(function*() {
      const setup = yield* followupSetup("https://example.com/parley-hook", { intervals: 2 })
      const { noResponse, nurture, owner, pipeline } = setup
      ok(
        yield* post(owner, `/api/user/pipelines/${pipeline.id}/variables`, {
          name: "first_name",
          value: "opportunity.contact_name",
          type: "from_system",
          is_required: false
        }),
        "automation.createVariable"
      )
      ok(
        yield* put(owner, `/api/user/stages/${nurture.id}/followup`, {
          template: { name: "order_followup", language: "en", parameters: ["{{first_name}}", "A-17"] }
        }),
        "followups.save"
      )
      ok(
        yield* put(owner, `/api/user/stages/${noResponse.id}`, {
          opening_template: { name: "hello_world", language: "en_US" }
        }),
        "pipelines.updateStage"
      )
      const { conversationId, opportunityId, waId } = yield* contactReplied(setup)

      // step 1 a day later: the window has closed, so the followup's template goes with its parameters filled in
      yield* awaitingInterval(opportunityId, 1)
      yield* passInterval(clock, opportunityId, 1, 25 * 60 * MINUTE)
      const [first] = yield* eventually(
        Effect.map(
          followupsIn(conversationId),
          (rows) => rows.length === 1 && rows[0]!.status === "sent_to_user" ? rows : undefined
        ),
        20_000
      )
      expect(first!.message).toBe("Hi Dana, your order A-17 is waiting. Reply here to finish it.")
      const templated = sends(graph).filter((r) => r.body.to === waId && r.body.type === "template")
      expect(templated.map((r) => r.body.template)).toEqual([{
        name: "order_followup",
        language: { code: "en" },
        components: [{ type: "body", parameters: [{ type: "text", text: "Dana" }, { type: "text", text: "A-17" }] }]
      }])

      // step 2: sent as the template again; then the move to "No response", whose opening goes as hello_world
      yield* awaitingInterval(opportunityId, 2)
      yield* passInterval(clock, opportunityId, 2, 2 * MINUTE)
      yield* eventually(
        Effect.map(stageOf(opportunityId), (stage) => stage === noResponse.id ? true : undefined),
        20_000
      )
      const opening = yield* eventually(
        Effect.map(
          assistantMessages(conversationId),
          (rows) => rows.find((m) => m.call_type === "opening" && m.status === "sent_to_user")
        ),
        20_000
      )
      expect(opening.message).toMatch(/^Welcome and congratulations!!/)
      expect(yield* followupsIn(conversationId)).toHaveLength(2)
      expect(
        sends(graph).filter((r) => r.body.to === waId && r.body.type === "template").map((r) => r.body.template.name)
      )
        .toEqual(["order_followup", "order_followup", "hello_world"])
      expect(sends(graph).filter((r) => r.body.to === waId && r.body.type !== "template")).toHaveLength(1)
    }))
})
