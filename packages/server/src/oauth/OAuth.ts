import { SqlClient } from "@effect/sql"
import {
  type AuthorizationServerMetadata,
  ClientRegistrationRequest,
  type ClientRegistrationResponse,
  type OAuthErrorCode,
  type OAuthGrantType,
  type OAuthTokenResponse,
  type ProtectedResourceMetadata,
  type Scope,
  Scopes,
  type TokenEndpointAuthMethod,
  type UserId
} from "@parley/domain"
import { Data, Effect, Option, ParseResult, Schema } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import { AppConfig } from "../config/AppConfig.js"
import { Identity } from "../identity/Identity.js"
import { randomBase62, sha256Hex } from "../identity/Secrets.js"
import { MCP_SCOPE, McpScopes } from "../mcp/Scopes.js"
import { type ClientRow, OAuthRepo } from "./OAuthRepo.js"
import { makeRateLimiter } from "./RateLimiter.js"

/** An OAuth error answered as JSON (RFC 6749 5.2, RFC 7591 3.2.2, RFC 7009 2.2.1). */
export class OAuthFailure extends Data.TaggedError("OAuthFailure")<{
  readonly error: OAuthErrorCode
  readonly description: string
  readonly status: number
  readonly retryAfter?: number
}> {}

/**
 * An authorization request that must not be redirected anywhere (RFC 6749 4.1.2.1): unknown client or a
 * redirect URI it did not register. The user sees an error page instead.
 */
export class AuthorizeRefused extends Data.TaggedError("AuthorizeRefused")<{ readonly message: string }> {}

/** A bad authorization request from a known client and redirect URI: the error goes back to the client. */
export class AuthorizeRedirectError extends Data.TaggedError("AuthorizeRedirectError")<{
  readonly redirectTo: string
}> {}

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

const CODE_TTL_MS = 5 * 60_000
const PKCE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/
const PKCE_CHALLENGE = /^[A-Za-z0-9\-_]{43}$/
const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"])
const AUTHORIZE_PARAMS = ["response_type", "client_id", "redirect_uri", "code_challenge", "code_challenge_method", "state", "scope", "resource"]

type Params = Readonly<Record<string, string | undefined>>

const fail = (error: OAuthErrorCode, description: string, status = 400) => new OAuthFailure({ error, description, status })

const s256 = (verifier: string) => createHash("sha256").update(verifier).digest("base64url")

const equalSecrets = (a: string, b: string) => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

const parseUrl = (value: string) => Option.liftThrowable(() => new URL(value))()

const isLoopbackHttp = (url: URL) => url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname)

/** Registration rule: https anywhere, plain http only on loopback (RFC 8252 7.3), never a fragment. */
const redirectUriProblem = (value: string): string | undefined => {
  const url = parseUrl(value)
  if (Option.isNone(url)) return `Not an absolute URL: ${value}`
  if (url.value.hash !== "" || value.includes("#")) return `A redirect URI must not have a fragment: ${value}`
  if (url.value.username !== "" || url.value.password !== "") return `A redirect URI must not carry credentials: ${value}`
  if (url.value.protocol === "https:" || isLoopbackHttp(url.value)) return undefined
  return `A redirect URI must use https, or http on a loopback address (localhost, 127.0.0.1, [::1]): ${value}`
}

/** Exact match, except that a loopback redirect may use any port (RFC 8252 7.3: native apps bind a free one). */
const redirectUriRegistered = (client: ClientRow, requested: string) => {
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

/**
 * Known scopes of a space-separated list, `mcp:use` always first (it is what the grant is for). No list
 * at all asks for the scopes the MCP tools need (RFC 6749 3.3: the server's default).
 */
export const requestedScopes = (scope: string | undefined | null): ReadonlyArray<Scope> => {
  const asked = new Set((scope ?? "").split(/\s+/).filter((s) => s.length > 0))
  const known = asked.size === 0 ? McpScopes : Scopes.filter((s) => asked.has(s))
  return [MCP_SCOPE, ...known.filter((s) => s !== MCP_SCOPE)]
}

const basicCredentials = (authorization: string | undefined) => {
  const match = authorization === undefined ? null : /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization)
  if (match === null) return undefined
  const decoded = Buffer.from(match[1]!, "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  if (colon < 0) return undefined
  // RFC 6749 2.3.1: both parts are form-urlencoded before they are joined
  const decode = (s: string) => Option.getOrElse(Option.liftThrowable(() => decodeURIComponent(s.replace(/\+/g, " ")))(), () => s)
  return { id: decode(decoded.slice(0, colon)), secret: decode(decoded.slice(colon + 1)) }
}

/**
 * The authorization server in front of `/mcp` (SPEC.md 5.2): discovery documents, dynamic client
 * registration, authorization codes with PKCE, rotating refresh tokens, revocation. Access tokens are
 * ordinary access tokens (Identity) with the client and grant they came from.
 */
export class OAuth extends Effect.Service<OAuth>()("@parley/server/OAuth", {
  dependencies: [OAuthRepo.Default, Identity.Default, AppConfig.Default],
  effect: Effect.gen(function*() {
    const repo = yield* OAuthRepo
    const identity = yield* Identity
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const registrations = makeRateLimiter({ limit: config.oauthRegistrationsPerHour, windowMs: 3_600_000 })

    /** RFC 8707: this server guards one resource, the MCP endpoint; its origin is accepted as a name for it too. */
    const resourceAllowed = (issuer: string, resource: string) => {
      const trimmed = resource.replace(/\/+$/, "")
      return trimmed === `${issuer}/mcp` || trimmed === issuer
    }

    const protectedResource = (issuer: string): ProtectedResourceMetadata => ({
      resource: `${issuer}/mcp`,
      authorization_servers: [issuer],
      // what a client should ask for (MCP 2025-11-25 scope selection): every tool works with these
      scopes_supported: [...McpScopes],
      bearer_methods_supported: ["header"],
      resource_name: "Parley MCP server"
    })

    const authorizationServer = (issuer: string): AuthorizationServerMetadata => ({
      issuer,
      authorization_endpoint: `${issuer}/authorize`,
      token_endpoint: `${issuer}/token`,
      registration_endpoint: `${issuer}/register`,
      revocation_endpoint: `${issuer}/revoke`,
      scopes_supported: [...Scopes],
      response_types_supported: ["code"],
      response_modes_supported: ["query"],
      grant_types_supported: ["authorization_code", "refresh_token"],
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: ["none", "client_secret_post", "client_secret_basic"],
      revocation_endpoint_auth_methods_supported: ["none", "client_secret_post", "client_secret_basic"],
      authorization_response_iss_parameter_supported: true
    })

    /** RFC 7591 `POST /register`, at most `OAUTH_REGISTRATIONS_PER_HOUR` per address. */
    const register = Effect.fn("OAuth.register")(function*(body: unknown, address: string) {
      const wait = registrations.take(address)
      if (wait !== undefined) {
        return yield* new OAuthFailure({
          error: "too_many_requests",
          description: "Too many client registrations from this address; try again later.",
          status: 429,
          retryAfter: wait
        })
      }
      const input = yield* Schema.decodeUnknown(ClientRegistrationRequest)(body, { errors: "first" }).pipe(
        Effect.mapError((e) => {
          const problem = ParseResult.ArrayFormatter.formatErrorSync(e)[0]
          const field = problem?.path[0]
          return fail(
            field === "redirect_uris" ? "invalid_redirect_uri" : "invalid_client_metadata",
            problem === undefined ? "Invalid client metadata." : `${problem.path.join(".") || "body"}: ${problem.message}`
          )
        })
      )
      for (const uri of input.redirect_uris) {
        const problem = redirectUriProblem(uri)
        if (problem !== undefined) return yield* fail("invalid_redirect_uri", problem)
      }
      // RFC 7591 defaults to client_secret_basic; clients that want to be public say "none"
      const method: TokenEndpointAuthMethod = input.token_endpoint_auth_method ?? "client_secret_basic"
      const grantTypes: ReadonlyArray<OAuthGrantType> = [
        ...new Set<OAuthGrantType>(input.grant_types ?? ["authorization_code", "refresh_token"])
      ]
      if (!grantTypes.includes("authorization_code")) {
        return yield* fail("invalid_client_metadata", "grant_types must include authorization_code.")
      }
      const clientId = `mcp_${randomBase62(24)}`
      const secret = method === "none" ? undefined : `mcs_${randomBase62(43)}`
      const scope = input.scope === undefined ? null : requestedScopes(input.scope).join(" ")
      const row = yield* repo.insertClient({
        id: clientId,
        secret_hash: secret === undefined ? null : sha256Hex(secret),
        client_name: input.client_name ?? null,
        client_uri: input.client_uri ?? null,
        redirect_uris: [...new Set(input.redirect_uris)],
        grant_types: grantTypes,
        token_endpoint_auth_method: method,
        scope
      })
      yield* Effect.annotateCurrentSpan({ client_id: clientId })
      yield* Effect.logInfo("OAuth client registered").pipe(Effect.annotateLogs({ client_id: clientId, method }))
      const response: ClientRegistrationResponse = {
        client_id: clientId,
        client_id_issued_at: Math.floor(Date.parse(row.created_at) / 1000),
        ...(secret !== undefined ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
        ...(input.client_name !== undefined ? { client_name: input.client_name } : {}),
        ...(input.client_uri !== undefined ? { client_uri: input.client_uri } : {}),
        redirect_uris: [...new Set(input.redirect_uris)],
        grant_types: [...grantTypes],
        response_types: ["code"],
        token_endpoint_auth_method: method,
        ...(scope !== null ? { scope } : {})
      }
      return response
    })

    /**
     * `GET /authorize` and the consent form's post: client and redirect URI first (refused without a
     * redirect), then everything else (an error redirected to the client).
     */
    const checkAuthorizeRequest = Effect.fn("OAuth.checkAuthorizeRequest")(function*(params: Params, issuer: string) {
      const clientId = params.client_id
      if (clientId === undefined || clientId === "") return yield* new AuthorizeRefused({ message: "The request names no client (client_id)." })
      const client = yield* repo.clientById(clientId)
      if (Option.isNone(client)) return yield* new AuthorizeRefused({ message: "This application is not registered with Parley." })
      const redirectUri = params.redirect_uri ?? (client.value.redirect_uris.length === 1 ? client.value.redirect_uris[0]! : undefined)
      if (redirectUri === undefined) return yield* new AuthorizeRefused({ message: "The request names no redirect URI (redirect_uri)." })
      if (!redirectUriRegistered(client.value, redirectUri)) {
        return yield* new AuthorizeRefused({ message: "The redirect URI is not registered for this application." })
      }
      const redirectError = (error: OAuthErrorCode, description: string) =>
        new AuthorizeRedirectError({ redirectTo: redirectWith(redirectUri, { error, error_description: description, state: params.state, iss: issuer }) })

      if (params.response_type !== "code") {
        return yield* redirectError("unsupported_response_type", "Only response_type=code is supported.")
      }
      if (params.code_challenge === undefined || params.code_challenge === "") {
        return yield* redirectError("invalid_request", "PKCE is required: code_challenge is missing.")
      }
      if (params.code_challenge_method !== "S256") {
        return yield* redirectError("invalid_request", "PKCE code_challenge_method must be S256.")
      }
      if (!PKCE_CHALLENGE.test(params.code_challenge)) {
        return yield* redirectError("invalid_request", "The code_challenge is not a base64url SHA-256 digest.")
      }
      if (params.resource !== undefined && !resourceAllowed(issuer, params.resource)) {
        return yield* redirectError("invalid_target", `Unknown resource: ${params.resource}`)
      }
      const own: Record<string, string> = {}
      for (const key of AUTHORIZE_PARAMS) if (params[key] !== undefined) own[key] = params[key]!
      own.redirect_uri = redirectUri
      const request: AuthorizeRequest = {
        client: client.value,
        redirectUri,
        codeChallenge: params.code_challenge,
        state: params.state,
        resource: params.resource,
        scopes: requestedScopes(params.scope ?? client.value.scope),
        params: own
      }
      return request
    })

    /** The user approved: a single-use code for the scopes they kept (never more than were asked). */
    const approve = Effect.fn("OAuth.approve")(function*(
      request: AuthorizeRequest,
      userId: UserId,
      issuer: string,
      ticked: ReadonlyArray<string>
    ) {
      const scopes = request.scopes.filter((s) => s === MCP_SCOPE || ticked.includes(s))
      const code = randomBase62(43)
      yield* repo.sweepCodes
      yield* repo.insertCode({
        code_hash: sha256Hex(code),
        client_id: request.client.id,
        user_id: userId,
        redirect_uri: request.redirectUri,
        code_challenge: request.codeChallenge,
        scopes,
        resource: request.resource ?? null,
        expires_at: new Date(Date.now() + CODE_TTL_MS)
      })
      return redirectWith(request.redirectUri, { code, state: request.state, iss: issuer })
    })

    const deny = (request: AuthorizeRequest, issuer: string) =>
      redirectWith(request.redirectUri, {
        error: "access_denied",
        error_description: "The user denied the request.",
        state: request.state,
        iss: issuer
      })

    /** RFC 6749 2.3.1: a public client names itself; a confidential one proves it with its secret (body or Basic). */
    const authenticateClient = Effect.fn("OAuth.authenticateClient")(function*(params: Params, authorization: string | undefined) {
      const basic = basicCredentials(authorization)
      const clientId = basic?.id ?? params.client_id
      const secret = basic?.secret ?? params.client_secret
      const invalid = fail("invalid_client", "Client authentication failed.", 401)
      if (clientId === undefined || clientId === "") return yield* invalid
      const client = yield* repo.clientById(clientId)
      if (Option.isNone(client)) return yield* invalid
      const hash = client.value.secret_hash
      if (hash !== null && (secret === undefined || !equalSecrets(sha256Hex(secret), hash))) return yield* invalid
      return client.value
    })

    const tokenResponse = (grantId: number, client: ClientRow, userId: UserId, scopes: ReadonlyArray<Scope>) =>
      Effect.gen(function*() {
        const access = yield* identity.issueToken({
          userId,
          name: `OAuth: ${client.client_name ?? client.id}`,
          scopes,
          expiresAt: new Date(Date.now() + config.oauthAccessTokenTtlSeconds * 1000),
          prefix: "oat_",
          oauthClientId: client.id,
          oauthGrantId: grantId
        })
        let refresh: string | undefined
        if (client.grant_types.includes("refresh_token")) {
          refresh = `ort_${randomBase62(43)}`
          yield* repo.insertRefreshToken({
            token_hash: sha256Hex(refresh),
            grant_id: grantId,
            expires_at: new Date(Date.now() + config.oauthRefreshTokenTtlDays * 86_400_000)
          })
        }
        const response: OAuthTokenResponse = {
          access_token: access.token,
          token_type: "Bearer",
          expires_in: config.oauthAccessTokenTtlSeconds,
          ...(refresh !== undefined ? { refresh_token: refresh } : {}),
          scope: scopes.join(" ")
        }
        return response
      })

    /**
     * A failure found inside a transaction that must still commit what it did (a replayed code or
     * refresh token revokes its grant, RFC 6749 4.1.2 and RFC 9700 4.14.2), raised after the commit.
     */
    const afterCommit = <A>(
      body: Effect.Effect<{ readonly ok: A } | { readonly failure: OAuthFailure; readonly revoked: boolean }, OAuthFailure>
    ) =>
      Effect.gen(function*() {
        const result = yield* sql.withTransaction(body).pipe(Effect.catchTag("SqlError", Effect.die))
        if ("ok" in result) return result.ok
        if (result.revoked) yield* identity.tokensChanged
        return yield* result.failure
      })

    const exchangeCode = (client: ClientRow, params: Params, issuer: string) =>
      Effect.gen(function*() {
        const code = params.code
        if (code === undefined || code === "") return yield* fail("invalid_request", "code is required.")
        const verifier = params.code_verifier
        if (verifier === undefined || verifier === "") return yield* fail("invalid_request", "code_verifier is required (PKCE).")
        if (params.resource !== undefined && !resourceAllowed(issuer, params.resource)) {
          return yield* fail("invalid_target", `Unknown resource: ${params.resource}`)
        }
        return yield* afterCommit(Effect.gen(function*() {
          const row = yield* repo.codeForUpdate(sha256Hex(code))
          const refuse = (description: string) => ({ failure: fail("invalid_grant", description), revoked: false })
          if (Option.isNone(row)) return refuse("Unknown authorization code.")
          const c = row.value
          if (c.client_id !== client.id) return refuse("The authorization code was issued to another client.")
          if (c.used) {
            if (c.grant_id !== null) yield* repo.revokeGrant(c.grant_id)
            return { failure: fail("invalid_grant", "The authorization code was already used."), revoked: c.grant_id !== null }
          }
          if (c.expired) return refuse("The authorization code has expired.")
          // required when the authorization request named it, which it must unless the client registered only one
          const redirectUri = params.redirect_uri ??
            (client.redirect_uris.length === 1 ? client.redirect_uris[0] : undefined)
          if (redirectUri !== c.redirect_uri) return refuse("redirect_uri does not match the authorization request.")
          if (!PKCE_VERIFIER.test(verifier) || !equalSecrets(s256(verifier), c.code_challenge)) {
            return refuse("The code_verifier does not match the code_challenge.")
          }
          if (params.resource !== undefined && c.resource !== null && !sameResource(params.resource, c.resource)) {
            return { failure: fail("invalid_target", "resource differs from the authorization request."), revoked: false }
          }
          const grantId = yield* repo.insertGrant({
            user_id: c.user_id,
            client_id: client.id,
            scopes: c.scopes,
            resource: params.resource ?? c.resource
          })
          yield* repo.markCodeUsed(c.id, grantId)
          return { ok: yield* tokenResponse(grantId, client, c.user_id, c.scopes) }
        }))
      })

    const refresh = (client: ClientRow, params: Params, issuer: string) =>
      Effect.gen(function*() {
        const token = params.refresh_token
        if (token === undefined || token === "") return yield* fail("invalid_request", "refresh_token is required.")
        if (params.resource !== undefined && !resourceAllowed(issuer, params.resource)) {
          return yield* fail("invalid_target", `Unknown resource: ${params.resource}`)
        }
        return yield* afterCommit(Effect.gen(function*() {
          const row = yield* repo.refreshTokenForUpdate(sha256Hex(token))
          const refuse = (description: string) => ({ failure: fail("invalid_grant", description), revoked: false })
          if (Option.isNone(row)) return refuse("Unknown refresh token.")
          const r = row.value
          if (r.client_id !== client.id) return refuse("The refresh token was issued to another client.")
          if (r.revoked) return refuse("The refresh token was revoked.")
          if (r.used) {
            // a rotated token came back: it leaked, or the client lost the newer one; either way end the grant
            yield* repo.revokeGrant(r.grant_id)
            return { failure: fail("invalid_grant", "The refresh token was already used."), revoked: true }
          }
          if (r.expired) return refuse("The refresh token has expired.")
          const asked = params.scope === undefined ? r.scopes : (params.scope.split(/\s+/).filter((s) => s.length > 0))
          if (asked.some((s) => !(r.scopes as ReadonlyArray<string>).includes(s))) {
            return { failure: fail("invalid_scope", "A refresh cannot widen the approved scopes."), revoked: false }
          }
          yield* repo.markRefreshTokenUsed(r.id)
          return { ok: yield* tokenResponse(r.grant_id, client, r.user_id, r.scopes.filter((s) => asked.includes(s))) }
        }))
      })

    /** `POST /token` (RFC 6749 3.2): authorization_code with PKCE, or refresh_token with rotation. */
    const token = Effect.fn("OAuth.token")(function*(params: Params, authorization: string | undefined, issuer: string) {
      const client = yield* authenticateClient(params, authorization)
      const grantType = params.grant_type
      if (grantType !== "authorization_code" && grantType !== "refresh_token") {
        return yield* fail("unsupported_grant_type", "grant_type must be authorization_code or refresh_token.")
      }
      if (!client.grant_types.includes(grantType)) {
        return yield* fail("unauthorized_client", `This client did not register the ${grantType} grant.`)
      }
      yield* Effect.annotateCurrentSpan({ client_id: client.id, grant_type: grantType })
      return yield* grantType === "authorization_code" ? exchangeCode(client, params, issuer) : refresh(client, params, issuer)
    })

    /**
     * `POST /revoke` (RFC 7009): an access or refresh token of the calling client ends its whole grant.
     * Unknown tokens, and tokens of other clients, are answered 200 as well (2.2), and left alone.
     */
    const revoke = Effect.fn("OAuth.revoke")(function*(params: Params, authorization: string | undefined) {
      const client = yield* authenticateClient(params, authorization)
      const token = params.token
      if (token === undefined || token === "") return yield* fail("invalid_request", "token is required.")
      const hash = sha256Hex(token)
      const access = yield* repo.oauthAccessTokenByHash(hash)
      const grantId = Option.isSome(access)
        ? (access.value.oauth_client_id === client.id ? access.value.oauth_grant_id : null)
        : Option.match(yield* repo.refreshTokenGrant(hash), {
          onNone: () => null,
          onSome: (r) => (r.client_id === client.id ? r.grant_id : null)
        })
      if (grantId === null) return
      yield* sql.withTransaction(repo.revokeGrant(grantId)).pipe(Effect.orDie)
      yield* identity.tokensChanged
    })

    /** The account page's list of applications holding a live grant of the user. */
    const connectedClients = (userId: UserId) => repo.connectedClients(userId)

    /** The user disconnects an application: every grant and token it holds for them ends now. */
    const disconnect = Effect.fn("OAuth.disconnect")(function*(userId: UserId, clientId: string) {
      const live = yield* sql.withTransaction(repo.revokeClientForUser(userId, clientId)).pipe(Effect.orDie)
      yield* identity.tokensChanged
      return live > 0
    })

    return {
      protectedResource,
      authorizationServer,
      register,
      checkAuthorizeRequest,
      approve,
      deny,
      token,
      revoke,
      connectedClients,
      disconnect
    }
  })
}) {}

const sameResource = (a: string, b: string) => a.replace(/\/+$/, "") === b.replace(/\/+$/, "")

/** The redirect URI with the response parameters added to its query (RFC 6749 4.1.2). */
const redirectWith = (redirectUri: string, params: Record<string, string | undefined>) => {
  const url = new URL(redirectUri)
  for (const [key, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(key, value)
  return url.toString()
}
