/**
 * Operator commands: what `pnpm parley ...` does. One schema for both ways a command travels: run here
 * on a database this process opened, or posted to the running server's loopback admin endpoint.
 */
import { SqlClient } from "@effect/sql"
import * as PgMigrator from "@effect/sql-pg/PgMigrator"
import { NodeContext } from "@effect/platform-node"
import {
  type Actor,
  ChannelId,
  ChannelKind,
  CurrentActor,
  KnowledgeTableId,
  PipelineId,
  Scopes,
  TokenId,
  type UserId,
  WorkspaceId
} from "@parley/domain"
import { Effect, Schema } from "effect"
import { Channels } from "../channels/Channels.js"
import { migrations } from "../db/migrations/index.js"
import { CommandFailed, Identity } from "../identity/Identity.js"
import { Knowledge } from "../knowledge/Knowledge.js"

export const AdminCommand = Schema.Union(
  Schema.TaggedStruct("migrate", {}),
  Schema.TaggedStruct("user.create", {
    email: Schema.String,
    password: Schema.String,
    name: Schema.optional(Schema.String),
    workspaceName: Schema.optional(Schema.String)
  }),
  Schema.TaggedStruct("user.grant-manager", { email: Schema.String, workspaceId: WorkspaceId }),
  Schema.TaggedStruct("user.make-super", { email: Schema.String }),
  Schema.TaggedStruct("workspace.set", {
    workspaceId: WorkspaceId,
    credits: Schema.optional(Schema.Number),
    trainingCredits: Schema.optional(Schema.Number),
    subscription: Schema.optional(Schema.Literal("active", "inactive"))
  }),
  Schema.TaggedStruct("token.create", {
    email: Schema.String,
    scopes: Schema.Array(Schema.String),
    name: Schema.optional(Schema.String),
    expiresInDays: Schema.optional(Schema.Number)
  }),
  Schema.TaggedStruct("token.revoke", { id: TokenId }),
  Schema.TaggedStruct("channel.create", {
    workspaceId: WorkspaceId,
    kind: ChannelKind,
    pipelineId: Schema.optional(PipelineId),
    name: Schema.optional(Schema.String),
    callbackUrl: Schema.optional(Schema.String),
    allowedOrigins: Schema.optional(Schema.Array(Schema.String)),
    allowedIps: Schema.optional(Schema.Array(Schema.String))
  }),
  Schema.TaggedStruct("channel.rotate", { id: ChannelId }),
  /** The table's columns (the importer converts CSV cells to their types); unknown table: failure. */
  Schema.TaggedStruct("knowledge.columns", { tableId: KnowledgeTableId }),
  /**
   * One batch of `knowledge import`. A batch that fails validation is not a command failure: the result
   * is `{ rejected: [{field, message}] }` (fields as in the REST 422, `points.<i>.<column>`), so the
   * importer can tell it apart from other failures through the admin endpoint too.
   */
  Schema.TaggedStruct("knowledge.upsert", {
    tableId: KnowledgeTableId,
    points: Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
  })
)
export type AdminCommand = typeof AdminCommand.Type

/** Channel commands run as the workspace's owner, through the same rules as the REST API. */
const asOwnerOf = (workspaceId: WorkspaceId) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ user_id: UserId }>`
      select user_id from memberships where workspace_id = ${workspaceId} order by (role = 'owner') desc, created_at limit 1`
      .pipe(Effect.orDie)
    if (rows.length === 0) return yield* new CommandFailed({ message: `No workspace with id ${workspaceId}` })
    const actor: Actor = {
      userId: rows[0]!.user_id,
      authenticatedUserId: rows[0]!.user_id,
      tokenId: 0 as never,
      scopes: Scopes,
      workspaceIds: [workspaceId],
      defaultWorkspaceId: workspaceId
    }
    return actor
  })

/** Knowledge commands run as the owner of the table's workspace. */
const asOwnerOfTable = (tableId: KnowledgeTableId) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ workspace_id: WorkspaceId; name: string }>`
      select workspace_id, name from knowledge_tables where id = ${tableId}`.pipe(Effect.orDie)
    if (rows.length === 0) return yield* new CommandFailed({ message: `No knowledge table with id ${tableId}` })
    const actor = yield* asOwnerOf(Number(rows[0]!.workspace_id) as WorkspaceId)
    return { actor, workspaceId: Number(rows[0]!.workspace_id), name: rows[0]!.name }
  })

/** Turns the REST errors of a service call into a command failure naming the fields. */
const explain = <A, R>(effect: Effect.Effect<A, { readonly _tag: string; readonly message: string; readonly validation?: ReadonlyArray<{ field: string; message: string }> }, R>) =>
  Effect.mapError(effect, (e) =>
    new CommandFailed({
      message: e.validation && e.validation.length > 0
        ? e.validation.map((v) => `${v.field}: ${v.message}`).join("; ")
        : e.message
    }))

export const runCommand = (command: AdminCommand) =>
  Effect.gen(function*() {
    const identity = yield* Identity
    const channels = yield* Channels
    switch (command._tag) {
      case "migrate": {
        const applied = yield* PgMigrator.run({ loader: PgMigrator.fromRecord(migrations) }).pipe(
          Effect.provide(NodeContext.layer),
          Effect.orDie
        )
        return { applied: applied.map(([id, name]) => `${String(id).padStart(4, "0")}_${name}`) }
      }
      case "user.create":
        return yield* identity.createUser(command)
      case "user.grant-manager":
        return yield* identity.grantManager(command.email, command.workspaceId)
      case "user.make-super":
        return yield* identity.makeSuper(command.email)
      case "workspace.set":
        return yield* identity.setWorkspace(command.workspaceId, {
          ...(command.credits !== undefined ? { credits: command.credits } : {}),
          ...(command.trainingCredits !== undefined ? { training_credits: command.trainingCredits } : {}),
          ...(command.subscription !== undefined ? { is_subscription_active: command.subscription === "active" } : {})
        })
      case "token.create":
        return yield* identity.createToken(command)
      case "token.revoke":
        return yield* identity.revokeToken(command.id)
      case "channel.create": {
        const actor = yield* asOwnerOf(command.workspaceId)
        return yield* explain(channels.create({
          workspace_id: command.workspaceId,
          kind: command.kind,
          ...(command.pipelineId !== undefined ? { pipeline_id: command.pipelineId } : {}),
          ...(command.name !== undefined ? { name: command.name } : {}),
          ...(command.callbackUrl !== undefined ? { callback_url: command.callbackUrl } : {}),
          ...(command.allowedOrigins !== undefined ? { allowed_origins: command.allowedOrigins } : {}),
          ...(command.allowedIps !== undefined ? { allowed_ips: command.allowedIps } : {})
        })).pipe(Effect.provideService(CurrentActor, actor))
      }
      case "channel.rotate": {
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ workspace_id: WorkspaceId }>`select workspace_id from channels where id = ${command.id}`
          .pipe(Effect.orDie)
        if (rows.length === 0) return yield* new CommandFailed({ message: `No channel with id ${command.id}` })
        const actor = yield* asOwnerOf(rows[0]!.workspace_id)
        return yield* explain(channels.rotate(command.id)).pipe(Effect.provideService(CurrentActor, actor))
      }
      case "knowledge.columns": {
        const knowledge = yield* Knowledge
        const owner = yield* asOwnerOfTable(command.tableId)
        const columns = yield* explain(knowledge.columns(command.tableId)).pipe(Effect.provideService(CurrentActor, owner.actor))
        return {
          table_id: command.tableId,
          workspace_id: owner.workspaceId,
          name: owner.name,
          columns: columns.map((c) => ({ name: c.name, data_type: c.data_type, is_unique: c.is_unique }))
        }
      }
      case "knowledge.upsert": {
        const knowledge = yield* Knowledge
        const owner = yield* asOwnerOfTable(command.tableId)
        return yield* knowledge.upsert(command.tableId, command.points).pipe(
          Effect.map((r): { upserted: number } | { rejected: Array<{ field: string; message: string }> } => ({ upserted: r.upserted })),
          Effect.catchTag("Unprocessable", (e) =>
            Effect.succeed({ rejected: e.validation.map((v) => ({ field: v.field, message: v.message })) })),
          explain,
          Effect.provideService(CurrentActor, owner.actor)
        )
      }
    }
  })
