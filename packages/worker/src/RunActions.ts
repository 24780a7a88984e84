/**
 * Action runs as a durable workflow: the runs one trigger wrote (a stage entry, a message, an AI reply)
 * are sent one after the other in action order, so a `from_action` variable can read the response of an
 * action that ran before it. Each run is prepared (max_fires, required variables, the rendered request)
 * and then attempted up to 1 + `retries` times, each attempt an activity and each wait a durable sleep
 * with exponential backoff and jitter: a restart resumes where the run was and never repeats a finished
 * attempt.
 */
import { Singleton } from "@effect/cluster"
import { Activity, DurableClock, Workflow } from "@effect/workflow"
import { ActionAttemptOutcome, ActionPrepared, ActionRuns } from "@parley/domain"
import { Duration, Effect, Layer, Schedule, Schema, Stream } from "effect"

export const RunActions = Workflow.make({
  name: "RunActions",
  payload: {
    groupKey: Schema.String,
    runIds: Schema.Array(Schema.Int),
    retryBaseMs: Schema.Int
  },
  idempotencyKey: ({ groupKey }) => groupKey
})

/**
 * The wait before attempt `attempt + 1`: base x 2^(attempt-1), with ±20 % jitter. The jitter is derived
 * from the run and attempt rather than drawn, so a replayed workflow computes the same wait.
 */
export const backoffMs = (baseMs: number, runId: number, attempt: number) => {
  let h = (runId * 2654435761 + attempt * 40503) >>> 0
  h = Math.imul(h ^ (h >>> 16), 2246822507) >>> 0
  const jitter = 0.8 + ((h % 1000) / 1000) * 0.4
  return Math.max(0, Math.round(baseMs * 2 ** (attempt - 1) * jitter))
}

export const RunActionsLive = RunActions.toLayer(
  Effect.fn("RunActions")(function*({ retryBaseMs, runIds }) {
    const runs = yield* ActionRuns
    for (const runId of runIds) {
      const prepared = yield* Activity.make({
        name: `prepare-${runId}`,
        success: ActionPrepared,
        execute: runs.prepare(runId)
      })
      if (!prepared.send) continue
      for (let attempt = 1; attempt <= prepared.maxAttempts; attempt++) {
        const nextDelayMs = attempt < prepared.maxAttempts ? backoffMs(retryBaseMs, runId, attempt) : null
        const outcome = yield* Activity.make({
          name: `attempt-${runId}-${attempt}`,
          success: ActionAttemptOutcome,
          execute: runs.attempt(runId, attempt, nextDelayMs)
        })
        if (outcome.done || !outcome.retryable || nextDelayMs === null) break
        // `inMemoryThreshold` must be Duration.zero, not 0: short sleeps are otherwise not persisted
        yield* DurableClock.sleep({
          name: `backoff-${runId}-${attempt}`,
          duration: Duration.millis(nextDelayMs),
          inMemoryThreshold: Duration.zero
        })
      }
    }
  })
)

/**
 * Hands runs to the workflow engine: at once when the database says runs were written, and every
 * `every` in case a notification was missed. A group handed over twice is one workflow (its key).
 */
export const ActionDispatcherLive = (
  options: { readonly every: Duration.DurationInput; readonly retryBaseMs: number }
) =>
  Singleton.make(
    "RunActions/dispatcher",
    Effect.gen(function*() {
      const runs = yield* ActionRuns
      const drain = runs.undispatched(100).pipe(
        Effect.flatMap(Effect.forEach(({ groupKey, runIds }) =>
          Effect.gen(function*() {
            yield* RunActions.execute({ groupKey, runIds: [...runIds], retryBaseMs: options.retryBaseMs }, {
              discard: true
            })
            yield* runs.markDispatched(runIds)
          }), { discard: true })),
        Effect.catchAllCause(Effect.logWarning)
      )
      yield* Stream.merge(runs.written, Stream.tick(options.every)).pipe(
        Stream.buffer({ capacity: 1, strategy: "sliding" }),
        Stream.runForEach(() => drain)
      )
    })
  )

/**
 * The guard of DeliverReply's retry sweep, for action runs: @effect/cluster now and then loses a short
 * durable wake-up, so every failed attempt records when the next one is due and this sweep resumes any
 * run group that is overdue. Resuming a workflow that is not suspended does nothing.
 */
export const ActionRetrySweepLive = (everyMs: number) =>
  Singleton.make(
    "RunActions/retry-sweep",
    Effect.gen(function*() {
      const runs = yield* ActionRuns
      const sweep = Effect.gen(function*() {
        for (const { groupKey, runIds } of yield* runs.overdue(everyMs)) {
          yield* Effect.logWarning("Resuming an overdue action retry").pipe(Effect.annotateLogs({ groupKey }))
          const executionId = yield* RunActions.executionId({ groupKey, runIds: [...runIds], retryBaseMs: 0 })
          yield* RunActions.resume(executionId)
        }
      }).pipe(Effect.catchAllCause(Effect.logWarning))
      yield* Effect.repeat(sweep, Schedule.spaced(Duration.millis(everyMs)))
    })
  )

export const ActionEngineLive = (
  options: { readonly every: Duration.DurationInput; readonly retryBaseMs: number; readonly sweepMs: number }
) => Layer.mergeAll(RunActionsLive, ActionDispatcherLive(options), ActionRetrySweepLive(options.sweepMs))
