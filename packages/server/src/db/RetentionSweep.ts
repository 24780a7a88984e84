/**
 * A retention: one runner (a cluster singleton) deletes what is past its age in batches, at once again while
 * a batch comes back full, then every `retention` (at most hourly); `deleted` counts the rows it removed.
 * A failed sweep is logged and tried again at the next turn. ClusterRetention.ts, evals' SandboxRetention.ts, and
 * knowledge/UsageFold.ts (which folds rather than deletes, on the same schedule).
 */
import { Singleton } from "@effect/cluster"
import type { SqlClient } from "@effect/sql"
import { Duration, Effect, Metric, Schedule } from "effect"

export const retentionSweep = <E, R = SqlClient.SqlClient>(options: {
  readonly name: string
  readonly retention: Duration.DurationInput
  readonly batchSize: number
  readonly deleted: Metric.Metric.Counter<number>
  /** Deletes at most `batchSize` rows older than `retentionMs`: how many it deleted. */
  readonly deleteBatch: (retentionMs: number) => Effect.Effect<number, E, R>
}) =>
  Singleton.make(
    options.name,
    Effect.gen(function*() {
      const retentionMs = Duration.toMillis(options.retention)
      const sweep = Effect.gen(function*() {
        for (;;) {
          const n = yield* options.deleteBatch(retentionMs)
          if (n > 0) yield* Metric.incrementBy(options.deleted, n)
          if (n < options.batchSize) return
        }
      }).pipe(Effect.catchAllCause(Effect.logWarning))
      yield* Effect.repeat(sweep, Schedule.spaced(Duration.millis(Math.min(retentionMs, 3_600_000))))
    })
  )
