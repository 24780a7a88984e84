import { SqlClient } from "@effect/sql"
import type { OAuthTokenResponse, Scope, UserId } from "@parley/domain"
import { Effect, Option } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import { Identity } from "../identity/Identity.js"
import { randomBase62, sha256Hex } from "../identity/Secrets.js"
import { type OAuthFailure, oauthFailure as fail } from "./OAuthErrors.js"
import { type ClientRow, OAuthRepo } from "./OAuthRepo.js"
import {
  basicCredentials,
  equalSecrets,
  type OAuthParams,
  pkceVerifies,
  resourceAllowed,
  sameResource
} from "./OAuthRequests.js"

/**
 * The client-authenticated side of the authorization server (SPEC.md 5.2): `POST /token` turns a code or
 * a refresh token into an access token of a grant, `POST /revoke` ends a grant.
 */
export class OAuthGrants extends Effect.Service<OAuthGrants>()("@parley/server/OAuthGrants", {
  dependencies: [OAuthRepo.Default, Identity.Default, AppConfig.Default],
  effect: Effect.gen(function*() {
    const repo = yield* OAuthRepo
    const identity = yield* Identity
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig

    /** RFC 6749 2.3.1: a public client names itself; a confidential one proves it with its secret (body or Basic). */
    const authenticateClient = Effect.fn("OAuthGrants.authenticateClient")(
      function*(params: OAuthParams, authorization: string | undefined) {
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
      }
    )

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
      body: Effect.Effect<
        { readonly ok: A } | { readonly failure: OAuthFailure; readonly revoked: boolean },
        OAuthFailure
      >
    ) =>
      Effect.gen(function*() {
        const result = yield* sql.withTransaction(body).pipe(Effect.catchTag("SqlError", Effect.die))
        if ("ok" in result) return result.ok
        if (result.revoked) yield* identity.tokensChanged
        return yield* result.failure
      })

    const exchangeCode = (client: ClientRow, params: OAuthParams, issuer: string) =>
      Effect.gen(function*() {
        const code = params.code
        if (code === undefined || code === "") return yield* fail("invalid_request", "code is required.")
        const verifier = params.code_verifier
        if (verifier === undefined || verifier === "") {
          return yield* fail("invalid_request", "code_verifier is required (PKCE).")
        }
        if (params.resource !== undefined && !resourceAllowed(issuer, params.resource)) {
          return yield* fail("invalid_target", `Unknown resource: ${params.resource}`)
        }
        return yield* afterCommit(Effect.gen(function*() {
          const row = yield* repo.codeForUpdate(sha256Hex(code))
          const refuse = (description: string) => ({ failure: fail("invalid_grant", description), revoked: false })
          if (Option.isNone(row)) {
            return refuse("Unknown authorization code.")
          }
          const c = row.value
          if (c.client_id !== client.id) return refuse("The authorization code was issued to another client.")
          if (c.used) {
            if (c.grant_id !== null) yield* repo.revokeGrant(c.grant_id)
            return {
              failure: fail("invalid_grant", "The authorization code was already used."),
              revoked: c.grant_id !== null
            }
          }
          if (c.expired) return refuse("The authorization code has expired.")
          // required when the authorization request named it, which it must unless the client registered only one
          const redirectUri = params.redirect_uri ??
            (client.redirect_uris.length === 1 ? client.redirect_uris[0] : undefined)
          if (redirectUri !== c.redirect_uri) return refuse("redirect_uri does not match the authorization request.")
          if (!pkceVerifies(verifier, c.code_challenge)) {
            return refuse("The code_verifier does not match the code_challenge.")
          }
          if (params.resource !== undefined && c.resource !== null && !sameResource(params.resource, c.resource)) {
            return {
              failure: fail("invalid_target", "resource differs from the authorization request."),
              revoked: false
            }
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

    const refresh = (client: ClientRow, params: OAuthParams, issuer: string) =>
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
    const token = Effect.fn("OAuthGrants.token")(
      function*(params: OAuthParams, authorization: string | undefined, issuer: string) {
        const client = yield* authenticateClient(params, authorization)
        const grantType = params.grant_type
        if (grantType !== "authorization_code" && grantType !== "refresh_token") {
          return yield* fail("unsupported_grant_type", "grant_type must be authorization_code or refresh_token.")
        }
        if (!client.grant_types.includes(grantType)) {
          return yield* fail("unauthorized_client", `This client did not register the ${grantType} grant.`)
        }
        yield* Effect.annotateCurrentSpan({ client_id: client.id, grant_type: grantType })
        return yield* grantType === "authorization_code"
          ? exchangeCode(client, params, issuer)
          : refresh(client, params, issuer)
      }
    )

    /**
     * `POST /revoke` (RFC 7009): an access or refresh token of the calling client ends its whole grant.
     * Unknown tokens, and tokens of other clients, are answered 200 as well (2.2), and left alone.
     */
    const revoke = Effect.fn("OAuthGrants.revoke")(function*(params: OAuthParams, authorization: string | undefined) {
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

    return { token, revoke }
  })
}) {}
