import { SqlClient, SqlSchema } from "@effect/sql"
import { OAuthGrantType, Scope, TokenEndpointAuthMethod, TokenId, UserId } from "@parley/domain"
import { Effect, Schema } from "effect"
import { StoredScopes } from "../identity/IdentityRepo.js"

export const ClientRow = Schema.Struct({
  id: Schema.String,
  secret_hash: Schema.NullOr(Schema.String),
  client_name: Schema.NullOr(Schema.String),
  client_uri: Schema.NullOr(Schema.String),
  redirect_uris: Schema.Array(Schema.String),
  grant_types: Schema.Array(OAuthGrantType),
  token_endpoint_auth_method: TokenEndpointAuthMethod,
  scope: Schema.NullOr(Schema.String),
  created_at: Schema.String
})
export type ClientRow = typeof ClientRow.Type

export const CodeRow = Schema.Struct({
  id: Schema.Number,
  client_id: Schema.String,
  user_id: UserId,
  redirect_uri: Schema.String,
  code_challenge: Schema.String,
  scopes: StoredScopes,
  resource: Schema.NullOr(Schema.String),
  used: Schema.Boolean,
  expired: Schema.Boolean,
  grant_id: Schema.NullOr(Schema.Number)
})
export type CodeRow = typeof CodeRow.Type

export const RefreshTokenRow = Schema.Struct({
  id: Schema.Number,
  grant_id: Schema.Number,
  client_id: Schema.String,
  user_id: UserId,
  scopes: StoredScopes,
  resource: Schema.NullOr(Schema.String),
  used: Schema.Boolean,
  revoked: Schema.Boolean,
  expired: Schema.Boolean
})
export type RefreshTokenRow = typeof RefreshTokenRow.Type

export const ConnectedClientRow = Schema.Struct({
  client_id: Schema.String,
  client_name: Schema.NullOr(Schema.String),
  client_uri: Schema.NullOr(Schema.String),
  scopes: StoredScopes,
  first_authorized_at: Schema.String,
  last_used_at: Schema.NullOr(Schema.String)
})
export type ConnectedClientRow = typeof ConnectedClientRow.Type

const OAuthAccessTokenRow = Schema.Struct({
  id: TokenId,
  oauth_client_id: Schema.NullOr(Schema.String),
  oauth_grant_id: Schema.NullOr(Schema.Number)
})

const RefreshTokenGrantRow = Schema.Struct({ grant_id: Schema.Number, client_id: Schema.String })

const ClientUser = Schema.Struct({ userId: UserId, clientId: Schema.String })

/** SQL for OAuth clients, codes, grants, refresh tokens. Database failures are defects here. */
export class OAuthRepo extends Effect.Service<OAuthRepo>()("@parley/server/OAuthRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** A grant is live while neither it nor its refresh token family has been revoked or run out. */
    const liveGrant = sql`
      g.revoked_at is null and (
        exists (select 1 from oauth_refresh_tokens r
                where r.grant_id = g.id and r.used_at is null and r.revoked_at is null and r.expires_at > now())
        or exists (select 1 from access_tokens t
                   where t.oauth_grant_id = g.id and t.revoked_at is null and (t.expires_at is null or t.expires_at > now())))`

    const clientById = SqlSchema.findOne({
      Request: Schema.String,
      Result: ClientRow,
      execute: (id) =>
        sql`
          select id, secret_hash, client_name, client_uri, redirect_uris, grant_types, token_endpoint_auth_method, scope, created_at
          from oauth_clients where id = ${id}`
    })

    const codeForUpdate = SqlSchema.findOne({
      Request: Schema.String,
      Result: CodeRow,
      execute: (hash) =>
        sql`
          select id, client_id, user_id, redirect_uri, code_challenge, scopes, resource, grant_id,
                 (used_at is not null) as used, (expires_at <= now()) as expired
          from oauth_codes where code_hash = ${hash} for update`
    })

    const refreshTokenForUpdate = SqlSchema.findOne({
      Request: Schema.String,
      Result: RefreshTokenRow,
      execute: (hash) =>
        sql`
          select r.id, r.grant_id, g.client_id, g.user_id, g.scopes, g.resource,
                 (r.used_at is not null) as used,
                 (r.revoked_at is not null or g.revoked_at is not null) as revoked,
                 (r.expires_at <= now()) as expired
          from oauth_refresh_tokens r join oauth_grants g on g.id = r.grant_id
          where r.token_hash = ${hash} for update of r`
    })

    const oauthAccessTokenByHash = SqlSchema.findOne({
      Request: Schema.String,
      Result: OAuthAccessTokenRow,
      execute: (hash) => sql`select id, oauth_client_id, oauth_grant_id from access_tokens where token_hash = ${hash}`
    })

    const refreshTokenGrant = SqlSchema.findOne({
      Request: Schema.String,
      Result: RefreshTokenGrantRow,
      execute: (hash) =>
        sql`
          select r.grant_id, g.client_id from oauth_refresh_tokens r join oauth_grants g on g.id = r.grant_id
          where r.token_hash = ${hash}`
    })

    const liveGrantCount = SqlSchema.single({
      Request: ClientUser,
      Result: Schema.Struct({ n: Schema.Number }),
      execute: ({ clientId, userId }) =>
        sql`
          select count(*)::int as n from oauth_grants g
          where g.user_id = ${userId} and g.client_id = ${clientId} and ${liveGrant}`
    })

    const connectedClients = SqlSchema.findAll({
      Request: UserId,
      Result: ConnectedClientRow,
      execute: (userId) =>
        sql`
          select c.id as client_id, c.client_name, c.client_uri,
                 array(select distinct s from oauth_grants g2, unnest(g2.scopes) s
                       where g2.user_id = ${userId} and g2.client_id = c.id and g2.revoked_at is null order by s) as scopes,
                 min(g.created_at) as first_authorized_at,
                 (select max(t.last_used_at) from access_tokens t where t.user_id = ${userId} and t.oauth_client_id = c.id) as last_used_at
          from oauth_grants g join oauth_clients c on c.id = g.client_id
          where g.user_id = ${userId} and ${liveGrant}
          group by c.id
          order by max(g.created_at) desc`
    })

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

      clientById: (id: string) => clientById(id).pipe(Effect.orDie),

      /** Codes live minutes; after a day even replay detection no longer needs them. */
      sweepCodes: sql`delete from oauth_codes where expires_at < now() - interval '1 day'`.pipe(
        Effect.asVoid,
        Effect.orDie
      ),

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
      codeForUpdate: (hash: string) => codeForUpdate(hash).pipe(Effect.orDie),

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

      refreshTokenForUpdate: (hash: string) => refreshTokenForUpdate(hash).pipe(Effect.orDie),

      markRefreshTokenUsed: (id: number) =>
        sql`update oauth_refresh_tokens set used_at = now() where id = ${id}`.pipe(Effect.asVoid, Effect.orDie),

      /** An access token issued to some OAuth client, for revocation (RFC 7009). */
      oauthAccessTokenByHash: (hash: string) => oauthAccessTokenByHash(hash).pipe(Effect.orDie),

      refreshTokenGrant: (hash: string) => refreshTokenGrant(hash).pipe(Effect.orDie),

      /** The grant and every token issued from it. Run inside a transaction. */
      revokeGrant: (grantId: number) =>
        Effect.all([
          sql`update oauth_grants set revoked_at = coalesce(revoked_at, now()) where id = ${grantId}`,
          sql`update oauth_refresh_tokens set revoked_at = coalesce(revoked_at, now()) where grant_id = ${grantId}`,
          sql`update access_tokens set revoked_at = coalesce(revoked_at, now()) where oauth_grant_id = ${grantId}`
        ], { discard: true }).pipe(Effect.orDie),

      /**
       * Every grant a user gave one client, with their tokens; how many live grants there were. Run inside a
       * transaction.
       */
      revokeClientForUser: (userId: UserId, clientId: string) =>
        Effect.gen(function*() {
          const live = yield* liveGrantCount({ userId, clientId })
          yield* sql`
            update oauth_refresh_tokens set revoked_at = coalesce(revoked_at, now())
            where grant_id in (select id from oauth_grants where user_id = ${userId} and client_id = ${clientId})`
          yield* sql`
            update access_tokens set revoked_at = coalesce(revoked_at, now())
            where user_id = ${userId} and oauth_client_id = ${clientId}`
          yield* sql`
            update oauth_grants set revoked_at = coalesce(revoked_at, now())
            where user_id = ${userId} and client_id = ${clientId}`
          return live.n
        }).pipe(Effect.orDie),

      /** Clients holding a live grant of the user: the union of what was approved, newest first. */
      connectedClients: (userId: UserId) => connectedClients(userId).pipe(Effect.orDie)
    }
  })
}) {}
