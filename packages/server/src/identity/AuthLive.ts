import { Authenticated, Authorized, CurrentActor, Scopes } from "@parley/domain"
import { Effect, Layer } from "effect"
import { Identity } from "./Identity.js"

/** The rest of the request's log lines name who made it (for the request's scope). */
const annotated = (actor: CurrentActor["Type"]) =>
  Effect.as(Effect.annotateLogsScoped({ user_id: actor.userId, workspace_id: actor.defaultWorkspaceId }), actor)

/** Implements every `Authorized[scope]` middleware of the contract, plus `Authenticated`. */
export const AuthLive = Layer.unwrapEffect(Effect.gen(function*() {
  const identity = yield* Identity
  const scoped = Scopes.map((scope) =>
    Layer.succeed(Authorized[scope], {
      bearer: (token) =>
        identity.authenticate(token).pipe(Effect.flatMap((actor) => identity.requireScope(actor, scope)), Effect.flatMap(annotated))
    })
  )
  return Layer.mergeAll(Layer.succeed(Authenticated, { bearer: (token) => Effect.flatMap(identity.authenticate(token), annotated) }), ...scoped)
}))

export { CurrentActor }
