/**
 * The OAuth endpoints (SPEC.md 5.2): discovery documents, `/register`, `/authorize` (sign-in, then the
 * consent page), `/token` and `/revoke`. Plain router routes: form posts, redirects and the exact
 * status codes and bodies of the RFCs.
 */
import { HttpLayerRouter, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { currentSession, formOf, issuerOf, remoteAddress, signInRedirect } from "../account/Http.js"
import { consentPage, errorPage } from "../account/Pages.js"
import { Sessions } from "../account/Sessions.js"
import { OAuth } from "./OAuth.js"
import type { OAuthFailure } from "./OAuthErrors.js"
import type { AuthorizeRequest } from "./OAuthRequests.js"

/** Metadata, registration, token and revocation take no cookies, so any origin may call them (browser clients). */
const CORS = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET, POST, OPTIONS",
  "access-control-allow-headers": "authorization, content-type, mcp-protocol-version",
  "access-control-max-age": "600"
}
const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" }

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

/** The request checked; a refused one is an error page (never a redirect), a bad one goes back to the client. */
const checked = (
  params: Readonly<Record<string, string | undefined>>,
  issuer: string,
  onValid: (request: AuthorizeRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, Sessions | OAuth>,
  redirectStatus: number
) =>
  Effect.flatMap(OAuth, (oauth) => oauth.checkAuthorizeRequest(params, issuer)).pipe(
    Effect.matchEffect({
      onFailure: (e) =>
        e._tag === "AuthorizeRefused"
          ? errorPage("Cannot authorize this application", e.message, 400)
          : Effect.succeed(HttpServerResponse.redirect(e.redirectTo, { status: redirectStatus, headers: NO_STORE })),
      onSuccess: onValid
    })
  )

const authorize = HttpLayerRouter.addAll([
  HttpLayerRouter.route("GET", "/authorize", (request) =>
    Effect.gen(function*() {
      const url = new URL(request.url, "http://localhost")
      const params = Object.fromEntries(url.searchParams)
      const issuer = yield* issuerOf(request)
      return yield* checked(params, issuer, (authorizeRequest) =>
        Effect.gen(function*() {
          const session = yield* currentSession(request)
          if (Option.isNone(session)) return signInRedirect(`${url.pathname}${url.search}`)
          return yield* consentPage(authorizeRequest, session.value)
        }), 302)
    })),

  HttpLayerRouter.route("POST", "/authorize", (request) =>
    Effect.gen(function*() {
      const form = yield* formOf(request)
      const params = form.record()
      const issuer = yield* issuerOf(request)
      return yield* checked(params, issuer, (authorizeRequest) =>
        Effect.gen(function*() {
          const oauth = yield* OAuth
          const sessions = yield* Sessions
          const session = yield* currentSession(request)
          if (Option.isNone(session)) {
            return signInRedirect(`/authorize?${new URLSearchParams(authorizeRequest.params).toString()}`)
          }
          if (!sessions.checkCsrf(session.value, params.csrf)) {
            return yield* errorPage(
              "Form expired",
              "This form expired or did not come from Parley. Start the connection again from your application.",
              403
            )
          }
          const location = params.decision === "approve"
            ? yield* oauth.approve(authorizeRequest, session.value.userId, issuer, form.all("grant"))
            : oauth.deny(authorizeRequest, issuer)
          return HttpServerResponse.redirect(location, { status: 303, headers: NO_STORE })
        }), 303)
    }))
])

export const OAuthRoutes = Layer.mergeAll(HttpLayerRouter.addAll([...wellKnown, register, token, revoke]), authorize)
