/**
 * Operator commands: what `pnpm parley ...` does, run where the database is open (the CLI's own
 * connection, or the server holding the embedded data dir, for its admin endpoint). None of them needs
 * the worker engine: they write rows and notify caches, and never send an entity or workflow message, so
 * the CLI runs them without joining the cluster (cli/Direct.ts).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import {
  type Actor,
  type Channel,
  CurrentActor,
  KnowledgeTableId,
  Scopes,
  type UserId,
  WorkspaceId
} from "@parley/domain"
import { Effect, Option, Schema } from "effect"
import { Channels } from "../channels/Channels.js"
import { AppConfig, receiverBaseUrl } from "../config/AppConfig.js"
import { BoundAddresses } from "../http/Listener.js"
import { CommandFailed } from "../identity/CommandFailed.js"
import { Identity } from "../identity/Identity.js"
import { Knowledge } from "../knowledge/Knowledge.js"
import { Pipelines } from "../pipelines/Pipelines.js"
import { Versions } from "../pipelines/Versions.js"
import type { AdminCommand } from "./AdminCommand.js"
import { AdminRepo } from "./AdminRepo.js"
import { migrate } from "./Migrate.js"

/** The operator, seeing the given workspaces through the REST services' own rules. */
const operator = (workspaceIds: ReadonlyArray<WorkspaceId>): Actor => ({
  userId: 0 as UserId,
  authenticatedUserId: 0 as UserId,
  tokenId: 0 as never,
  scopes: Scopes,
  workspaceIds,
  defaultWorkspaceId: workspaceIds[0] ?? (0 as WorkspaceId)
})

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
    const tableOf = SqlSchema.findOne({
      Request: KnowledgeTableId,
      Result: Schema.Struct({ workspace_id: WorkspaceId, name: Schema.String }),
      execute: (id) =>
        sql`
      select workspace_id, name from knowledge_tables where id = ${id}`
    })
    const found = yield* tableOf(tableId).pipe(Effect.orDie)
    if (Option.isNone(found)) return yield* new CommandFailed({ message: `No knowledge table with id ${tableId}` })
    const actor = yield* asOwnerOf(found.value.workspace_id)
    return { actor, workspaceId: found.value.workspace_id, name: found.value.name }
  })

/** Turns the REST errors of a service call into a command failure naming the fields. */
const explain = <A, R>(
  effect: Effect.Effect<
    A,
    {
      readonly _tag: string
      readonly message: string
      readonly validation?: ReadonlyArray<{ field: string; message: string }>
    },
    R
  >
) =>
  Effect.mapError(effect, (e) =>
    new CommandFailed({
      message: e.validation && e.validation.length > 0
        ? e.validation.map((v) => `${v.field}: ${v.message}`).join("; ")
        : e.message
    }))

const found = <A>(what: string) => (option: Option.Option<A>) =>
  Option.match(option, {
    onNone: () => Effect.fail(new CommandFailed({ message: `No ${what}` })),
    onSome: Effect.succeed
  })

/**
 * Where clients reach this deployment: PUBLIC_URL and RECEIVER_URL, else where this process's listeners
 * bound (a command run by the server), else HOST and the configured ports (null when that port is 0).
 */
const publicBases = Effect.gen(function*() {
  const config = yield* AppConfig
  const bound = yield* BoundAddresses
  const configured = (port: number) => port === 0 ? null : `http://${config.host}:${port}`
  const receiver = yield* bound.receiver
  return {
    api: Option.getOrElse(config.publicUrl, () => bound.apiNow() ?? configured(config.port)),
    receiver: receiver === undefined && Option.isNone(config.receiverUrl) && config.receiverPort === 0
      ? null
      : receiverBaseUrl(config, receiver)
  }
})

/**
 * A channel with the addresses its integration uses (docs/web-chat.md): a web channel's server calls
 * initiate on the API and sends messages to the receiver; a widget channel is one script tag on the site.
 */
const withUrls = (bases: { readonly api: string | null; readonly receiver: string | null }) => (channel: Channel) => {
  const messages = bases.receiver === null ? null : `${bases.receiver}/web-chat/message`
  return {
    ...channel,
    initiate_url: channel.kind === "web" && bases.api !== null ? `${bases.api}/api/user/web-chat/initiate` : null,
    messages_url: channel.kind === "web" || channel.kind === "widget" ? messages : null,
    widget_embed: channel.kind === "widget" && bases.api !== null && channel.client_id !== null
      ? `<script src="${bases.api}/widget.js" data-client-id="${channel.client_id}" async></script>`
      : null
  }
}

export const runCommand = (command: AdminCommand) =>
  Effect.gen(function*() {
    const identity = yield* Identity
    const channels = yield* Channels
    const admin = yield* AdminRepo
    const workspaceOf = (table: "channels" | "pipelines", id: number) =>
      Effect.flatMap(admin.workspaceOf(table, id), found(`${table.slice(0, -1)} with id ${id}`))
    /** The user and what their new workspace still needs. */
    const withNeeds = <A extends { readonly workspace_id: WorkspaceId }>(created: A) =>
      Effect.map(
        Effect.flatMap(admin.workspace(created.workspace_id), found(`workspace with id ${created.workspace_id}`)),
        (w) => ({ ...created, credits: w.credits, is_subscription_active: w.is_subscription_active, needs: w.needs })
      )
    switch (command._tag) {
      case "migrate":
        return yield* migrate
      case "user.create":
        return yield* Effect.flatMap(identity.createUser(command), withNeeds)
      case "user.list":
        return yield* admin.users
      case "user.show": {
        if ((command.email === undefined) === (command.id === undefined)) {
          return yield* new CommandFailed({ message: "user show needs --email E or --id N" })
        }
        return yield* Effect.flatMap(
          admin.user(command),
          found(command.id !== undefined ? `user with id ${command.id}` : `user with email ${command.email}`)
        )
      }
      case "user.grant-manager":
        return yield* identity.grantManager(command.email, command.workspaceId)
      case "user.make-super":
        return yield* identity.makeSuper(command.email)
      case "workspace.create":
        return yield* Effect.flatMap(identity.createWorkspace(command), withNeeds)
      case "workspace.list":
        return yield* admin.workspaces
      case "workspace.show": {
        const workspace = yield* Effect.flatMap(
          admin.workspace(command.workspaceId),
          found(`workspace with id ${command.workspaceId}`)
        )
        return { ...workspace, members: yield* admin.members(command.workspaceId) }
      }
      case "workspace.set": {
        const set = identity.setWorkspace(command.workspaceId, {
          ...(command.credits !== undefined ? { credits: command.credits } : {}),
          ...(command.trainingCredits !== undefined ? { training_credits: command.trainingCredits } : {}),
          ...(command.subscription !== undefined ? { is_subscription_active: command.subscription === "active" } : {})
        })
        // the drafts setting through the REST settings' own service (docs/versions.md), with the rest or not at all
        const drafts = command.drafts === undefined ? Effect.void : explain(
          Effect.flatMap(Versions, (versions) =>
            versions.updateSettings(command.workspaceId, { drafts: command.drafts === "on" }))
        ).pipe(Effect.provideService(CurrentActor, operator([command.workspaceId])))
        const sql = yield* SqlClient.SqlClient
        yield* sql.withTransaction(Effect.zipRight(set, drafts)).pipe(Effect.catchTag("SqlError", Effect.die))
        return yield* Effect.flatMap(
          admin.workspace(command.workspaceId),
          found(`workspace with id ${command.workspaceId}`)
        )
      }
      case "token.create":
        return yield* identity.createToken(command)
      case "token.list": {
        if (command.email === undefined) {
          return yield* admin.tokens()
        }
        const user = yield* Effect.flatMap(
          admin.user({ email: command.email }),
          found(`user with email ${command.email}`)
        )
        return yield* admin.tokens(user.id)
      }
      case "token.show":
        return yield* Effect.flatMap(admin.token(command.id), found(`token with id ${command.id}`))
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
          ...(command.allowedIps !== undefined ? { allowed_ips: command.allowedIps } : {}),
          ...(command.credentials !== undefined ? { credentials: command.credentials } : {})
        })).pipe(Effect.map(withUrls(yield* publicBases)), Effect.provideService(CurrentActor, actor))
      }
      case "channel.list": {
        const ids = command.workspaceId !== undefined ? [command.workspaceId] : yield* admin.workspaceIds
        if (ids.length === 0) {
          return []
        }
        const list = yield* channels.list().pipe(Effect.provideService(CurrentActor, operator(ids)))
        return list.map(withUrls(yield* publicBases))
      }
      case "channel.show": {
        const workspaceId = yield* workspaceOf("channels", command.id)
        const channel = yield* explain(channels.get(command.id)).pipe(
          Effect.provideService(CurrentActor, operator([workspaceId]))
        )
        return withUrls(yield* publicBases)(channel)
      }
      case "channel.rotate": {
        const actor = yield* asOwnerOf(yield* workspaceOf("channels", command.id))
        return yield* explain(channels.rotate(command.id)).pipe(
          Effect.map(withUrls(yield* publicBases)),
          Effect.provideService(CurrentActor, actor)
        )
      }
      case "pipeline.list": {
        const pipelines = yield* Pipelines
        const ids = command.workspaceId !== undefined ? [command.workspaceId] : yield* admin.workspaceIds
        if (ids.length === 0) {
          return []
        }
        return yield* pipelines.list().pipe(Effect.provideService(CurrentActor, operator(ids)))
      }
      case "pipeline.show": {
        const pipelines = yield* Pipelines
        const workspaceId = yield* workspaceOf("pipelines", command.id)
        return yield* explain(pipelines.get(command.id)).pipe(
          Effect.provideService(CurrentActor, operator([workspaceId]))
        )
      }
      case "knowledge.columns": {
        const knowledge = yield* Knowledge
        const owner = yield* asOwnerOfTable(command.tableId)
        const columns = yield* explain(knowledge.columns(command.tableId)).pipe(
          Effect.provideService(CurrentActor, owner.actor)
        )
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
          Effect.map((r): { upserted: number } | { rejected: Array<{ field: string; message: string }> } => ({
            upserted: r.upserted
          })),
          Effect.catchTag("Unprocessable", (e) =>
            Effect.succeed({ rejected: e.validation.map((v) => ({ field: v.field, message: v.message })) })),
          explain,
          Effect.provideService(CurrentActor, owner.actor)
        )
      }
    }
  })
