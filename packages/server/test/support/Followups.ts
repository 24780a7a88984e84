/** Helpers of the followup suites: a pipeline with an active followup, a contact who wrote, and what came of it. */
import { expect } from "@effect/vitest"
import { verifyServiceSignature } from "@parley/domain"
import { FollowupSequence } from "@parley/worker"
import { Effect } from "effect"
import type { OffsetClock } from "./OffsetClock.js"
import { createPipeline, createStage, ok, post, put, sqlRows } from "./Opportunities.js"
import { seedUser } from "./TestServer.js"
import { say, webCredentials } from "./WebChat.js"
import { eventually, type Received } from "./WebhookReceiver.js"

export const MINUTE = 60_000

/**
 * A pipeline whose first stage, Nurture, has an active followup moving to "No response", which sends a
 * static opening message; its web channel calls `callbackUrl`; the workspace has credits.
 */
export const followupSetup = (
  callbackUrl: string,
  options: { readonly intervals: number; readonly followupLimit?: number }
) =>
  Effect.gen(function*() {
    const owner = yield* seedUser()
    yield* sqlRows`update workspaces set credits = 100, is_subscription_active = true where id = ${owner.workspace_id}`
    const pipeline = yield* createPipeline(owner, "Sales")
    ok(
      yield* put(owner, `/api/user/pipelines/${pipeline.id}`, {
        reply_debounce_ms: 0,
        instructions: "Parley answers customer chats. A demo call takes 30 minutes.",
        ...(options.followupLimit !== undefined ? { followup_limit: options.followupLimit } : {})
      }),
      "pipelines.update"
    )
    const nurture = yield* createStage(owner, pipeline.id, "Nurture", 1)
    const noResponse = ok(
      yield* post(owner, `/api/user/pipelines/${pipeline.id}/stages`, {
        name: "No response",
        nature: "neutral",
        order: 2,
        is_opening_message: true,
        opening_message_type: "static",
        static_opening_message: "We will close your request for now; write any time to pick it up again."
      }),
      "pipelines.createStage"
    )
    const followup = ok(
      yield* put(owner, `/api/user/stages/${nurture.id}/followup`, {
        is_active: true,
        intervals: Array.from(
          { length: options.intervals },
          (_, i) => ({ interval_value: i + 1, interval_unit: "minute" })
        ),
        instructions: "Ask whether they would like to book a demo call. Keep it short.",
        assets: "Our brochure is at https://example.com/brochure.pdf",
        after_followup_stage_id: noResponse.id
      }),
      "followups.save"
    ).followup
    const channel = webCredentials(ok(
      yield* post(owner, "/api/user/channels", { kind: "web", pipeline_id: pipeline.id, callback_url: callbackUrl }),
      "channels.create"
    ))
    return { owner, pipeline, nurture, noResponse, followup, channel }
  })

export const conversationOf = (messageId: string) =>
  Effect.map(
    sqlRows<
      { conversation_id: number; opportunity_id: number }
    >`select conversation_id, opportunity_id from messages where id = ${messageId}`,
    (rows) => ({ conversationId: Number(rows[0]!.conversation_id), opportunityId: Number(rows[0]!.opportunity_id) })
  )

export const assistantMessages = (conversationId: number) =>
  sqlRows<
    { id: string; message: string; status: string; call_type: string; followup_step: number | null; stage_id: number }
  >`
    select id, message, status, call_type, followup_step, stage_id from messages
    where conversation_id = ${conversationId} and role = 'assistant' order by created_at, id`

export const sequenceOf = (opportunityId: number) =>
  Effect.map(
    sqlRows<{ id: number; status: string; end_reason: string | null; steps_done: number; next_due_at: string | null }>`
      select id, status, end_reason, steps_done, next_due_at from followup_sequences where opportunity_id = ${opportunityId} order by id`,
    (rows) => rows[0]
  )

/** The durable deferred a paused sequence waits on, or null. */
export const pausedOn = (opportunityId: number) =>
  Effect.map(
    sqlRows<{ resume_deferred: string | null }>`
      select resume_deferred from followup_sequences where opportunity_id = ${opportunityId}`,
    (rows) => rows[0]?.resume_deferred ?? null
  )

export const stageOf = (opportunityId: number) =>
  Effect.map(
    sqlRows<{ stage_id: number }>`select stage_id from opportunities where id = ${opportunityId}`,
    (rows) => Number(rows[0]!.stage_id)
  )

/** The webhook bodies in order of arrival (each signed with the channel's secret). */
export const hooks = (received: ReadonlyArray<Received>, secret: string) =>
  received.map((hit) => {
    expect(verifyServiceSignature(
      secret,
      {
        signature: hit.headers["x-service-signature"] as string,
        timestamp: hit.headers["x-service-timestamp"] as string
      },
      hit.rawBody
    )).toBe(true)
    return JSON.parse(hit.rawBody) as { message_id: string; text: string; contact_id: string }
  })

/** A contact wrote and got the agent's reply; the followup sequence of the stage they entered is running. */
export const started = (
  channel: { client_id: string; client_secret: string },
  contactId: string,
  received: ReadonlyArray<Received>
) =>
  Effect.gen(function*() {
    const first = yield* say(channel, contactId, "Hi, what is Parley?")
    const { conversationId, opportunityId } = yield* conversationOf(first)
    yield* eventually(Effect.sync(() => received.length >= 1 ? true : undefined))
    const sequence = yield* eventually(sequenceOf(opportunityId))
    expect(sequence).toMatchObject({ status: "running", steps_done: 0 })
    yield* awaitingInterval(opportunityId, 1)
    return { conversationId, opportunityId }
  })

/**
 * Waits until the sequence's workflow has stored the wake-up of interval `step` (a durable clock at now +
 * the interval). The tests move the clock forward only then: moved before, the wake-up would be set an
 * interval past the moved clock, and the step would not come due (the sequence row counts a step a moment
 * before the workflow stores its next wait, which a busy machine or native Postgres can stretch).
 */
export const awaitingInterval = (opportunityId: number, step: number | string) =>
  eventually(Effect.map(waitStored(opportunityId, step), (stored) => stored || undefined))

/** Whether the sequence's workflow has stored the wake-up named `interval-<step>`. */
const waitStored = (opportunityId: number, step: number | string) =>
  Effect.gen(function*() {
    const entry = yield* sqlRows<
      { stage_entry_id: number }
    >`select stage_entry_id from followup_sequences where opportunity_id = ${opportunityId}`
    if (entry.length === 0) return false
    const executionId = yield* FollowupSequence.executionId({ entryId: Number(entry[0]!.stage_entry_id) })
    const messageId = `Workflow/-/DurableClock/${executionId}/run/interval-${step}`
    return (yield* sqlRows`select 1 from cluster_messages where message_id = ${messageId}`).length > 0
  })

/**
 * Moves the clock past the wait of `step` (`ms`) and waits until the step has run. Silence counts from the last
 * message sent to the contact: when the agent's reply came after the sequence started (a race with the stage
 * entry), the step re-arms and waits the rest of the interval from that reply, and the clock is moved again.
 */
export const passInterval = (clock: OffsetClock, opportunityId: number, step: number, ms: number) =>
  Effect.gen(function*() {
    yield* clock.advance(ms)
    for (let round = 1;; round++) {
      const next = yield* eventually(Effect.gen(function*() {
        const s = yield* sequenceOf(opportunityId)
        if (s === undefined) return undefined
        if (s.steps_done >= step || s.status !== "running") return "ran" as const
        return (yield* waitStored(opportunityId, `${step}-${round}`)) ? "rearmed" as const : undefined
      }))
      if (next === "ran") return
      yield* clock.advance(ms)
    }
  })

export const followupsIn = (conversationId: number) =>
  Effect.map(assistantMessages(conversationId), (rows) => rows.filter((r) => r.call_type === "followup"))
