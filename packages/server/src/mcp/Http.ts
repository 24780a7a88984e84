/**
 * `/mcp` (SPEC.md 4.5, 5.3): Streamable HTTP, stateless, JSON responses. In front of the SDK transport:
 * the Origin allowlist (DNS-rebinding protection), the bearer token with scope `mcp:use`, and the
 * request's actor and backend for the tools.
 */
import { HttpLayerRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { CurrentActor, missingScopeMessage } from "@parley/domain"
import { handleMcpRequest, McpBackend } from "@parley/mcp"
import { Effect, Option, Redacted } from "effect"
import { AppConfig, publicBaseUrl } from "../config/AppConfig.js"
import { Identity } from "../identity/Identity.js"
import { makeMcpBackend } from "./McpBackendLive.js"

const MCP_SCOPE = "mcp:use" as const

const LOOPBACK_ORIGIN = /^https?:\/\/(localhost|127(?:\.\d{1,3}){3}|\[::1\])(:\d{1,5})?$/i

/** A JSON-RPC error outside any exchange (`id: null`), as the SDK transport answers its own refusals. */
const rpcError = (status: number, code: number, message: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson({ jsonrpc: "2.0", error: { code, message }, id: null }, { status, headers })

const methodNotAllowed = rpcError(405, -32000, "Method not allowed.", { allow: "POST, DELETE" })

const bearerOf = (authorization: string | undefined) => {
  const match = authorization === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(authorization)
  return match === null ? Option.none() : Option.some(Redacted.make(match[1]!))
}

/** An allowed browser origin may read the answers (and the auth challenge) of a direct connection. */
const corsHeaders = (origin: string) => ({
  "access-control-allow-origin": origin,
  "access-control-expose-headers": "mcp-session-id, mcp-protocol-version, www-authenticate",
  vary: "origin"
})

const preflight = (origin: string) =>
  HttpServerResponse.empty({
    status: 204,
    headers: {
      ...corsHeaders(origin),
      "access-control-allow-methods": "POST, DELETE",
      "access-control-allow-headers": "authorization, content-type, accept, mcp-protocol-version, mcp-session-id, last-event-id",
      "access-control-max-age": "600"
    }
  })

export const McpRoute = HttpLayerRouter.add("*", "/mcp", (request) =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    const origin = request.headers["origin"]
    if (!originAllowed(config, origin)) return rpcError(403, -32000, `Origin not allowed: ${origin}`)
    if (origin === undefined) return yield* serve(request, config)
    if (request.method === "OPTIONS") return preflight(origin)
    return HttpServerResponse.setHeaders(yield* serve(request, config), corsHeaders(origin))
  }))

const serve = (request: HttpServerRequest.HttpServerRequest, config: AppConfig) =>
  Effect.gen(function*() {
    // stateless with JSON responses: no server-to-client stream to open with GET
    if (request.method !== "POST" && request.method !== "DELETE") return methodNotAllowed

    const metadata = `${publicBaseUrl(config, request.headers)}/.well-known/oauth-protected-resource/mcp`
    const unauthorized = (message: string) =>
      rpcError(401, -32001, message, { "www-authenticate": `Bearer error="invalid_token", resource_metadata="${metadata}"` })
    const forbidden = (message: string, scope?: string) =>
      rpcError(403, -32003, message, {
        "www-authenticate": `Bearer error="insufficient_scope"${scope === undefined ? "" : `, scope="${scope}"`}, resource_metadata="${metadata}"`
      })

    const token = bearerOf(request.headers["authorization"])
    if (Option.isNone(token)) return unauthorized("Unauthenticated.")
    const identity = yield* Identity
    const authenticated = yield* Effect.either(identity.authenticate(token.value))
    if (authenticated._tag === "Left") {
      const failure = authenticated.left
      return failure._tag === "Unauthorized" ? unauthorized(failure.message) : forbidden(failure.message)
    }
    const actor = authenticated.right
    if (!actor.scopes.includes(MCP_SCOPE)) return forbidden(missingScopeMessage(MCP_SCOPE), MCP_SCOPE)

    const backend = yield* makeMcpBackend
    const webRequest = yield* HttpServerRequest.toWeb(request)
    const response = yield* handleMcpRequest(webRequest).pipe(
      Effect.provideService(McpBackend, backend),
      Effect.provideService(CurrentActor, actor),
      Effect.annotateLogs({ mcp_token: actor.tokenId })
    )
    return HttpServerResponse.fromWeb(response)
  }).pipe(
    Effect.catchTag("RequestError", () => Effect.succeed(rpcError(400, -32700, "Parse error: the request body could not be read.")))
  )

/**
 * No Origin header: not a browser, allowed. Otherwise the configured list (`*` for any), or by default
 * loopback origins; PUBLIC_URL's own origin always. The Host header is never trusted for this, since a
 * rebinding page sends its own host.
 */
const originAllowed = (
  config: { readonly publicUrl: Option.Option<string>; readonly mcpAllowedOrigins: Option.Option<ReadonlyArray<string>> },
  origin: string | undefined
) => {
  if (origin === undefined) return true
  const own = Option.flatMap(config.publicUrl, (url) => Option.liftThrowable(() => new URL(url).origin)())
  if (Option.contains(own, origin)) return true
  return Option.match(config.mcpAllowedOrigins, {
    onNone: () => LOOPBACK_ORIGIN.test(origin),
    onSome: (list) => list.includes("*") || list.includes(origin)
  })
}
