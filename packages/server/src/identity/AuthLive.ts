import { Authenticated, Authorized, CurrentActor, Scopes } from "@parley/domain"
import { Effect, Layer } from "effect"
import { Identity } from "./Identity.js"

/** Implements every `Authorized[scope]` middleware of the contract, plus `Authenticated`. */
export const AuthLive = Layer.unwrapEffect(Effect.gen(function*() {
  const identity = yield* Identity
  const scoped = Scopes.map((scope) =>
    Layer.succeed(Authorized[scope], {
      bearer: (token) => Effect.flatMap(identity.authenticate(token), (actor) => identity.requireScope(actor, scope))
    })
  )
  return Layer.mergeAll(Layer.succeed(Authenticated, { bearer: identity.authenticate }), ...scoped)
}))

export { CurrentActor }
