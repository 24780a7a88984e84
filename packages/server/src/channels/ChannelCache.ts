import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Schedule, Stream } from "effect"

/** NOTIFY channel telling every process to forget cached channels. */
const CHANNELS_CHANGED = "parley_channels_changed"
const TTL_MS = 30_000
const MAX_ENTRIES = 10_000

/**
 * Channels by client id for web-chat authentication, so an inbound message costs no lookup. An entry
 * lives at most 30 s; a channel update or rotation clears the cache at once here and, through NOTIFY,
 * in every other process on the database.
 */
export class ChannelCache extends Effect.Service<ChannelCache>()("@parley/server/ChannelCache", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const entries = new Map<string, { readonly value: unknown; readonly until: number }>()
    yield* pg.listen(CHANNELS_CHANGED).pipe(
      Stream.runForEach(() => Effect.sync(() => entries.clear())),
      Effect.catchAllCause((cause) => Effect.logWarning("channel change listener stopped; retrying", cause)),
      Effect.repeat(Schedule.spaced("1 second")),
      Effect.forkScoped
    )

    const get = <A, E, R>(clientId: string, load: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.suspend(() => {
        const now = Date.now()
        const hit = entries.get(clientId)
        if (hit !== undefined && hit.until > now) return Effect.succeed(hit.value as A)
        return Effect.tap(load, (value) =>
          Effect.sync(() => {
            if (entries.size >= MAX_ENTRIES) entries.clear()
            entries.set(clientId, { value, until: now + TTL_MS })
          }))
      })

    const invalidate = Effect.zipRight(
      Effect.sync(() => entries.clear()),
      sql`select pg_notify(${CHANNELS_CHANGED}, 'changed')`.pipe(Effect.asVoid, Effect.orDie)
    )

    return { get, invalidate }
  })
}) {}
