import { Effect, Option } from "effect"
import type { LazyArg } from "effect/Function"

/**
 * A repository's `Option` as the value, or the typed error `error` makes (usually a 404), made only when it is none.
 */
export const someOrFail = <E>(error: LazyArg<E>) => <A, E2, R>(self: Effect.Effect<Option.Option<A>, E2, R>) =>
  Effect.flatMap(self, Option.match({ onNone: () => Effect.fail(error()), onSome: Effect.succeed }))

/**
 * A turn of the event loop (a macrotask): long runs of work whose awaits resolve at once (PGlite, the embedded
 * database, executes on this thread; pdf.js without a worker too) otherwise chain microtasks and keep every request,
 * `/health` included, waiting until they end. Put between batches of such work.
 */
export const breathe: Effect.Effect<void> = Effect.async<void>((resume) => {
  const timer = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(timer))
})

/** breathe, for async code. */
export const breatheAsync = () => new Promise<void>((resolve) => setImmediate(resolve))
