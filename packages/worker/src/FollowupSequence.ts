/**
 * A stage's followup sequence (SPEC.md 4.5 `create_followup`) for one stage entry: for each interval in
 * order, a durable wait, then the conversation entity writes and sends a followup if the contact has been silent
 * for the interval since the last message sent to them (checked there, in order with replies, by message order).
 * A message sent since the wait began re-arms it (the step waits the rest of the interval from that message); a
 * contact's message after it pauses the step until the next message is sent to them (a durable deferred, which the
 * sweep completes). A stage change or a deactivated followup ends the sequence; the pipeline's `followup_limit`
 * stops further followups but not the sequence. After the last interval the opportunity moves to
 * `after_followup_stage_id`.
 *
 * Each wait is a DurableClock and each step an activity, so a restart resumes where it stopped and never
 * repeats a finished step; the followup itself is a persisted entity request with a primary key per step,
 * sent once. Every step records when the next is due (`next_due_at`), so the sweep below can resume a
 * sequence whose wake-up the cluster lost (see engine/RetrySweep.ts in the server for that race).
 */
import { Singleton } from "@effect/cluster"
import { Activity, DurableClock, DurableDeferred } from "@effect/workflow"
import { endsSequence, FollowupEnd, FollowupOutcome, FollowupPlan, FollowupSequences } from "@parley/domain"
import { Duration, Effect, Exit, Schedule, Schema } from "effect"
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
      let wait = delaysMs[i]!
      let outcome: FollowupOutcome
      // a step waits again while messages are sent to the contact (`rearmed`), or until one is (`paused`)
      for (let round = 0;; round++) {
        const suffix = round === 0 ? `${step}` : `${step}-${round}`
        // `inMemoryThreshold` must be Duration.zero: shorter waits would otherwise not be persisted
        if (wait > 0) {
          yield* DurableClock.sleep({
            name: `interval-${suffix}`,
            duration: Duration.millis(wait),
            inMemoryThreshold: Duration.zero
          })
        }
        outcome = yield* Activity.make({
          name: `step-${suffix}`,
          success: FollowupOutcome,
          execute: conversationId === null
            ? sequences.check(sequenceId)
            : client(conversationId).Followup({ sequenceId, step, round }).pipe(
              Effect.retry({ schedule: handOver, while: (e) => e._tag !== "AlreadyProcessingMessage" }),
              Effect.orDie
            )
        })
        if (outcome === "paused") {
          const resume = DurableDeferred.make(`resume-${suffix}`)
          yield* Activity.make({ name: `pause-${suffix}`, execute: sequences.pause(sequenceId, resume.name) })
          yield* DurableDeferred.await(resume)
          wait = 0
        } else if (outcome === "rearmed") {
          wait = yield* Activity.make({
            name: `rearm-${suffix}`,
            success: Schema.Number,
            execute: sequences.remaining(sequenceId)
          })
        } else break
      }
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
        // paused sequences to which a message was sent again: their step waits from that message
        for (const { deferred, entryId } of yield* sequences.resumable) {
          const executionId = yield* FollowupSequence.executionId({ entryId })
          const resume = DurableDeferred.make(deferred)
          const token = DurableDeferred.tokenFromExecutionId(resume, { workflow: FollowupSequence, executionId })
          yield* DurableDeferred.done(resume, { token, exit: Exit.void })
          yield* sequences.resumed(entryId)
        }
      }).pipe(Effect.catchAllCause(Effect.logWarning))
      yield* Effect.repeat(sweep, Schedule.spaced(every))
    })
  )
