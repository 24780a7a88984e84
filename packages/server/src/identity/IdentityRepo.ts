import { SqlClient, SqlSchema } from "@effect/sql"
import { Scope, TokenId, UserId, WorkspaceId } from "@parley/domain"
import { Effect, Option, Schema } from "effect"
import * as WorkspaceWrites from "../tables/WorkspaceWrites.js"

/** Stored scopes as granted today: one no longer in `Scopes` (a scope retired) grants nothing, and fails no read. */
export const StoredScopes = Schema.transform(Schema.Array(Schema.String), Schema.Array(Scope), {
  strict: true,
  decode: (stored) => stored.filter(Schema.is(Scope)),
  encode: (scopes) => scopes
})

export const TokenRow = Schema.Struct({
  id: TokenId,
  user_id: UserId,
  name: Schema.String,
  scopes: StoredScopes,
  expires_at: Schema.NullOr(Schema.String),
  expired: Schema.Boolean,
  revoked: Schema.Boolean,
  is_super_user: Schema.Boolean,
  last_used_at: Schema.NullOr(Schema.String)
})
export type TokenRow = typeof TokenRow.Type

/** A personal access token as its owner sees it in the account pages (never the secret). */
export const PersonalTokenRow = Schema.Struct({
  id: TokenId,
  name: Schema.String,
  token_hint: Schema.String,
  scopes: StoredScopes,
  created_at: Schema.String,
  last_used_at: Schema.NullOr(Schema.String),
  expires_at: Schema.NullOr(Schema.String),
  expired: Schema.Boolean
})
export type PersonalTokenRow = typeof PersonalTokenRow.Type

export const UserRow = Schema.Struct({
  id: UserId,
  email: Schema.String,
  name: Schema.NullOr(Schema.String),
  is_super_user: Schema.Boolean,
  created_at: Schema.String
})
export type UserRow = typeof UserRow.Type

const UserWithPassword = Schema.Struct({ ...UserRow.fields, password_hash: Schema.String })

export const MembershipRow = Schema.Struct({
  id: WorkspaceId,
  name: Schema.String,
  role: Schema.Literal("owner", "manager"),
  is_subscription_active: Schema.Boolean,
  credits: Schema.Number,
  training_credits: Schema.Number
})
export type MembershipRow = typeof MembershipRow.Type

const NewUser = Schema.Struct({
  email: Schema.String,
  name: Schema.NullOr(Schema.String),
  password_hash: Schema.String
})

const NewWorkspace = Schema.Struct({ name: Schema.String, credits: Schema.Number, training_credits: Schema.Number })

/** `null` keeps what is stored. */
const WorkspaceChanges = Schema.Struct({
  id: Schema.Number,
  credits: Schema.NullOr(Schema.Number),
  training_credits: Schema.NullOr(Schema.Number),
  is_subscription_active: Schema.NullOr(Schema.Boolean)
})

const NewToken = Schema.Struct({
  user_id: UserId,
  name: Schema.String,
  token_hash: Schema.String,
  token_hint: Schema.String,
  scopes: Schema.Array(Scope),
  expires_at: Schema.NullOr(Schema.DateFromSelf),
  oauth_client_id: Schema.optional(Schema.String),
  oauth_grant_id: Schema.optional(Schema.Number),
  account_session_id: Schema.optional(Schema.Number)
})

const InsertedToken = Schema.Struct({
  id: TokenId,
  created_at: Schema.String,
  expires_at: Schema.NullOr(Schema.String)
})

const UserToken = Schema.Struct({ userId: Schema.Number, id: Schema.Number })

/** SQL for users, workspaces, memberships and tokens. Database failures are defects here. */
export class IdentityRepo extends Effect.Service<IdentityRepo>()("@parley/server/IdentityRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const selectToken = sql`
      select t.id, t.user_id, t.name, t.scopes, t.expires_at, t.last_used_at,
             (t.expires_at is not null and t.expires_at <= now()) as expired,
             (t.revoked_at is not null) as revoked,
             u.is_super_user
      from access_tokens t join users u on u.id = t.user_id`

    const tokenByHash = SqlSchema.findOne({
      Request: Schema.String,
      Result: TokenRow,
      execute: (hash) => sql`${selectToken} where t.token_hash = ${hash}`
    })

    const tokenById = SqlSchema.findOne({
      Request: Schema.Number,
      Result: TokenRow,
      execute: (id) => sql`${selectToken} where t.id = ${id}`
    })

    const memberships = SqlSchema.findAll({
      Request: Schema.Number,
      Result: MembershipRow,
      execute: (userId) =>
        sql`
          select w.id, w.name, m.role, w.is_subscription_active, w.credits, w.training_credits
          from memberships m join workspaces w on w.id = m.workspace_id
          where m.user_id = ${userId}
          order by (m.role = 'owner') desc, w.id`
    })

    const userById = SqlSchema.findOne({
      Request: Schema.Number,
      Result: UserRow,
      execute: (id) => sql`select id, email, name, is_super_user, created_at from users where id = ${id}`
    })

    const userByEmail = SqlSchema.findOne({
      Request: Schema.String,
      Result: UserWithPassword,
      execute: (email) =>
        sql`
          select id, email, name, is_super_user, created_at, password_hash from users where lower(email) = lower(${email})`
    })

    const insertUser = SqlSchema.single({
      Request: NewUser,
      Result: UserRow,
      execute: (u) => sql`insert into users ${sql.insert(u)} returning id, email, name, is_super_user, created_at`
    })

    const insertWorkspace = SqlSchema.single({
      Request: NewWorkspace,
      Result: Schema.Struct({ id: WorkspaceId }),
      execute: (w) => sql`${WorkspaceWrites.insert(sql, w)} returning id`
    })

    const updateWorkspace = SqlSchema.findOne({
      Request: WorkspaceChanges,
      Result: MembershipRow,
      execute: (set) =>
        sql`${
          WorkspaceWrites.update(
            sql,
            {
              credits: set.credits ?? undefined,
              training_credits: set.training_credits ?? undefined,
              is_subscription_active: set.is_subscription_active ?? undefined,
              updated_at: sql`now()`
            },
            sql`where id = ${set.id} returning id, name, 'owner' as role, is_subscription_active, credits, training_credits`
          )
        }`
    })

    const trainingCredits = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ training_credits: Schema.Number }),
      execute: (id) => sql`select training_credits::float8 as training_credits from workspaces where id = ${id}`
    })

    const insertToken = SqlSchema.single({
      Request: NewToken,
      Result: InsertedToken,
      execute: (t) =>
        sql`
          insert into access_tokens (user_id, name, token_hash, token_hint, scopes, expires_at, oauth_client_id, oauth_grant_id, account_session_id)
          values (${t.user_id}, ${t.name}, ${t.token_hash}, ${t.token_hint}, ${t.scopes}::text[],
                  ${t.expires_at}, ${t.oauth_client_id ?? null}, ${t.oauth_grant_id ?? null}, ${
          t.account_session_id ?? null
        })
          returning id, created_at, expires_at`
    })

    const revokeToken = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ id: TokenId }),
      execute: (id) =>
        sql`
          update access_tokens set revoked_at = coalesce(revoked_at, now()) where id = ${id} returning id`
    })

    const personalTokens = SqlSchema.findAll({
      Request: Schema.Number,
      Result: PersonalTokenRow,
      execute: (userId) =>
        sql`
          select id, name, token_hint, scopes, created_at, last_used_at, expires_at,
                 (expires_at is not null and expires_at <= now()) as expired
          from access_tokens
          where user_id = ${userId} and oauth_client_id is null and account_session_id is null and revoked_at is null
          order by id desc`
    })

    const revokeUserToken = SqlSchema.findOne({
      Request: UserToken,
      Result: Schema.Struct({ id: TokenId }),
      execute: ({ id, userId }) =>
        sql`
          update access_tokens set revoked_at = now()
          where id = ${id} and user_id = ${userId} and oauth_client_id is null and account_session_id is null and revoked_at is null
          returning id`
    })

    return {
      tokenByHash: (hash: string) => tokenByHash(hash).pipe(Effect.orDie),

      tokenById: (id: TokenId) => tokenById(id).pipe(Effect.orDie),

      memberships: (userId: UserId) => memberships(userId).pipe(Effect.orDie),

      userById: (id: UserId) => userById(id).pipe(Effect.orDie),

      userByEmail: (email: string) => userByEmail(email).pipe(Effect.orDie),

      insertUser: (u: { email: string; name: string | null; password_hash: string }) =>
        insertUser(u).pipe(Effect.orDie),

      insertWorkspace: (w: { name: string; credits: number; training_credits: number }) =>
        insertWorkspace(w).pipe(Effect.map((row) => row.id), Effect.orDie),

      workspaceExists: (id: WorkspaceId) =>
        sql`select 1 from workspaces where id = ${id}`.pipe(Effect.map((r) => r.length > 0), Effect.orDie),

      upsertMembership: (userId: UserId, workspaceId: WorkspaceId, role: "owner" | "manager") =>
        sql`
          insert into memberships (user_id, workspace_id, role) values (${userId}, ${workspaceId}, ${role})
          on conflict (user_id, workspace_id) do nothing`.pipe(Effect.asVoid, Effect.orDie),

      setSuperUser: (id: UserId) =>
        sql`update users set is_super_user = true, updated_at = now() where id = ${id}`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),

      updateWorkspace: (
        id: WorkspaceId,
        set: { credits?: number; training_credits?: number; is_subscription_active?: boolean }
      ) =>
        updateWorkspace({
          id,
          credits: set.credits ?? null,
          training_credits: set.training_credits ?? null,
          is_subscription_active: set.is_subscription_active ?? null
        }).pipe(Effect.orDie),

      trainingCredits: (id: WorkspaceId | number) =>
        trainingCredits(id).pipe(
          Effect.map(Option.match({ onNone: () => 0, onSome: (row) => row.training_credits })),
          Effect.orDie
        ),

      /**
       * What a model's message cost (a handoff's bridge), in the caller's transaction, only when the credits
       * cover it (the row's lock makes concurrent charges wait for each other): whether it was charged.
       */
      spendCredits: (id: WorkspaceId | number, cost: number) =>
        sql`${WorkspaceWrites.chargeCredits(sql, id, cost, { coveredOnly: true })} returning id`
          .pipe(
            Effect.map((rows) => rows.length > 0),
            Effect.orDie
          ),

      /** One credit per point embedded (knowledge upserts), in the caller's transaction. */
      spendTrainingCredits: (id: WorkspaceId | number, credits: number) =>
        WorkspaceWrites.spendTrainingCredits(sql, id, credits)
          .pipe(
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
      }) => insertToken(t).pipe(Effect.orDie),

      revokeToken: (id: TokenId) => revokeToken(id).pipe(Effect.map(Option.isSome), Effect.orDie),

      /** The user's own live personal tokens (OAuth tokens are listed per client instead), newest first. */
      personalTokens: (userId: UserId) => personalTokens(userId).pipe(Effect.orDie),

      revokeUserToken: (userId: UserId, id: TokenId) =>
        revokeUserToken({ userId, id }).pipe(Effect.map(Option.isSome), Effect.orDie),

      /** The session's console tokens that ran out: each console page asks for a new one before its last expires. */
      sweepSessionTokens: (sessionId: number) =>
        sql`delete from access_tokens where account_session_id = ${sessionId} and expires_at <= now()`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),

      touchToken: (id: TokenId) =>
        sql`update access_tokens set last_used_at = now() where id = ${id}`.pipe(Effect.asVoid, Effect.orDie)
    }
  })
}) {}
