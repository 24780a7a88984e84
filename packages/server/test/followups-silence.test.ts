/**
 * Followups re-engage silence (docs/agent.md, "Followups"): a sequence counts silence from the last message sent
 * to the contact. The widget's way in (Initiate opens the conversation and the opportunity before anyone writes)
 * gets its followup an interval after the agent's reply; a contact's message that gets no answer pauses the step
 * until a message is sent to them, and that message re-arms it. The clock is the suite's offset clock.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ok } from "./support/Contract.js"
import {
  assistantMessages,
  awaitingInterval,
  followupSetup,
  followupsIn,
  MINUTE,
  pausedOn,
  sequenceOf
} from "./support/Followups.js"
import { makeOffsetClock } from "./support/OffsetClock.js"
import { post, sqlRows } from "./support/Opportunities.js"
import { TestServerLive } from "./support/TestServer.js"
import { initiate, say } from "./support/WebChat.js"
import { eventually, webhookReceiver } from "./support/WebhookReceiver.js"

const clock = makeOffsetClock()

const opportunityOf = (conversationId: number) =>
  Effect.map(
    sqlRows<{ opportunity_id: number }>`
      select opportunity_id from conversation_opportunity where conversation_id = ${conversationId}`,
    (rows) => Number(rows[0]!.opportunity_id)
  )

layer(
  TestServerLive({ OUTBOUND_ALLOW_PRIVATE: "true", ENGINE_SWEEP_INTERVAL_MS: "1000" }).pipe(Layer.provide(clock.layer)),
  { excludeTestServices: true }
)("followups count silence from the last message sent", (it) => {
  it.effect("a widget-style conversation opened before anyone wrote gets its followup an interval after the reply", () =>
    Effect.scoped(Effect.gen(function*() {
      const receiver = yield* webhookReceiver(() => "ok")
      const { channel } = yield* followupSetup(receiver.url, { intervals: 2 })
      const session = ok(yield* initiate(channel, "sam-1"), "webChat.initiate")
      const conversationId = Number(session.conversation_id)
      const opportunityId = yield* eventually(
        Effect.map(opportunityOf(conversationId).pipe(Effect.orElseSucceed(() => undefined)), (id) => id)
      )
      // the sequence started with the opportunity, before any message
      yield* awaitingInterval(opportunityId, 1)
      yield* say(channel, "sam-1", "Hi, what is Parley?")
      yield* eventually(Effect.sync(() => receiver.received.length >= 1 ? true : undefined))

      // a minute after the sequence began the agent's reply is seconds old: the step waits on from the reply
      yield* clock.advance(MINUTE)
      yield* awaitingInterval(opportunityId, "1-1")
      expect(yield* followupsIn(conversationId)).toHaveLength(0)
      expect(yield* sequenceOf(opportunityId)).toMatchObject({ status: "running", steps_done: 0 })
      yield* clock.advance(MINUTE)
      const [first] = yield* eventually(
        Effect.map(followupsIn(conversationId), (rows) => rows.length === 1 ? rows : undefined)
      )
      expect(first).toMatchObject({ followup_step: 1 })

      // the contact answers the followup and gets a reply: the next step counts from that reply
      yield* awaitingInterval(opportunityId, 2)
      yield* say(channel, "sam-1", "Maybe later.")
      yield* eventually(Effect.map(assistantMessages(conversationId), (rows) => rows.length === 3 || undefined))
      yield* clock.advance(2 * MINUTE)
      yield* awaitingInterval(opportunityId, "2-1")
      expect(yield* followupsIn(conversationId)).toHaveLength(1)
      yield* clock.advance(2 * MINUTE)
      yield* eventually(Effect.map(followupsIn(conversationId), (rows) => rows.length === 2 || undefined))
      expect((yield* assistantMessages(conversationId)).map((m) => m.call_type)).toEqual([
        "ai",
        "followup",
        "ai",
        "followup"
      ])
    })))

  it.effect("a contact's message that gets no answer pauses the step; the next message sent re-arms it", () =>
    Effect.scoped(Effect.gen(function*() {
      const receiver = yield* webhookReceiver(() => "ok")
      const { channel, owner } = yield* followupSetup(receiver.url, { intervals: 1 })
      const first = yield* say(channel, "sam-2", "Hi, what is Parley?")
      const [row] = yield* sqlRows<
        { conversation_id: number }
      >`select conversation_id from messages where id = ${first}`
      const conversationId = Number(row!.conversation_id)
      const opportunityId = yield* opportunityOf(conversationId)
      yield* eventually(Effect.sync(() => receiver.received.length >= 1 ? true : undefined))
      yield* awaitingInterval(opportunityId, 1)

      // a person is asked for (the bridge message goes out), and the contact writes: the agent stays silent
      const handoff = (action: string) =>
        Effect.map(
          post(owner, `/api/user/conversations/${conversationId}/handoff`, { action, reason: "VIP" }),
          (r) => ok(r, "conversations.handoff")
        )
      yield* handoff("request")
      yield* eventually(Effect.map(assistantMessages(conversationId), (rows) => rows.length === 2 || undefined))
      yield* say(channel, "sam-2", "Hello? Anyone there?")
      yield* clock.advance(MINUTE)
      expect(yield* eventually(pausedOn(opportunityId).pipe(Effect.map((d) => d ?? undefined)))).toBe("resume-1")

      // paused: however long the silence, nothing is sent while the contact waits for an answer
      yield* clock.advance(10 * MINUTE)
      yield* Effect.sleep("1500 millis")
      expect(yield* followupsIn(conversationId)).toHaveLength(0)
      expect(yield* sequenceOf(opportunityId)).toMatchObject({ status: "running", steps_done: 0 })

      // an operator answers and hands the conversation back: the sweep resumes the step, which waits from that answer
      yield* handoff("take")
      ok(
        yield* post(owner, `/api/user/${conversationId}/messages`, { message: "Sorry for the wait, I am here now." }),
        "messages.send"
      )
      yield* handoff("return")
      yield* awaitingInterval(opportunityId, "1-2")
      expect(yield* pausedOn(opportunityId)).toBeNull()
      expect(yield* followupsIn(conversationId)).toHaveLength(0)
      yield* clock.advance(MINUTE)
      yield* eventually(Effect.map(followupsIn(conversationId), (rows) => rows.length === 1 || undefined))
      yield* eventually(Effect.map(sequenceOf(opportunityId), (s) => s?.status === "completed" || undefined))
    })))
})
