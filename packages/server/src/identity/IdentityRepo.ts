import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import type { Scope, TokenId, UserId, WorkspaceId } from "@parley/domain"

export interface TokenRow {
  readonly id: TokenId
  readonly user_id: UserId
  readonly name: string
  readonly scopes: ReadonlyArray<Scope>
  readonly expires_at: string | null
  readonly expired: boolean
  readonly revoked: boolean
  readonly is_super_user: boolean
  readonly last_used_at: string | null
}

/** A personal access token as its owner sees it in the account pages (never the secret). */
export interface PersonalTokenRow {
  readonly id: TokenId
  readonly name: string
  readonly token_hint: string
  readonly scopes: ReadonlyArray<Scope>
  readonly created_at: string
  readonly last_used_at: string | null
  readonly expires_at: string | null
  readonly expired: boolean
}

export interface UserRow {
  readonly id: UserId
  readonly email: string
  readonly name: string | null
  readonly is_super_user: boolean
  readonly created_at: string
}

export interface MembershipRow {
  readonly id: WorkspaceId
  readonly name: string
  readonly role: "owner" | "manager"
  readonly is_subscription_active: boolean
  readonly credits: number
  readonly training_credits: number
}

/** SQL for users, workspaces, memberships and tokens. Database failures are defects here. */
export class IdentityRepo extends Effect.Service<IdentityRepo>()("@parley/server/IdentityRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])
    const selectToken = sql`
      select t.id, t.user_id, t.name, t.scopes, t.expires_at, t.last_used_at,
             (t.expires_at is not null and t.expires_at <= now()) as expired,
             (t.revoked_at is not null) as revoked,
             u.is_super_user
      from access_tokens t join users u on u.id = t.user_id`

    return {
      tokenByHash: (hash: string) =>
        sql<TokenRow>`${selectToken} where t.token_hash = ${hash}`.pipe(Effect.map(first), Effect.orDie),

      tokenById: (id: TokenId) => sql<TokenRow>`${selectToken} where t.id = ${id}`.pipe(Effect.map(first), Effect.orDie),

      memberships: (userId: UserId) =>
        sql<MembershipRow>`
          select w.id, w.name, m.role, w.is_subscription_active, w.credits, w.training_credits
          from memberships m join workspaces w on w.id = m.workspace_id
          where m.user_id = ${userId}
          order by (m.role = 'owner') desc, w.id`.pipe(Effect.orDie),

      userById: (id: UserId) =>
        sql<UserRow>`select id, email, name, is_super_user, created_at from users where id = ${id}`.pipe(
          Effect.map(first),
          Effect.orDie
        ),

      userByEmail: (email: string) =>
        sql<UserRow & { readonly password_hash: string }>`
          select id, email, name, is_super_user, created_at, password_hash from users where lower(email) = lower(${email})`
          .pipe(Effect.map(first), Effect.orDie),

      insertUser: (u: { email: string; name: string | null; password_hash: string }) =>
        sql<UserRow>`insert into users ${sql.insert(u)} returning id, email, name, is_super_user, created_at`.pipe(
          Effect.map((rows) => rows[0]!),
          Effect.orDie
        ),

      insertWorkspace: (w: { name: string; credits: number; training_credits: number }) =>
        sql<{ id: WorkspaceId }>`insert into workspaces ${sql.insert(w)} returning id`.pipe(
          Effect.map((rows) => rows[0]!.id),
          Effect.orDie
        ),

      workspaceExists: (id: WorkspaceId) =>
        sql`select 1 from workspaces where id = ${id}`.pipe(Effect.map((r) => r.length > 0), Effect.orDie),

      upsertMembership: (userId: UserId, workspaceId: WorkspaceId, role: "owner" | "manager") =>
        sql`
          insert into memberships (user_id, workspace_id, role) values (${userId}, ${workspaceId}, ${role})
          on conflict (user_id, workspace_id) do nothing`.pipe(Effect.asVoid, Effect.orDie),

      setSuperUser: (id: UserId) =>
        sql`update users set is_super_user = true, updated_at = now() where id = ${id}`.pipe(Effect.asVoid, Effect.orDie),

      updateWorkspace: (
        id: WorkspaceId,
        set: { credits?: number; training_credits?: number; is_subscription_active?: boolean }
      ) =>
        sql<MembershipRow>`
          update workspaces set
            credits = coalesce(${set.credits ?? null}::numeric, credits),
            training_credits = coalesce(${set.training_credits ?? null}::numeric, training_credits),
            is_subscription_active = coalesce(${set.is_subscription_active ?? null}::boolean, is_subscription_active),
            updated_at = now()
          where id = ${id}
          returning id, name, 'owner' as role, is_subscription_active, credits, training_credits`.pipe(
          Effect.map(first),
          Effect.orDie
        ),

      trainingCredits: (id: WorkspaceId | number) =>
        sql<{ training_credits: number }>`select training_credits::float8 as training_credits from workspaces where id = ${id}`.pipe(
          Effect.map((rows) => Number(rows[0]?.training_credits ?? 0)),
          Effect.orDie
        ),

      /** One credit per point embedded (knowledge upserts), in the caller's transaction. */
      spendTrainingCredits: (id: WorkspaceId | number, credits: number) =>
        sql`update workspaces set training_credits = training_credits - ${credits}, updated_at = now() where id = ${id}`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),

      insertToken: (t: {
        user_id: UserId
        name: string
        token_hash: string
        token_hint: string
        scopes: ReadonlyArray<Scope>
        expires_at: Date | null
        oauth_client_id?: string
        oauth_grant_id?: number
        account_session_id?: number
      }) =>
        sql<{ id: TokenId; created_at: string; expires_at: string | null }>`
          insert into access_tokens (user_id, name, token_hash, token_hint, scopes, expires_at, oauth_client_id, oauth_grant_id, account_session_id)
          values (${t.user_id}, ${t.name}, ${t.token_hash}, ${t.token_hint}, ${t.scopes}::text[],
                  ${t.expires_at}, ${t.oauth_client_id ?? null}, ${t.oauth_grant_id ?? null}, ${t.account_session_id ?? null})
          returning id, created_at, expires_at`.pipe(Effect.map((rows) => rows[0]!), Effect.orDie),

      revokeToken: (id: TokenId) =>
        sql<{ id: TokenId }>`
          update access_tokens set revoked_at = coalesce(revoked_at, now()) where id = ${id} returning id`.pipe(
          Effect.map((r) => r.length > 0),
          Effect.orDie
        ),

      /** The user's own live personal tokens (OAuth tokens are listed per client instead), newest first. */
      personalTokens: (userId: UserId) =>
        sql<PersonalTokenRow>`
          select id, name, token_hint, scopes, created_at, last_used_at, expires_at,
                 (expires_at is not null and expires_at <= now()) as expired
          from access_tokens
          where user_id = ${userId} and oauth_client_id is null and account_session_id is null and revoked_at is null
          order by id desc`.pipe(Effect.orDie),

      revokeUserToken: (userId: UserId, id: TokenId) =>
        sql<{ id: TokenId }>`
          update access_tokens set revoked_at = now()
          where id = ${id} and user_id = ${userId} and oauth_client_id is null and account_session_id is null and revoked_at is null
          returning id`.pipe(Effect.map((r) => r.length > 0), Effect.orDie),

      /** The session's console tokens that ran out: each console page asks for a new one before its last expires. */
      sweepSessionTokens: (sessionId: number) =>
        sql`delete from access_tokens where account_session_id = ${sessionId} and expires_at <= now()`.pipe(Effect.asVoid, Effect.orDie),

      touchToken: (id: TokenId) =>
        sql`update access_tokens set last_used_at = now() where id = ${id}`.pipe(Effect.asVoid, Effect.orDie)
    }
  })
}) {}
