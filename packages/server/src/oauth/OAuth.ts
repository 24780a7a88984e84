import { SqlClient } from "@effect/sql"
import {
  type AuthorizationServerMetadata,
  ClientRegistrationRequest,
  type ClientRegistrationResponse,
  type OAuthErrorCode,
  type OAuthGrantType,
  type ProtectedResourceMetadata,
  Scopes,
  type TokenEndpointAuthMethod,
  type UserId
} from "@parley/domain"
import { Effect, Option, ParseResult, Schema } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import { Identity } from "../identity/Identity.js"
import { randomBase62, sha256Hex } from "../identity/Secrets.js"
import { RateLimits } from "../limits/RateLimits.js"
import { MCP_SCOPE, McpScopes } from "../mcp/Scopes.js"
import { AuthorizeRedirectError, AuthorizeRefused, OAuthFailure, oauthFailure as fail } from "./OAuthErrors.js"
import { OAuthGrants } from "./OAuthGrants.js"
import { OAuthRepo } from "./OAuthRepo.js"
import {
  authorizeParams,
  type AuthorizeRequest,
  isPkceChallenge,
  type OAuthParams,
  redirectUriProblem,
  redirectUriRegistered,
  redirectWith,
  requestedScopes,
  resourceAllowed
} from "./OAuthRequests.js"

const CODE_TTL_MS = 5 * 60_000

/**
 * The authorization server in front of `/mcp` (SPEC.md 5.2): discovery documents, dynamic client
 * registration, authorization codes with PKCE, rotating refresh tokens, revocation (the last two in
 * OAuthGrants). Access tokens are ordinary access tokens (Identity) with the client and grant they came from.
 */
export class OAuth extends Effect.Service<OAuth>()("@parley/server/OAuth", {
  dependencies: [OAuthRepo.Default, OAuthGrants.Default, Identity.Default, AppConfig.Default, RateLimits.Default],
  effect: Effect.gen(function*() {
    const repo = yield* OAuthRepo
    const grants = yield* OAuthGrants
    const identity = yield* Identity
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const limits = yield* RateLimits
    const registrations = { limit: config.oauthRegistrationsPerHour, windowMs: 3_600_000 }

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
      const taken = yield* limits.take(`oauth-register:${address}`, registrations)
      if (taken._tag === "Blocked") {
        return yield* new OAuthFailure({
          error: "too_many_requests",
          description: "Too many client registrations from this address; try again later.",
          status: 429,
          retryAfter: taken.retryAfter
        })
      }
      const input = yield* Schema.decodeUnknown(ClientRegistrationRequest)(body, { errors: "first" }).pipe(
        Effect.mapError((e) => {
          const problem = ParseResult.ArrayFormatter.formatErrorSync(e)[0]
          const field = problem?.path[0]
          return fail(
            field === "redirect_uris" ? "invalid_redirect_uri" : "invalid_client_metadata",
            problem === undefined
              ? "Invalid client metadata."
              : `${problem.path.join(".") || "body"}: ${problem.message}`
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
    const checkAuthorizeRequest = Effect.fn("OAuth.checkAuthorizeRequest")(
      function*(params: OAuthParams, issuer: string) {
        const clientId = params.client_id
        if (clientId === undefined || clientId === "") {
          return yield* new AuthorizeRefused({ message: "The request names no client (client_id)." })
        }
        const client = yield* repo.clientById(clientId)
        if (Option.isNone(client)) {
          return yield* new AuthorizeRefused({ message: "This application is not registered with Parley." })
        }
        const redirectUri = params.redirect_uri ??
          (client.value.redirect_uris.length === 1 ? client.value.redirect_uris[0]! : undefined)
        if (redirectUri === undefined) {
          return yield* new AuthorizeRefused({ message: "The request names no redirect URI (redirect_uri)." })
        }
        if (!redirectUriRegistered(client.value, redirectUri)) {
          return yield* new AuthorizeRefused({ message: "The redirect URI is not registered for this application." })
        }
        const redirectError = (error: OAuthErrorCode, description: string) =>
          new AuthorizeRedirectError({
            redirectTo: redirectWith(redirectUri, {
              error,
              error_description: description,
              state: params.state,
              iss: issuer
            })
          })

        if (params.response_type !== "code") {
          return yield* redirectError("unsupported_response_type", "Only response_type=code is supported.")
        }
        if (params.code_challenge === undefined || params.code_challenge === "") {
          return yield* redirectError("invalid_request", "PKCE is required: code_challenge is missing.")
        }
        if (params.code_challenge_method !== "S256") {
          return yield* redirectError("invalid_request", "PKCE code_challenge_method must be S256.")
        }
        if (!isPkceChallenge(params.code_challenge)) {
          return yield* redirectError("invalid_request", "The code_challenge is not a base64url SHA-256 digest.")
        }
        if (params.resource !== undefined && !resourceAllowed(issuer, params.resource)) {
          return yield* redirectError("invalid_target", `Unknown resource: ${params.resource}`)
        }
        const request: AuthorizeRequest = {
          client: client.value,
          redirectUri,
          codeChallenge: params.code_challenge,
          state: params.state,
          resource: params.resource,
          scopes: requestedScopes(params.scope ?? client.value.scope),
          params: authorizeParams(params, redirectUri)
        }
        return request
      }
    )

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
      token: grants.token,
      revoke: grants.revoke,
      connectedClients,
      disconnect
    }
  })
}) {}
