/**
 * A stage's followup sequence (SPEC.md 4.5 `create_followup`) for one stage entry: for each interval in
 * order, a durable wait, then the conversation entity writes and sends a followup if the contact has not
 * written since the sequence started (checked there, in order with replies, by message order). A contact
 * message, a stage change or a deactivated followup ends the sequence; the pipeline's `followup_limit`
 * stops further followups but not the sequence. After the last interval the opportunity moves to
 * `after_followup_stage_id`.
 *
 * Each wait is a DurableClock and each step an activity, so a restart resumes where it stopped and never
 * repeats a finished step; the followup itself is a persisted entity request with a primary key per step,
 * sent once. Every step records when the next is due (`next_due_at`), so the sweep below can resume a
 * sequence whose wake-up the cluster lost (see delivery/RetrySweep.ts in the server for that race).
 */
import { Singleton } from "@effect/cluster"
import { Activity, DurableClock } from "@effect/workflow"
import { endsSequence, FollowupEnd, FollowupOutcome, FollowupPlan, FollowupSequences } from "@parley/domain"
import { Duration, Effect, Schedule, Schema } from "effect"
import { Conversation } from "./Conversation.js"
import { FollowupSequence } from "./FollowupWorkflow.js"

const handOver = Schedule.exponential("200 millis").pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(8)))

export const FollowupSequenceLive = FollowupSequence.toLayer(
  Effect.fn("FollowupSequence")(function*({ entryId }) {
    const sequences = yield* FollowupSequences
    const client = yield* Conversation.client
    const plan = yield* Activity.make({
      name: "plan",
      success: Schema.NullOr(FollowupPlan),
      execute: Effect.map(sequences.plan(entryId), (p) => p._tag === "Some" ? p.value : null)
    })
    if (plan === null) return
    const { conversationId, delaysMs, sequenceId } = plan
    for (let i = 0; i < delaysMs.length; i++) {
      const step = i + 1
      // `inMemoryThreshold` must be Duration.zero: shorter waits would otherwise not be persisted
      yield* DurableClock.sleep({
        name: `interval-${step}`,
        duration: Duration.millis(delaysMs[i]!),
        inMemoryThreshold: Duration.zero
      })
      const outcome = yield* Activity.make({
        name: `step-${step}`,
        success: FollowupOutcome,
        execute: conversationId === null
          ? sequences.check(sequenceId)
          : client(conversationId).Followup({ sequenceId, step }).pipe(
            Effect.retry({ schedule: handOver, while: (e) => e._tag !== "AlreadyProcessingMessage" }),
            Effect.orDie
          )
      })
      if (endsSequence(outcome)) {
        yield* Activity.make({ name: `cancel-${step}`, execute: sequences.cancel(sequenceId, outcome) })
        return
      }
      // after the last step the move is due at once
      yield* Activity.make({
        name: `advance-${step}`,
        execute: sequences.advance(sequenceId, step, delaysMs[i + 1] ?? 0)
      })
    }
    yield* Activity.make({ name: "finish", success: FollowupEnd, execute: sequences.finish(sequenceId) })
  })
)

/**
 * Resumes running sequences whose next step is overdue by more than `every` (one runner of the cluster
 * runs it). Resuming a workflow that is not suspended, or whose wait is not over, does nothing.
 */
export const FollowupSweepLive = (every: Duration.DurationInput) =>
  Singleton.make(
    "FollowupSequence/sweep",
    Effect.gen(function*() {
      const sequences = yield* FollowupSequences
      const sweep = Effect.gen(function*() {
        for (const entryId of yield* sequences.overdue(Duration.toMillis(every))) {
          yield* Effect.logWarning("Resuming an overdue followup sequence").pipe(Effect.annotateLogs({ entryId }))
          yield* FollowupSequence.resume(yield* FollowupSequence.executionId({ entryId }))
        }
      }).pipe(Effect.catchAllCause(Effect.logWarning))
      yield* Effect.repeat(sweep, Schedule.spaced(every))
    })
  )
