import { Authenticated, Authorized, CurrentActor, Scopes } from "@parley/domain"
import { Effect, FiberRef, HashMap, Layer } from "effect"
import { Identity } from "./Identity.js"

/**
 * The rest of the request's log lines name who made it. Set on the request's fiber for the rest of its
 * life (each request runs in a fiber of its own), not with `annotateLogsScoped`: that adds a finalizer to
 * the request's scope whose FiberRefs diff and patch (the whole service context, twice) cost about a fifth
 * of a cached GET's CPU (docs/benchmarks.md, "Native Postgres side by side").
 */
const annotated = (actor: CurrentActor["Type"]) =>
  Effect.as(
    FiberRef.update(FiberRef.currentLogAnnotations, (annotations) =>
      HashMap.set(HashMap.set(annotations, "user_id", actor.userId), "workspace_id", actor.defaultWorkspaceId)),
    actor
  )

/** Implements every `Authorized[scope]` middleware of the contract, plus `Authenticated`. */
export const AuthLive = Layer.unwrapEffect(Effect.gen(function*() {
  const identity = yield* Identity
  const scoped = Scopes.map((scope) =>
    Layer.succeed(Authorized[scope], {
      bearer: (token) =>
        identity.authenticate(token).pipe(
          Effect.flatMap((actor) => identity.requireScope(actor, scope)),
          Effect.flatMap(annotated)
        )
    })
  )
  return Layer.mergeAll(
    Layer.succeed(Authenticated, { bearer: (token) => Effect.flatMap(identity.authenticate(token), annotated) }),
    ...scoped
  )
}))

export { CurrentActor }
