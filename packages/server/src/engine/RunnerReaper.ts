/**
 * Marks a runner that stopped heartbeating unhealthy in `cluster_runners`. @effect/cluster's own health
 * check marks only runners it still lists, and it lists a runner only while its heartbeat is fresher than
 * the shard lock expiry: when the check itself ran on the runner that died, it moves to a survivor after
 * that runner has already dropped out of the list, and the dead runner's row would read healthy for good.
 * A runner past the expiry has lost its shards, so the row tells operators the truth; a runner that
 * comes back heartbeats again and the library's check marks it healthy.
 */
import { Singleton } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Schedule } from "effect"

export const RunnerReaperLive = (
  options: { readonly every: Duration.DurationInput; readonly expiry: Duration.DurationInput }
) =>
  Singleton.make(
    "Parley/runner-reaper",
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const seconds = Duration.toSeconds(options.expiry)
      const reap = sql<{ address: string }>`
        update cluster_runners set healthy = false
        where healthy and last_heartbeat < now() - make_interval(secs => ${seconds})
        returning address`.pipe(
        Effect.tap((rows) =>
          Effect.forEach(rows, ({ address }) =>
            Effect.logWarning("A cluster runner stopped heartbeating: marked unhealthy").pipe(
              Effect.annotateLogs({ address })
            ))
        ),
        Effect.catchAllCause(Effect.logWarning)
      )
      yield* Effect.repeat(reap, Schedule.spaced(options.every))
    })
  )
