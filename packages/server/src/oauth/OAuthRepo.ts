import { SqlClient } from "@effect/sql"
import type { OAuthGrantType, Scope, TokenEndpointAuthMethod, TokenId, UserId } from "@parley/domain"
import { Effect, Option } from "effect"

export interface ClientRow {
  readonly id: string
  readonly secret_hash: string | null
  readonly client_name: string | null
  readonly client_uri: string | null
  readonly redirect_uris: ReadonlyArray<string>
  readonly grant_types: ReadonlyArray<OAuthGrantType>
  readonly token_endpoint_auth_method: TokenEndpointAuthMethod
  readonly scope: string | null
  readonly created_at: string
}

export interface CodeRow {
  readonly id: number
  readonly client_id: string
  readonly user_id: UserId
  readonly redirect_uri: string
  readonly code_challenge: string
  readonly scopes: ReadonlyArray<Scope>
  readonly resource: string | null
  readonly used: boolean
  readonly expired: boolean
  readonly grant_id: number | null
}

export interface RefreshTokenRow {
  readonly id: number
  readonly grant_id: number
  readonly client_id: string
  readonly user_id: UserId
  readonly scopes: ReadonlyArray<Scope>
  readonly resource: string | null
  readonly used: boolean
  readonly revoked: boolean
  readonly expired: boolean
}

export interface ConnectedClientRow {
  readonly client_id: string
  readonly client_name: string | null
  readonly client_uri: string | null
  readonly scopes: ReadonlyArray<Scope>
  readonly first_authorized_at: string
  readonly last_used_at: string | null
}

/** SQL for OAuth clients, codes, grants, refresh tokens. Database failures are defects here. */
export class OAuthRepo extends Effect.Service<OAuthRepo>()("@parley/server/OAuthRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])

    /** A grant is live while neither it nor its refresh token family has been revoked or run out. */
    const liveGrant = sql`
      g.revoked_at is null and (
        exists (select 1 from oauth_refresh_tokens r
                where r.grant_id = g.id and r.used_at is null and r.revoked_at is null and r.expires_at > now())
        or exists (select 1 from access_tokens t
                   where t.oauth_grant_id = g.id and t.revoked_at is null and (t.expires_at is null or t.expires_at > now())))`

    return {
      insertClient: (c: {
        id: string
        secret_hash: string | null
        client_name: string | null
        client_uri: string | null
        redirect_uris: ReadonlyArray<string>
        grant_types: ReadonlyArray<OAuthGrantType>
        token_endpoint_auth_method: TokenEndpointAuthMethod
        scope: string | null
      }) =>
        sql<{ created_at: string }>`
          insert into oauth_clients (id, secret_hash, client_name, client_uri, redirect_uris, grant_types, token_endpoint_auth_method, scope)
          values (${c.id}, ${c.secret_hash}, ${c.client_name}, ${c.client_uri}, ${c.redirect_uris}::text[],
                  ${c.grant_types}::text[], ${c.token_endpoint_auth_method}, ${c.scope})
          returning created_at`.pipe(Effect.map((rows) => rows[0]!), Effect.orDie),

      clientById: (id: string) =>
        sql<ClientRow>`
          select id, secret_hash, client_name, client_uri, redirect_uris, grant_types, token_endpoint_auth_method, scope, created_at
          from oauth_clients where id = ${id}`.pipe(Effect.map(first), Effect.orDie),

      /** Codes live minutes; after a day even replay detection no longer needs them. */
      sweepCodes: sql`delete from oauth_codes where expires_at < now() - interval '1 day'`.pipe(Effect.asVoid, Effect.orDie),

      insertCode: (c: {
        code_hash: string
        client_id: string
        user_id: UserId
        redirect_uri: string
        code_challenge: string
        scopes: ReadonlyArray<Scope>
        resource: string | null
        expires_at: Date
      }) =>
        sql`
          insert into oauth_codes (code_hash, client_id, user_id, redirect_uri, code_challenge, scopes, resource, expires_at)
          values (${c.code_hash}, ${c.client_id}, ${c.user_id}, ${c.redirect_uri}, ${c.code_challenge},
                  ${c.scopes}::text[], ${c.resource}, ${c.expires_at})`.pipe(Effect.asVoid, Effect.orDie),

      /** The code, locked for the rest of the transaction so two exchanges of one code serialise. */
      codeForUpdate: (hash: string) =>
        sql<CodeRow>`
          select id, client_id, user_id, redirect_uri, code_challenge, scopes, resource, grant_id,
                 (used_at is not null) as used, (expires_at <= now()) as expired
          from oauth_codes where code_hash = ${hash} for update`.pipe(Effect.map(first), Effect.orDie),

      markCodeUsed: (id: number, grantId: number | null) =>
        sql`update oauth_codes set used_at = coalesce(used_at, now()), grant_id = coalesce(${grantId}, grant_id) where id = ${id}`
          .pipe(Effect.asVoid, Effect.orDie),

      insertGrant: (g: { user_id: UserId; client_id: string; scopes: ReadonlyArray<Scope>; resource: string | null }) =>
        sql<{ id: number }>`
          insert into oauth_grants (user_id, client_id, scopes, resource)
          values (${g.user_id}, ${g.client_id}, ${g.scopes}::text[], ${g.resource})
          returning id`.pipe(Effect.map((rows) => rows[0]!.id), Effect.orDie),

      insertRefreshToken: (r: { token_hash: string; grant_id: number; expires_at: Date }) =>
        sql`
          insert into oauth_refresh_tokens (token_hash, grant_id, expires_at)
          values (${r.token_hash}, ${r.grant_id}, ${r.expires_at})`.pipe(Effect.asVoid, Effect.orDie),

      refreshTokenForUpdate: (hash: string) =>
        sql<RefreshTokenRow>`
          select r.id, r.grant_id, g.client_id, g.user_id, g.scopes, g.resource,
                 (r.used_at is not null) as used,
                 (r.revoked_at is not null or g.revoked_at is not null) as revoked,
                 (r.expires_at <= now()) as expired
          from oauth_refresh_tokens r join oauth_grants g on g.id = r.grant_id
          where r.token_hash = ${hash} for update of r`.pipe(Effect.map(first), Effect.orDie),

      markRefreshTokenUsed: (id: number) =>
        sql`update oauth_refresh_tokens set used_at = now() where id = ${id}`.pipe(Effect.asVoid, Effect.orDie),

      /** An access token issued to some OAuth client, for revocation (RFC 7009). */
      oauthAccessTokenByHash: (hash: string) =>
        sql<{ id: TokenId; oauth_client_id: string | null; oauth_grant_id: number | null }>`
          select id, oauth_client_id, oauth_grant_id from access_tokens where token_hash = ${hash}`.pipe(
          Effect.map(first),
          Effect.orDie
        ),

      refreshTokenGrant: (hash: string) =>
        sql<{ grant_id: number; client_id: string }>`
          select r.grant_id, g.client_id from oauth_refresh_tokens r join oauth_grants g on g.id = r.grant_id
          where r.token_hash = ${hash}`.pipe(Effect.map(first), Effect.orDie),

      /** The grant and every token issued from it. Run inside a transaction. */
      revokeGrant: (grantId: number) =>
        Effect.all([
          sql`update oauth_grants set revoked_at = coalesce(revoked_at, now()) where id = ${grantId}`,
          sql`update oauth_refresh_tokens set revoked_at = coalesce(revoked_at, now()) where grant_id = ${grantId}`,
          sql`update access_tokens set revoked_at = coalesce(revoked_at, now()) where oauth_grant_id = ${grantId}`
        ], { discard: true }).pipe(Effect.orDie),

      /** Every grant a user gave one client, with their tokens; how many live grants there were. Run inside a transaction. */
      revokeClientForUser: (userId: UserId, clientId: string) =>
        Effect.gen(function*() {
          const live = yield* sql<{ n: number }>`
            select count(*)::int as n from oauth_grants g
            where g.user_id = ${userId} and g.client_id = ${clientId} and ${liveGrant}`
          yield* sql`
            update oauth_refresh_tokens set revoked_at = coalesce(revoked_at, now())
            where grant_id in (select id from oauth_grants where user_id = ${userId} and client_id = ${clientId})`
          yield* sql`
            update access_tokens set revoked_at = coalesce(revoked_at, now())
            where user_id = ${userId} and oauth_client_id = ${clientId}`
          yield* sql`
            update oauth_grants set revoked_at = coalesce(revoked_at, now())
            where user_id = ${userId} and client_id = ${clientId}`
          return live[0]!.n
        }).pipe(Effect.orDie),

      /** Clients holding a live grant of the user: the union of what was approved, newest first. */
      connectedClients: (userId: UserId) =>
        sql<ConnectedClientRow>`
          select c.id as client_id, c.client_name, c.client_uri,
                 array(select distinct s from oauth_grants g2, unnest(g2.scopes) s
                       where g2.user_id = ${userId} and g2.client_id = c.id and g2.revoked_at is null order by s) as scopes,
                 min(g.created_at) as first_authorized_at,
                 (select max(t.last_used_at) from access_tokens t where t.user_id = ${userId} and t.oauth_client_id = c.id) as last_used_at
          from oauth_grants g join oauth_clients c on c.id = g.client_id
          where g.user_id = ${userId} and ${liveGrant}
          group by c.id
          order by max(g.created_at) desc`.pipe(Effect.orDie)
    }
  })
}) {}
