/**
 * `/mcp` (SPEC.md 4.5, 5.3): Streamable HTTP, stateless, JSON responses. In front of the SDK transport:
 * the Origin allowlist (DNS-rebinding protection), the bearer token with scope `mcp:use` (the challenge
 * names the scopes to ask for), the JSON-RPC body checks of JsonRpc.ts, and the request's actor and
 * backend for the tools.
 */
import { HttpLayerRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { CurrentActor, missingScopeMessage } from "@parley/domain"
import { handleMcpRequest, McpBackend } from "@parley/mcp"
import { Effect, Option, Redacted } from "effect"
import { AppConfig, publicBaseUrl } from "../config/AppConfig.js"
import { Identity } from "../identity/Identity.js"
import { batchAnswer, inspectBody, type RpcError } from "./JsonRpc.js"
import { makeMcpBackend } from "./McpBackendLive.js"
import { MCP_SCOPE, McpScopes } from "./Scopes.js"

const LOOPBACK_ORIGIN = /^https?:\/\/(localhost|127(?:\.\d{1,3}){3}|\[::1\])(:\d{1,5})?$/i

const rpcErrorResponse = (status: number, error: RpcError, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(error, { status, headers })

/** A JSON-RPC error outside any exchange (`id: null`), as the SDK transport answers its own refusals. */
const rpcError = (status: number, code: number, message: string, headers: Record<string, string> = {}) =>
  rpcErrorResponse(status, { jsonrpc: "2.0", error: { code, message }, id: null }, headers)

const methodNotAllowed = rpcError(405, -32000, "Method not allowed.", { allow: "POST, DELETE" })

/** The request with the body already read (or a batch's valid members), its length left to the new body. */
const withBody = (web: Request, body: string) => {
  const headers = new Headers(web.headers)
  headers.delete("content-length")
  return new Request(web.url, { method: web.method, headers, body })
}

/** No credentials at all (no header, or another scheme than Bearer); else the token, or none if malformed. */
const credentialsOf = (authorization: string | undefined) => {
  if (authorization === undefined || !/^Bearer(\s|$)/i.test(authorization)) return undefined
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
  return match === null ? Option.none() : Option.some(Redacted.make(match[1]!))
}

/** RFC 6750 3: `Bearer` and its parameters, quoted. */
const challenge = (params: ReadonlyArray<readonly [string, string | undefined]>) =>
  `Bearer ${params.flatMap(([name, value]) => (value === undefined ? [] : [`${name}="${value}"`])).join(", ")}`

const ADVERTISED_SCOPES = McpScopes.join(" ")

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
      "access-control-allow-headers":
        "authorization, content-type, accept, mcp-protocol-version, mcp-session-id, last-event-id",
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
    // RFC 6750 3.1: a request without credentials gets no error code; every 401 names the scopes to ask for
    const unauthorized = (message: string, error?: "invalid_token") =>
      rpcError(401, -32001, message, {
        "www-authenticate": challenge([["error", error], ["resource_metadata", metadata], ["scope", ADVERTISED_SCOPES]])
      })
    const forbidden = (message: string, scope?: string) =>
      rpcError(403, -32003, message, {
        "www-authenticate": challenge([["error", "insufficient_scope"], ["scope", scope], [
          "resource_metadata",
          metadata
        ]])
      })

    const token = credentialsOf(request.headers["authorization"])
    if (token === undefined) return unauthorized("Unauthenticated.")
    if (Option.isNone(token)) return unauthorized("Malformed bearer token.", "invalid_token")
    const identity = yield* Identity
    const authenticated = yield* Effect.either(identity.authenticate(token.value))
    if (authenticated._tag === "Left") {
      const failure = authenticated.left
      return failure._tag === "Unauthorized"
        ? unauthorized(failure.message, "invalid_token")
        : forbidden(failure.message)
    }
    const actor = authenticated.right
    if (!actor.scopes.includes(MCP_SCOPE)) return forbidden(missingScopeMessage(MCP_SCOPE), MCP_SCOPE)

    const backend = yield* makeMcpBackend
    const web = yield* HttpServerRequest.toWeb(request)
    const exchange = (body?: string) =>
      handleMcpRequest(body === undefined ? web : withBody(web, body)).pipe(
        Effect.provideService(McpBackend, backend),
        Effect.provideService(CurrentActor, actor),
        Effect.annotateLogs({ mcp_token: actor.tokenId })
      )
    if (request.method === "DELETE") return HttpServerResponse.fromWeb(yield* exchange())

    const text = yield* request.text
    const inspected = inspectBody(text, request.headers["mcp-protocol-version"])
    switch (inspected._tag) {
      case "Single":
        return HttpServerResponse.fromWeb(yield* exchange(text))
      case "Invalid":
        return rpcErrorResponse(400, inspected.error)
      case "Batch": {
        const answer = inspected.valid.length === 0 ? undefined : yield* exchange(JSON.stringify(inspected.valid))
        return HttpServerResponse.fromWeb(yield* Effect.promise(() => batchAnswer(answer, inspected.errors)))
      }
    }
  }).pipe(
    Effect.catchTag(
      "RequestError",
      () => Effect.succeed(rpcError(400, -32700, "Parse error: the request body could not be read."))
    )
  )

/**
 * No Origin header: not a browser, allowed. Otherwise the configured list (`*` for any), or by default
 * loopback origins; PUBLIC_URL's own origin always. The Host header is never trusted for this, since a
 * rebinding page sends its own host.
 */
const originAllowed = (
  config: {
    readonly publicUrl: Option.Option<string>
    readonly mcpAllowedOrigins: Option.Option<ReadonlyArray<string>>
  },
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
