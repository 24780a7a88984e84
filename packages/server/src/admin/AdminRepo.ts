/**
 * SQL behind the operator's list and show commands: every user, workspace and token, across workspaces
 * (the REST API only ever shows a caller its own). Never a password hash, a token hash or a channel secret.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"
import { TokenId, UserId, WorkspaceId } from "@parley/domain/Ids"
import { Effect, Option, Schema } from "effect"
import type { WorkspaceNeed } from "./AdminCommand.js"

const Membership = Schema.Struct({
  workspace_id: WorkspaceId,
  name: Schema.String,
  role: Schema.Literal("owner", "manager")
})

export const UserSummary = Schema.Struct({
  id: UserId,
  email: Schema.String,
  name: Schema.NullOr(Schema.String),
  is_super_user: Schema.Boolean,
  created_at: Schema.String,
  workspaces: Schema.Array(Membership)
})
export type UserSummary = typeof UserSummary.Type

const WorkspaceRow = Schema.Struct({
  id: WorkspaceId,
  name: Schema.String,
  owner_email: Schema.NullOr(Schema.String),
  members: Schema.Number,
  credits: Schema.Number,
  training_credits: Schema.Number,
  is_subscription_active: Schema.Boolean,
  /** pipeline versions (docs/versions.md): edits are drafts until published */
  drafts: Schema.Boolean,
  pipelines: Schema.Number,
  channels: Schema.Number,
  has_pipeline: Schema.Boolean,
  has_channel: Schema.Boolean,
  has_linked_channel: Schema.Boolean,
  created_at: Schema.String
})
type WorkspaceRow = typeof WorkspaceRow.Type

const Member = Schema.Struct({ user_id: UserId, email: Schema.String, role: Schema.Literal("owner", "manager") })

export const TokenSummary = Schema.Struct({
  id: TokenId,
  user_id: UserId,
  email: Schema.String,
  name: Schema.String,
  /** The token's last four characters, to tell tokens apart; never more of it. */
  token_hint: Schema.String,
  scopes: Schema.Array(Schema.String),
  status: Schema.Literal("active", "expired", "revoked"),
  oauth_client_id: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  last_used_at: Schema.NullOr(Schema.String),
  expires_at: Schema.NullOr(Schema.String),
  revoked_at: Schema.NullOr(Schema.String)
})
export type TokenSummary = typeof TokenSummary.Type

/** What the workspace still lacks before its agent replies, in the order a turn checks them. */
const needsOf = (w: WorkspaceRow): Array<WorkspaceNeed> => [
  ...(w.is_subscription_active ? [] : ["subscription" as const]),
  ...(w.credits > 0 ? [] : ["credits" as const]),
  ...(w.has_pipeline ? [] : ["pipeline" as const]),
  // a channel already linked to the pipeline that lacks stages needs nothing more than those stages
  ...(w.has_channel || (!w.has_pipeline && w.has_linked_channel) ? [] : ["channel" as const])
]

const workspaceSummary = (row: WorkspaceRow) => {
  const { has_channel: _channel, has_linked_channel: _linked, has_pipeline: _pipeline, ...workspace } = row
  return { ...workspace, needs: needsOf(row) }
}
export type WorkspaceSummary = ReturnType<typeof workspaceSummary>

export class AdminRepo extends Effect.Service<AdminRepo>()("@parley/server/AdminRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const everything = sql.literal("")

    const selectUsers = (where: Fragment) =>
      sql`
        select u.id, u.email, u.name, u.is_super_user, u.created_at,
               coalesce(json_agg(json_build_object('workspace_id', w.id, 'name', w.name, 'role', m.role)
                                 order by (m.role = 'owner') desc, w.id) filter (where w.id is not null), '[]') as workspaces
        from users u
        left join memberships m on m.user_id = u.id
        left join workspaces w on w.id = m.workspace_id
        ${where}
        group by u.id
        order by u.id`

    const users = SqlSchema.findAll({
      Request: Schema.Void,
      Result: UserSummary,
      execute: () => selectUsers(everything)
    })
    const userBy = SqlSchema.findOne({
      Request: Schema.Struct({ email: Schema.optional(Schema.String), id: Schema.optional(UserId) }),
      Result: UserSummary,
      execute: ({ email, id }) =>
        selectUsers(sql`where ${id !== undefined ? sql`u.id = ${id}` : sql`lower(u.email) = lower(${email ?? ""})`}`)
    })

    // an active pipeline with stages; an active channel linked to such a pipeline, or to any (a turn's first checks)
    const selectWorkspaces = (where: Fragment) =>
      sql`
        select w.id, w.name, w.credits, w.training_credits, w.is_subscription_active, w.is_drafts_enabled as drafts, w.created_at,
               (select u.email from memberships m join users u on u.id = m.user_id
                where m.workspace_id = w.id order by (m.role = 'owner') desc, m.created_at limit 1) as owner_email,
               (select count(*)::int from memberships m where m.workspace_id = w.id) as members,
               (select count(*)::int from pipelines p where p.workspace_id = w.id) as pipelines,
               (select count(*)::int from channels c where c.workspace_id = w.id) as channels,
               exists (select 1 from pipelines p
                       where p.workspace_id = w.id and p.status = 'active' and not p.is_archived
                         and exists (select 1 from stages s where s.pipeline_id = p.id)) as has_pipeline,
               exists (select 1 from channels c join pipelines p on p.id = c.pipeline_id
                       where c.workspace_id = w.id and c.is_active and p.status = 'active' and not p.is_archived
                         and exists (select 1 from stages s where s.pipeline_id = p.id)) as has_channel,
               exists (select 1 from channels c join pipelines p on p.id = c.pipeline_id
                       where c.workspace_id = w.id and c.is_active and p.status = 'active' and not p.is_archived) as has_linked_channel
        from workspaces w
        ${where}
        order by w.id`

    const workspaces = SqlSchema.findAll({
      Request: Schema.Void,
      Result: WorkspaceRow,
      execute: () => selectWorkspaces(everything)
    })
    const workspace = SqlSchema.findOne({
      Request: WorkspaceId,
      Result: WorkspaceRow,
      execute: (id) => selectWorkspaces(sql`where w.id = ${id}`)
    })
    const members = SqlSchema.findAll({
      Request: WorkspaceId,
      Result: Member,
      execute: (id) =>
        sql`
          select u.id as user_id, u.email, m.role from memberships m join users u on u.id = m.user_id
          where m.workspace_id = ${id} order by (m.role = 'owner') desc, m.created_at`
    })

    const selectTokens = (where: Fragment) =>
      sql`
        select t.id, t.user_id, u.email, t.name, t.token_hint, t.scopes, t.oauth_client_id,
               case when t.revoked_at is not null then 'revoked'
                    when t.expires_at is not null and t.expires_at <= now() then 'expired'
                    else 'active' end as status,
               t.created_at, t.last_used_at, t.expires_at, t.revoked_at
        from access_tokens t join users u on u.id = t.user_id
        ${where}
        order by t.id`
    const tokens = SqlSchema.findAll({
      Request: Schema.Struct({ userId: Schema.optional(UserId) }),
      Result: TokenSummary,
      execute: ({ userId }) => selectTokens(userId === undefined ? everything : sql`where t.user_id = ${userId}`)
    })
    const token = SqlSchema.findOne({
      Request: TokenId,
      Result: TokenSummary,
      execute: (id) => selectTokens(sql`where t.id = ${id}`)
    })

    /** The workspace a row of `table` belongs to. */
    const workspaceOf = SqlSchema.findOne({
      Request: Schema.Struct({ table: Schema.Literal("channels", "pipelines"), id: Schema.Number }),
      Result: Schema.Struct({ workspace_id: WorkspaceId }),
      execute: ({ id, table }) => sql`select workspace_id from ${sql(table)} where id = ${id}`
    })
    const workspaceIds = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Schema.Struct({ id: WorkspaceId }),
      execute: () => sql`select id from workspaces order by id`
    })

    return {
      users: users().pipe(Effect.orDie),
      user: (by: { readonly email?: string | undefined; readonly id?: UserId | undefined }) =>
        userBy({
          ...(by.email !== undefined ? { email: by.email } : {}),
          ...(by.id !== undefined ? { id: by.id } : {})
        }).pipe(Effect.orDie),
      workspaces: workspaces().pipe(Effect.map((rows) => rows.map(workspaceSummary)), Effect.orDie),
      workspace: (id: WorkspaceId) => workspace(id).pipe(Effect.map(Option.map(workspaceSummary)), Effect.orDie),
      workspaceIds: workspaceIds(undefined).pipe(Effect.map((rows) => rows.map((r) => r.id)), Effect.orDie),
      members: (id: WorkspaceId) => members(id).pipe(Effect.orDie),
      tokens: (userId?: UserId) => tokens(userId === undefined ? {} : { userId }).pipe(Effect.orDie),
      token: (id: TokenId) => token(id).pipe(Effect.orDie),
      workspaceOf: (table: "channels" | "pipelines", id: number) =>
        workspaceOf({ table, id }).pipe(Effect.map(Option.map((r) => r.workspace_id)), Effect.orDie)
    }
  })
}) {}
