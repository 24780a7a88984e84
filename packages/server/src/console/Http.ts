/**
 * `/console`: the operator console (docs/console.md), a single-page app on the public REST API and the
 * operators' socket. The page needs the account session (else sign in first); its script asks
 * `POST /console/token` (session cookie plus the page's CSRF token in `X-CSRF-Token`) for a short-lived
 * bearer token bound to the session, keeps it in memory only, and renews it before it runs out. The
 * token is an ordinary access token: the console can do nothing an integrator's token cannot.
 */
import { HttpLayerRouter, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { currentSession, signInRedirect } from "../account/Http.js"
import { Sessions } from "../account/Sessions.js"
import { issuerOf } from "../http/Forms.js"
import { escapeHtml as escape } from "../http/PageHeaders.js"
import { pageHeaders, type PagePolicy } from "../http/PageHeaders.js"
import { immutable, serveFixed } from "../http/StaticBody.js"
import { Identity } from "../identity/Identity.js"
import { makeConsoleBundle } from "./ConsoleBundle.js"
import { CONSOLE_SCOPES, CONSOLE_TOKEN_TTL_MS } from "./ConsoleScopes.js"

const consolePolicy = (origin: string): PagePolicy => ({
  "script-src": ["'self'"],
  "style-src": ["'self'"],
  "img-src": ["'self'", "blob:", "data:"],
  "media-src": ["'self'"],
  // the REST API and the operators' socket (websocket on the same host)
  "connect-src": ["'self'", origin.replace(/^http/, "ws")],
  "form-action": ["'self'"]
})

const page = (csrf: string, versions: { readonly js: string; readonly css: string }) =>
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="parley-csrf" content="${escape(csrf)}">
<title>Console · Parley</title>
<link rel="stylesheet" href="/console/assets/console.css?v=${versions.css}">
<script type="module" src="/console/assets/console.js?v=${versions.js}"></script>
</head>
<body>
<div id="app"><p class="boot">Loading the console…</p></div>
<noscript><p>The console needs JavaScript. The <a href="/docs">REST API</a> does everything it does.</p></noscript>
</body>
</html>
`

const json = (status: number, body: unknown) =>
  HttpServerResponse.unsafeJson(body, { status, headers: { "cache-control": "no-store" } })

export const ConsoleRoutes = Layer.unwrapEffect(Effect.gen(function*() {
  const bundle = yield* makeConsoleBundle

  const shell = (request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function*() {
      const session = yield* currentSession(request)
      const path = new URL(request.url, "http://localhost").pathname
      if (Option.isNone(session)) return signInRedirect(path)
      const { css, js } = yield* bundle
      const origin = yield* issuerOf(request)
      return HttpServerResponse.text(page(session.value.csrf, { js: js.version, css: css.version }), {
        contentType: "text/html; charset=utf-8",
        headers: { "cache-control": "no-store", ...pageHeaders(consolePolicy(origin)) }
      })
    })

  /** A fresh console token for the signed-in session; 401 signed out, 403 without the page's CSRF token. */
  const token = (request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function*() {
      const session = yield* currentSession(request)
      if (Option.isNone(session)) return json(401, { error: "signed_out", message: "Sign in again." })
      if (!(yield* Sessions).checkCsrf(session.value, request.headers["x-csrf-token"])) {
        return json(403, { error: "csrf", message: "Reload the console." })
      }
      const issued = yield* (yield* Identity).issueSessionToken({
        userId: session.value.userId,
        sessionId: session.value.id,
        scopes: CONSOLE_SCOPES,
        ttlMs: CONSOLE_TOKEN_TTL_MS
      })
      return json(200, {
        access_token: issued.token,
        token_type: "Bearer",
        expires_in: Math.floor(CONSOLE_TOKEN_TTL_MS / 1000),
        scope: CONSOLE_SCOPES.join(" "),
        user: { id: session.value.userId, email: session.value.email, name: session.value.name }
      })
    })

  const asset = (kind: "js" | "css") =>
    Effect.flatMap(bundle, (b) =>
      serveFixed(b[kind], {
        "content-type": kind === "js" ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8",
        "cache-control": immutable,
        "x-content-type-options": "nosniff"
      }))

  return HttpLayerRouter.addAll([
    HttpLayerRouter.route("GET", "/console", shell),
    HttpLayerRouter.route("GET", "/console/*", shell),
    HttpLayerRouter.route("POST", "/console/token", token),
    HttpLayerRouter.route("GET", "/console/assets/console.js", asset("js")),
    HttpLayerRouter.route("GET", "/console/assets/console.css", asset("css"))
  ])
}))
