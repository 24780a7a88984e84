/**
 * One bearer security middleware per scope. An endpoint names its scope by the middleware it adds
 * (`.middleware(Authorized["pipelines:read"])`), so the contract states the scope and the same
 * middleware authenticates (401) and checks it (403 `Missing required scope: <scope>`).
 */
import { HttpApiMiddleware, HttpApiSchema, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { CurrentActor } from "../Actor.js"
import { ForbiddenResponse, UnauthorizedResponse } from "../Errors.js"
import { type Scope, Scopes } from "../Scopes.js"

export const bearer = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotate(OpenApi.Description, "A personal access token (`pat_...`) or an OAuth access token.")
)

const AuthFailure = HttpApiSchema.UnionUnify(UnauthorizedResponse, ForbiddenResponse)

const makeAuthorized = (scope: Scope) => {
  class Authorized extends HttpApiMiddleware.Tag<Authorized>()(`@parley/domain/Authorized/${scope}`, {
    failure: AuthFailure,
    provides: CurrentActor,
    security: { bearer }
  }) {}
  return Authorized
}
export type Authorized = ReturnType<typeof makeAuthorized>

export const Authorized = Object.fromEntries(Scopes.map((s) => [s, makeAuthorized(s)])) as Record<Scope, Authorized>

/** Any valid token, whatever its scopes (`GET /api/user/me`). */
export class Authenticated extends HttpApiMiddleware.Tag<Authenticated>()("@parley/domain/Authenticated", {
  failure: AuthFailure,
  provides: CurrentActor,
  security: { bearer }
}) {}

export type AuthFailure = Schema.Schema.Type<typeof AuthFailure>
