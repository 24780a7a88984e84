import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"

const Take = Schema.Struct({
  key: Schema.String,
  limit: Schema.Number,
  now: Schema.DateFromSelf,
  endsAt: Schema.DateFromSelf
})
const Taken = Schema.Struct({ taken_until: Schema.NullOr(Schema.String), blocked_until: Schema.NullOr(Schema.String) })
const Release = Schema.Struct({ key: Schema.String, until: Schema.String })

/** SQL of `rate_limits`, its only writer. Database failures are defects here. */
export class RateLimitsRepo extends Effect.Service<RateLimitsRepo>()("@parley/server/RateLimitsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * One statement, so atomic under any concurrency: counts an attempt in the key's window (a new window
     * once the old one ended) unless the window is full. `taken_until` is the window's end when counted,
     * `blocked_until` when it was full.
     */
    const take = SqlSchema.single({
      Request: Take,
      Result: Taken,
      execute: (r) =>
        sql`
          with taken as (
            insert into rate_limits as l (key, window_ends_at, count) values (${r.key}, ${r.endsAt}, 1)
            on conflict (key) do update set
              count = case when l.window_ends_at <= ${r.now} then 1 else l.count + 1 end,
              window_ends_at = case when l.window_ends_at <= ${r.now} then excluded.window_ends_at else l.window_ends_at end
            where l.window_ends_at <= ${r.now} or l.count < ${r.limit}
            returning window_ends_at
          )
          select (select window_ends_at from taken) as taken_until,
                 (select window_ends_at from rate_limits where key = ${r.key}) as blocked_until`
    })

    const release = SqlSchema.void({
      Request: Release,
      execute: (r) =>
        sql`update rate_limits set count = count - 1 where key = ${r.key} and window_ends_at = ${r.until} and count > 0`
    })

    const sweep = (now: Date) => sql`delete from rate_limits where window_ends_at <= ${now}`

    return {
      take: (key: string, limit: number, now: Date, endsAt: Date) => Effect.orDie(take({ key, limit, now, endsAt })),
      release: (key: string, until: string) => Effect.orDie(release({ key, until })),
      /** Deletes the windows that ended, so the table holds only live ones. */
      sweep: (now: Date) => Effect.orDie(Effect.asVoid(sweep(now)))
    }
  })
}) {}
