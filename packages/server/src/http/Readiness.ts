import { Effect, Ref } from "effect"

/**
 * Whether this process has finished starting. `/ready` answers 503 until the composition root says so:
 * `parley serve` once its listeners are bound, the demo is seeded with its credentials file written and
 * the banner is printed, so whoever sees 200 finds everything the banner names.
 */
export class Readiness extends Effect.Service<Readiness>()("@parley/server/Readiness", {
  effect: Effect.map(Ref.make(false), (started) => ({
    markStarted: Ref.set(started, true),
    isStarted: Ref.get(started)
  }))
}) {}
