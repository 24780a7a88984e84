/**
 * A controllable clock for durable waits: real time plus an offset the test moves forward. The cluster's
 * durable clock reads Effect's `Clock` (the wake-up it stores is `now + duration`, and the runner's poll
 * compares `deliver_at` with `now`), so giving the whole server layer this clock and advancing the offset
 * by an interval makes a wait of minutes due at the next poll (250 ms), without waiting. `sleep` is the
 * real one: timers, polls and timeouts keep their real pace.
 */
import { Clock, Effect, Layer } from "effect"

export interface OffsetClock {
  /** The clock to install (`Layer.setClock`). */
  readonly clock: Clock.Clock
  /** Moves the clock forward by `ms`; it never goes back. */
  readonly advance: (ms: number) => Effect.Effect<void>
  readonly offsetMs: () => number
  /** Installs the clock for everything built on top of it (use as the outermost provide of a layer). */
  readonly layer: Layer.Layer<never>
}

/** One offset shared by every layer built with it: a server torn down and built again keeps the same time. */
export const makeOffsetClock = (): OffsetClock => {
  let offset = 0
  const real = Clock.make()
  const clock: Clock.Clock = {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => real.unsafeCurrentTimeMillis() + offset,
    unsafeCurrentTimeNanos: () => real.unsafeCurrentTimeNanos() + BigInt(offset) * 1_000_000n,
    currentTimeMillis: Effect.sync(() => real.unsafeCurrentTimeMillis() + offset),
    currentTimeNanos: Effect.sync(() => real.unsafeCurrentTimeNanos() + BigInt(offset) * 1_000_000n),
    sleep: (duration) => real.sleep(duration)
  }
  return {
    clock,
    advance: (ms) =>
      Effect.sync(() => {
        offset += ms
      }),
    offsetMs: () => offset,
    layer: Layer.setClock(clock)
  }
}
