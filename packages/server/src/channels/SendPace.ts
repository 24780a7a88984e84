/**
 * A provider channel's sending rate (docs/channels.md, "Sending rate"), shared by every process of a cluster through
 * the channel's row in `channel_send_pace`.
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { Duration, Effect } from "effect"

/** Slots are 10% under the rate, so no second sees more sends than the rate. */
const PACE_MARGIN = 0.9

export class SendPace extends Effect.Service<SendPace>()("@parley/server/SendPace", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * A channel's pace, shared by every process of a cluster through its row: a send reserves the next slot (in
     * order), sleeps until it by its time (the machines' clocks agree as NTP keeps them), then claims the send: no
     * two sends closer than a slot, however late a busy process wakes. Slots are 10% under the rate, so no second
     * sees more sends than the rate.
     */
    const reserve = (channelId: number, perSecond: number) => {
      const gap = 1 / (perSecond * PACE_MARGIN)
      const slotOf = sql<{ slot_ms: number }>`
        insert into channel_send_pace (channel_id, next_at) values (${channelId}, clock_timestamp() + make_interval(secs => ${gap}))
        on conflict (channel_id) do update
          set next_at = greatest(channel_send_pace.next_at, clock_timestamp()) + make_interval(secs => ${gap})
        returning (extract(epoch from next_at) * 1000 - ${gap * 1000})::float8 as slot_ms`.pipe(
        Effect.map((rows) => rows[0]!.slot_ms)
      )
      // granted (0), or how long until the last send is a slot old
      const claim = sql<{ wait_ms: number }>`
        with pace as (select last_sent_at from channel_send_pace where channel_id = ${channelId} for update),
        granted as (
          update channel_send_pace set last_sent_at = clock_timestamp()
          where channel_id = ${channelId}
            and (last_sent_at is null or last_sent_at <= clock_timestamp() - make_interval(secs => ${gap}))
          returning 0::float8 as wait_ms
        )
        select wait_ms from granted
        union all
        select greatest(1, extract(epoch from (last_sent_at + make_interval(secs => ${gap}) - clock_timestamp())) * 1000)::float8
        from pace where not exists (select 1 from granted)`.pipe(Effect.map((rows) => rows[0]?.wait_ms ?? 0))
      const claimed = (tries: number): Effect.Effect<void, SqlError.SqlError> =>
        Effect.flatMap(claim, (wait) =>
          wait === 0 || tries >= 100
            ? Effect.void
            : Effect.zipRight(Effect.sleep(Duration.millis(wait)), claimed(tries + 1)))
      // one claimant per channel in this process at a time: late senders queue here, not on the database
      const gate = gateOf(channelId)
      return Effect.gen(function*() {
        const slot = yield* slotOf
        yield* Effect.sleep(Duration.millis(Math.max(0, slot - Date.now())))
        yield* gate.semaphore.withPermits(1)(Effect.gen(function*() {
          yield* Effect.sleep(Duration.millis(Math.max(0, gate.last + gap * 1000 - Date.now())))
          yield* claimed(1)
          gate.last = Date.now()
        }))
      })
    }

    const gates = new Map<number, { readonly semaphore: Effect.Semaphore; last: number }>()
    const gateOf = (channelId: number) => {
      let gate = gates.get(channelId)
      if (gate === undefined) {
        gate = { semaphore: Effect.unsafeMakeSemaphore(1), last: 0 }
        gates.set(channelId, gate)
      }
      return gate
    }

    return { reserve }
  })
}) {}
