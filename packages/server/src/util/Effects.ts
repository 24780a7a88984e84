import { Effect, Option } from "effect"

/** A repository's `Option` as the value, or the given typed error (usually a 404). */
export const someOrFail = <E>(error: E) => <A, E2, R>(self: Effect.Effect<Option.Option<A>, E2, R>) =>
  Effect.flatMap(self, Option.match({ onNone: () => Effect.fail(error), onSome: Effect.succeed }))
