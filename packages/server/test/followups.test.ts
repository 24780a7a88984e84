/**
 * Followup sequences end to end, with minute intervals driven by a controllable clock (real time plus an
 * offset the test moves forward; see support/OffsetClock.ts) instead of waiting: the followups go out in
 * order (stored and at the signed reply webhook), a contact's answer and the agent's reply re-arm the step, the opportunity
 * moves after the last interval and that move runs the new stage's automations (its opening message),
 * and the pipeline's followup_limit caps the followups of a conversation but not the move.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import {
  assistantMessages,
  awaitingInterval,
  conversationOf,
  followupSetup,
  followupsIn,
  hooks,
  MINUTE,
  passInterval,
  sequenceOf,
  stageOf,
  started
} from "./support/Followups.js"
import { makeOffsetClock } from "./support/OffsetClock.js"
import { createStage, get, ok, post, put, sqlRows } from "./support/Opportunities.js"
import { TestServerLive } from "./support/TestServer.js"
import { say } from "./support/WebChat.js"
import { eventually, webhookReceiver } from "./support/WebhookReceiver.js"

const clock = makeOffsetClock()

layer(
  TestServerLive({ OUTBOUND_ALLOW_PRIVATE: "true", ENGINE_SWEEP_INTERVAL_MS: "1000" }).pipe(Layer.provide(clock.layer)),
  { excludeTestServices: true }
)("followup sequences", (it) => {
  it.effect("sends the followups in order after each interval, then moves the stage, whose opening message goes out", () =>
    Effect.scoped(Effect.gen(function*() {
      const receiver = yield* webhookReceiver(() => "ok")
      const { channel, noResponse, nurture, owner } = yield* followupSetup(receiver.url, { intervals: 2 })
      const { conversationId, opportunityId } = yield* started(channel, "lee-1", receiver.received)
      expect(yield* stageOf(opportunityId)).toBe(nurture.id)

      // nothing before the first interval is over
      yield* Effect.sleep("1200 millis")
      expect(yield* followupsIn(conversationId)).toHaveLength(0)

      yield* passInterval(clock, opportunityId, 1, MINUTE)
      const [first] = yield* eventually(
        Effect.map(
          followupsIn(conversationId),
          (rows) => rows.length === 1 && rows[0]!.status === "sent_to_user" ? rows : undefined
        )
      )
      expect(first).toMatchObject({ followup_step: 1, stage_id: nurture.id })
      expect(first!.message).toContain("just following up")
      // the followup's instructions are followed, never said; its assets are written to be shared
      expect(first!.message).not.toContain("Ask whether")
      expect(first!.message).toContain("This may help: Our brochure is at https://example.com/brochure.pdf")
      // the step is counted once the entity's answer reaches the workflow, just after the message is sent
      yield* eventually(Effect.map(sequenceOf(opportunityId), (s) => s?.steps_done === 1 ? s : undefined))
      expect(yield* sequenceOf(opportunityId)).toMatchObject({ status: "running", steps_done: 1 })
      yield* awaitingInterval(opportunityId, 2)

      // the second interval is two minutes: one minute more is not enough
      yield* clock.advance(MINUTE)
      yield* Effect.sleep("1200 millis")
      expect(yield* followupsIn(conversationId)).toHaveLength(1)
      expect(yield* stageOf(opportunityId)).toBe(nurture.id)

      yield* clock.advance(MINUTE)
      const opening = yield* eventually(
        Effect.map(
          assistantMessages(conversationId),
          (rows) => rows.find((r) => r.call_type === "opening" && r.status === "sent_to_user")
        )
      )
      expect(opening.message).toBe("We will close your request for now; write any time to pick it up again.")
      const messages = yield* assistantMessages(conversationId)
      expect(messages.map((m) => [m.call_type, m.followup_step])).toEqual([["ai", null], ["followup", 1], [
        "followup",
        2
      ], ["opening", null]])
      expect(messages[2]!.message).toContain("checking in once more")

      // the move is a stage entry like a REST move, and the sequence is over
      expect(yield* stageOf(opportunityId)).toBe(noResponse.id)
      expect(ok(yield* get(owner, `/api/user/opportunities/${opportunityId}`), "opportunities.get").stage_id).toBe(
        noResponse.id
      )
      const entries = yield* sqlRows<{ stage_id: number; previous_stage_id: number; cause: string }>`
        select stage_id, previous_stage_id, cause from stage_entries where opportunity_id = ${opportunityId} order by id`
      expect(entries.map((e) => [Number(e.stage_id), e.cause])).toEqual([[nurture.id, "inbound"], [
        noResponse.id,
        "moved"
      ]])
      expect(yield* sequenceOf(opportunityId)).toMatchObject({
        status: "completed",
        end_reason: "moved",
        steps_done: 2,
        next_due_at: null
      })

      // every message reached the webhook once, in order
      yield* eventually(Effect.sync(() => receiver.received.length >= 4 ? true : undefined))
      yield* Effect.sleep("1000 millis")
      expect(hooks(receiver.received, channel.client_secret).map((h) => [h.message_id, h.text, h.contact_id]))
        .toEqual(messages.map((m) => [m.id, m.message, "lee-1"]))
    })))

  it.effect("a contact's answer does not end the sequence: the agent's reply re-arms the step, counted from that reply", () =>
    Effect.scoped(Effect.gen(function*() {
      const receiver = yield* webhookReceiver(() => "ok")
      const { channel, nurture } = yield* followupSetup(receiver.url, { intervals: 3 })
      const { conversationId, opportunityId } = yield* started(channel, "lee-2", receiver.received)
      yield* passInterval(clock, opportunityId, 1, MINUTE)
      yield* eventually(Effect.map(followupsIn(conversationId), (rows) => rows.length === 1 ? true : undefined))
      yield* awaitingInterval(opportunityId, 2)

      yield* say(channel, "lee-2", "Thanks, not right now.")
      yield* eventually(Effect.map(assistantMessages(conversationId), (rows) => rows.length === 3 ? true : undefined))
      // the second step's two minutes count from the agent's reply, not from the first followup
      yield* clock.advance(2 * MINUTE)
      yield* awaitingInterval(opportunityId, "2-1")
      expect(yield* followupsIn(conversationId)).toHaveLength(1)
      expect(yield* sequenceOf(opportunityId)).toMatchObject({ status: "running", steps_done: 1 })
      yield* clock.advance(2 * MINUTE)
      yield* eventually(Effect.map(followupsIn(conversationId), (rows) => rows.length === 2 ? true : undefined))
      expect((yield* assistantMessages(conversationId)).map((m) => [m.call_type, m.followup_step])).toEqual([
        ["ai", null],
        ["followup", 1],
        ["ai", null],
        ["followup", 2]
      ])
      expect(yield* stageOf(opportunityId)).toBe(nurture.id)
    })))

  it.effect("while a person is asked for, and without a subscription, a step that comes due sends nothing", () =>
    Effect.scoped(Effect.gen(function*() {
      const receiver = yield* webhookReceiver(() => "ok")
      const { channel, owner } = yield* followupSetup(receiver.url, { intervals: 3 })
      const { conversationId, opportunityId } = yield* started(channel, "lee-4", receiver.received)
      ok(
        yield* post(owner, `/api/user/conversations/${conversationId}/handoff`, { action: "request", reason: "VIP" }),
        "conversations.handoff"
      )
      // the bridge message, then step 1 comes due while waiting
      yield* eventually(
        Effect.map(
          assistantMessages(conversationId),
          (rows) => rows.some((r) => r.call_type === "handoff_bridge") || undefined
        )
      )
      yield* passInterval(clock, opportunityId, 1, MINUTE)
      ok(
        yield* post(owner, `/api/user/conversations/${conversationId}/handoff`, { action: "return" }),
        "conversations.handoff"
      )
      // step 2 comes due without a subscription
      yield* sqlRows`update workspaces set is_subscription_active = false where id = ${owner.workspace_id}`
      yield* awaitingInterval(opportunityId, 2)
      yield* clock.advance(2 * MINUTE)
      yield* eventually(Effect.map(sequenceOf(opportunityId), (s) => (s?.steps_done ?? 0) >= 2 || undefined))
      expect(yield* followupsIn(conversationId)).toHaveLength(0)
    })))

  it.effect("followup_limit caps the followups of a conversation; the move after the last interval still happens", () =>
    Effect.scoped(Effect.gen(function*() {
      const receiver = yield* webhookReceiver(() => "ok")
      const { channel, noResponse, nurture, owner } = yield* followupSetup(receiver.url, {
        intervals: 3,
        followupLimit: 1
      })
      expect(ok(yield* get(owner, `/api/user/stages/${nurture.id}/followup`), "followups.get").followup!.max_messages)
        .toBe(1)
      const { conversationId, opportunityId } = yield* started(channel, "lee-3", receiver.received)
      // the three intervals: 1, 2 and 3 minutes, each counted from the end of the one before
      for (const step of [1, 2, 3]) {
        yield* awaitingInterval(opportunityId, step)
        yield* passInterval(clock, opportunityId, step, step * MINUTE)
      }
      yield* eventually(Effect.map(stageOf(opportunityId), (stage) => stage === noResponse.id ? true : undefined))
      yield* eventually(
        Effect.map(assistantMessages(conversationId), (rows) =>
          rows.some((r) => r.call_type === "opening")
            ? true
            : undefined)
      )
      yield* Effect.sleep("1000 millis")
      expect((yield* assistantMessages(conversationId)).map((m) => [m.call_type, m.followup_step])).toEqual([
        ["ai", null],
        ["followup", 1],
        ["opening", null]
      ])
      expect(yield* sequenceOf(opportunityId)).toMatchObject({
        status: "completed",
        end_reason: "moved",
        steps_done: 3
      })
    })))

  it.effect("a draft followup starts nothing; an opportunity that leaves the stage ends its sequence", () =>
    Effect.scoped(Effect.gen(function*() {
      const receiver = yield* webhookReceiver(() => "ok")
      const draft = yield* followupSetup(receiver.url, { intervals: 1 })
      ok(
        yield* put(draft.owner, `/api/user/stages/${draft.nurture.id}/followup`, { is_active: false }),
        "followups.save"
      )
      const first = yield* say(draft.channel, "lee-4", "Hello")
      const { opportunityId } = yield* conversationOf(first)
      yield* eventually(Effect.sync(() => receiver.received.length >= 1 ? true : undefined))
      yield* Effect.sleep("1000 millis")
      expect(yield* sequenceOf(opportunityId)).toBeUndefined()

      const otherReceiver = yield* webhookReceiver(() => "ok")
      const other = yield* followupSetup(otherReceiver.url, { intervals: 1 })
      const moved = yield* started(other.channel, "lee-5", otherReceiver.received)
      const elsewhere = yield* createStage(other.owner, other.pipeline.id, "Qualified", 3)
      ok(
        yield* put(other.owner, `/api/user/opportunities/${moved.opportunityId}`, { stage_id: elsewhere.id }),
        "opportunities.update"
      )
      yield* clock.advance(MINUTE)
      const sequence = yield* eventually(
        Effect.map(sequenceOf(moved.opportunityId), (s) => s?.status === "cancelled" ? s : undefined)
      )
      expect(sequence!.end_reason).toBe("stage_left")
      expect(yield* followupsIn(moved.conversationId)).toHaveLength(0)
      expect(yield* stageOf(moved.opportunityId)).toBe(elsewhere.id)
    })))
})
