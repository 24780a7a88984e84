import { Effect, Option } from "effect"
import type { LazyArg } from "effect/Function"

/**
 * A repository's `Option` as the value, or the typed error `error` makes (usually a 404), made only when it is none.
 */
export const someOrFail = <E>(error: LazyArg<E>) => <A, E2, R>(self: Effect.Effect<Option.Option<A>, E2, R>) =>
  Effect.flatMap(self, Option.match({ onNone: () => Effect.fail(error()), onSome: Effect.succeed }))
