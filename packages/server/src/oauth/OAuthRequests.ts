/**
 * The pure rules of OAuth requests: redirect URIs, scopes, resources, PKCE, client credentials, and the
 * redirect that answers an authorization request.
 */
import { type Scope, Scopes } from "@parley/domain"
import { Option } from "effect"
import { createHash } from "node:crypto"
import { equalSecrets } from "../identity/Secrets.js"
import { MCP_SCOPE, McpScopes } from "../mcp/Scopes.js"
import type { ClientRow } from "./OAuthRepo.js"

/** A validated authorization request, as the consent page shows it and posts it back. */
export interface AuthorizeRequest {
  readonly client: ClientRow
  readonly redirectUri: string
  readonly codeChallenge: string
  readonly state: string | undefined
  readonly resource: string | undefined
  /** What the client asked for that this server knows (`McpScopes` when it named none), `mcp:use` first and always. */
  readonly scopes: ReadonlyArray<Scope>
  /** The request's own parameters, to carry through the consent form. */
  readonly params: Readonly<Record<string, string>>
}

/** A request's query or form parameters. */
export type OAuthParams = Readonly<Record<string, string | undefined>>

const PKCE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/
const PKCE_CHALLENGE = /^[A-Za-z0-9\-_]{43}$/
const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"])
const AUTHORIZE_PARAMS = [
  "response_type",
  "client_id",
  "redirect_uri",
  "code_challenge",
  "code_challenge_method",
  "state",
  "scope",
  "resource"
]

const s256 = (verifier: string) => createHash("sha256").update(verifier).digest("base64url")

export { equalSecrets }

export const isPkceChallenge = (challenge: string) => PKCE_CHALLENGE.test(challenge)

export const pkceVerifies = (verifier: string, challenge: string) =>
  PKCE_VERIFIER.test(verifier) && equalSecrets(s256(verifier), challenge)

const parseUrl = (value: string) => Option.liftThrowable(() => new URL(value))()

const isLoopbackHttp = (url: URL) => url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname)

/** Registration rule: https anywhere, plain http only on loopback (RFC 8252 7.3), never a fragment. */
export const redirectUriProblem = (value: string): string | undefined => {
  const url = parseUrl(value)
  if (Option.isNone(url)) return `Not an absolute URL: ${value}`
  if (url.value.hash !== "" || value.includes("#")) return `A redirect URI must not have a fragment: ${value}`
  if (url.value.username !== "" || url.value.password !== "") {
    return `A redirect URI must not carry credentials: ${value}`
  }
  if (url.value.protocol === "https:" || isLoopbackHttp(url.value)) return undefined
  return `A redirect URI must use https, or http on a loopback address (localhost, 127.0.0.1, [::1]): ${value}`
}

/** Exact match, except that a loopback redirect may use any port (RFC 8252 7.3: native apps bind a free one). */
export const redirectUriRegistered = (client: ClientRow, requested: string) => {
  if (client.redirect_uris.includes(requested)) return true
  const url = parseUrl(requested)
  if (Option.isNone(url) || !isLoopbackHttp(url.value)) return false
  const withoutPort = (u: URL) => `${u.protocol}//${u.hostname}${u.pathname}${u.search}`
  return client.redirect_uris.some((registered) =>
    Option.match(parseUrl(registered), {
      onNone: () => false,
      onSome: (r) => isLoopbackHttp(r) && withoutPort(r) === withoutPort(url.value)
    })
  )
}

/** The redirect URI with the response parameters added to its query (RFC 6749 4.1.2). */
export const redirectWith = (redirectUri: string, params: Record<string, string | undefined>) => {
  const url = new URL(redirectUri)
  for (const [key, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(key, value)
  return url.toString()
}

/**
 * The authorization request's own parameters, with the redirect URI it resolved to, to carry through the consent form.
 */
export const authorizeParams = (params: OAuthParams, redirectUri: string) => {
  const own: Record<string, string> = {}
  for (const key of AUTHORIZE_PARAMS) if (params[key] !== undefined) own[key] = params[key]!
  own.redirect_uri = redirectUri
  return own
}

/**
 * Known scopes of a space-separated list, `mcp:use` always first (it is what the grant is for). No list
 * at all asks for the scopes the MCP tools need (RFC 6749 3.3: the server's default).
 */
export const requestedScopes = (scope: string | undefined | null): ReadonlyArray<Scope> => {
  const asked = new Set((scope ?? "").split(/\s+/).filter((s) => s.length > 0))
  const known = asked.size === 0 ? McpScopes : Scopes.filter((s) => asked.has(s))
  return [MCP_SCOPE, ...known.filter((s) => s !== MCP_SCOPE)]
}

/** RFC 8707: this server guards one resource, the MCP endpoint; its origin is accepted as a name for it too. */
export const resourceAllowed = (issuer: string, resource: string) => {
  const trimmed = resource.replace(/\/+$/, "")
  return trimmed === `${issuer}/mcp` || trimmed === issuer
}

export const sameResource = (a: string, b: string) => a.replace(/\/+$/, "") === b.replace(/\/+$/, "")

/** The client id and secret of an `Authorization: Basic` header, if it is one. */
export const basicCredentials = (authorization: string | undefined) => {
  const match = authorization === undefined ? null : /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization)
  if (match === null) return undefined
  const decoded = Buffer.from(match[1]!, "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  if (colon < 0) return undefined
  // RFC 6749 2.3.1: both parts are form-urlencoded before they are joined
  const decode = (s: string) =>
    Option.getOrElse(Option.liftThrowable(() => decodeURIComponent(s.replace(/\+/g, " ")))(), () => s)
  return { id: decode(decoded.slice(0, colon)), secret: decode(decoded.slice(colon + 1)) }
}
