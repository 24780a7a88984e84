/**
 * The OAuth endpoints (SPEC.md 5.2) that take no session: discovery documents, `/register`, `/token` and
 * `/revoke`. Plain router routes: form posts and the exact status codes and bodies of the RFCs. `/authorize`
 * (sign-in, then the consent page) is an account page: account/Authorize.ts.
 */
import { HttpLayerRouter, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { formOf, issuerOf, remoteAddress } from "../http/Forms.js"
import { OAuth } from "./OAuth.js"
import type { OAuthFailure } from "./OAuthErrors.js"

/** Metadata, registration, token and revocation take no cookies, so any origin may call them (browser clients). */
const CORS = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET, POST, OPTIONS",
  "access-control-allow-headers": "authorization, content-type, mcp-protocol-version",
  "access-control-max-age": "600"
}
export const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" }

const preflight = HttpServerResponse.empty({ status: 204, headers: CORS })

const failure = (e: OAuthFailure, basicAuth = false) =>
  HttpServerResponse.unsafeJson({ error: e.error, error_description: e.description }, {
    status: e.status,
    headers: {
      ...CORS,
      ...NO_STORE,
      ...(e.retryAfter !== undefined ? { "retry-after": String(e.retryAfter) } : {}),
      ...(e.status === 401 && basicAuth ? { "www-authenticate": `Basic realm="parley"` } : {})
    }
  })

/** A JSON endpoint that also answers CORS preflights. */
const json = <E, R>(
  path: `/${string}`,
  method: "GET" | "POST",
  handle: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
) =>
  HttpLayerRouter.route("*", path, (request) =>
    request.method === "OPTIONS"
      ? Effect.succeed(preflight)
      : request.method === method
      ? handle(request)
      : Effect.succeed(
        HttpServerResponse.unsafeJson({ error: "invalid_request", error_description: `Use ${method}.` }, {
          status: 405,
          headers: { ...CORS, allow: `${method}, OPTIONS` }
        })
      ))

const protectedResource = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const oauth = yield* OAuth
    return HttpServerResponse.unsafeJson(oauth.protectedResource(yield* issuerOf(request)), { headers: CORS })
  })

const wellKnown = [
  // RFC 9728 3.1: the resource `/mcp` inserts its path after the well-known prefix; the root form too
  json("/.well-known/oauth-protected-resource/mcp", "GET", protectedResource),
  json("/.well-known/oauth-protected-resource", "GET", protectedResource),
  json("/.well-known/oauth-authorization-server", "GET", (request) =>
    Effect.gen(function*() {
      const oauth = yield* OAuth
      return HttpServerResponse.unsafeJson(oauth.authorizationServer(yield* issuerOf(request)), { headers: CORS })
    }))
]

const register = json("/register", "POST", (request) =>
  Effect.gen(function*() {
    const oauth = yield* OAuth
    const body = yield* Effect.orElseSucceed(request.json, () => undefined)
    return yield* oauth.register(body, remoteAddress(request)).pipe(
      Effect.map((client) => HttpServerResponse.unsafeJson(client, { status: 201, headers: { ...CORS, ...NO_STORE } })),
      Effect.catchTag("OAuthFailure", (e) => Effect.succeed(failure(e)))
    )
  }))

const token = json("/token", "POST", (request) =>
  Effect.gen(function*() {
    const oauth = yield* OAuth
    const form = yield* formOf(request)
    const authorization = request.headers["authorization"]
    return yield* oauth.token(form.record(), authorization, yield* issuerOf(request)).pipe(
      Effect.map((tokens) => HttpServerResponse.unsafeJson(tokens, { headers: { ...CORS, ...NO_STORE } })),
      Effect.catchTag("OAuthFailure", (e) => Effect.succeed(failure(e, authorization !== undefined)))
    )
  }))

const revoke = json("/revoke", "POST", (request) =>
  Effect.gen(function*() {
    const oauth = yield* OAuth
    const form = yield* formOf(request)
    const authorization = request.headers["authorization"]
    return yield* oauth.revoke(form.record(), authorization).pipe(
      Effect.as(HttpServerResponse.empty({ status: 200, headers: { ...CORS, ...NO_STORE } })),
      Effect.catchTag("OAuthFailure", (e) => Effect.succeed(failure(e, authorization !== undefined)))
    )
  }))

export const OAuthRoutes = HttpLayerRouter.addAll([...wellKnown, register, token, revoke])
