import { Effect } from "effect"
import { RateLimitsRepo } from "./RateLimitsRepo.js"

/** A limit: at most `limit` attempts per key in a fixed window of `windowMs`. */
export interface RateLimit {
  readonly limit: number
  readonly windowMs: number
}

/** An attempt counted in its window, which `release` can give back. */
export interface Attempt {
  readonly key: string
  readonly until: string
}

/** Windows swept after this many attempts in this process (every process sweeps; a sweep is one delete). */
const SWEEP_EVERY = 500

/**
 * Attempts per key (an address, a channel and an address) counted in Postgres, so every api process of
 * a cluster holds one limit, and counted before the work they guard, so concurrent attempts cannot pass a
 * full window: the one past the limit is refused whatever the others' outcome.
 */
export class RateLimits extends Effect.Service<RateLimits>()("@parley/server/RateLimits", {
  dependencies: [RateLimitsRepo.Default],
  effect: Effect.gen(function*() {
    const repo = yield* RateLimitsRepo
    let sinceSweep = 0

    /** Counts one attempt: the attempt, or the seconds to wait when the key's window is full. */
    const take = Effect.fn("RateLimits.take")(function*(key: string, limit: RateLimit) {
      const now = new Date()
      if (++sinceSweep >= SWEEP_EVERY) {
        sinceSweep = 0
        yield* repo.sweep(now)
      }
      const row = yield* repo.take(key, limit.limit, now, new Date(now.getTime() + limit.windowMs))
      if (row.taken_until !== null) return { _tag: "Taken", attempt: { key, until: row.taken_until } } as const
      const until = row.blocked_until === null ? now.getTime() : Date.parse(row.blocked_until)
      return { _tag: "Blocked", retryAfter: Math.max(1, Math.ceil((until - now.getTime()) / 1000)) } as const
    })

    /** Gives an attempt back (it turned out not to count: a sign-in that succeeded). */
    const release = (attempt: Attempt) => repo.release(attempt.key, attempt.until)

    return { take, release }
  })
}) {}
