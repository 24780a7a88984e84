import { SqlClient, SqlSchema } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import { Channel, ChannelId, PipelineId, WorkspaceId } from "@parley/domain"
import { Effect, flow, Option, Schema, Struct } from "effect"

export interface ChannelWrite {
  readonly name?: string | undefined
  readonly pipeline_id?: PipelineId | null | undefined
  readonly is_active?: boolean | undefined
  readonly callback_url?: string | null | undefined
  readonly allowed_origins?: ReadonlyArray<string> | undefined
  readonly allowed_ips?: ReadonlyArray<string> | undefined
  readonly rate_per_second?: number | null | undefined
  /** New credentials reconnect a channel the provider had disconnected. */
  readonly credentials_ciphertext?: string | undefined
  /** The window the adapter gives the new credentials (ServiceWindow.ts); null: none. */
  readonly service_window_ms?: number | null | undefined
  readonly is_simulated?: boolean | undefined
}

/** A channel as stored: its webhook key, from which the service makes `webhook_url`. */
export const ChannelRow = Schema.Struct({
  ...Struct.omit(Channel.fields, "webhook_url", "simulator_url"),
  webhook_key: Schema.NullOr(Schema.String),
  is_simulated: Schema.Boolean
})
export type ChannelRow = typeof ChannelRow.Type

/** What a provider's webhook needs of its channel. */
export const ProviderChannelRow = Schema.Struct({
  id: ChannelId,
  workspace_id: WorkspaceId,
  kind: Schema.String,
  pipeline_id: Schema.NullOr(PipelineId),
  is_active: Schema.Boolean,
  credentials_ciphertext: Schema.String
})
export type ProviderChannelRow = typeof ProviderChannelRow.Type

const WorkspaceIds = Schema.Array(WorkspaceId)

const NewChannel = Schema.Struct({
  workspace_id: WorkspaceId,
  kind: Schema.String,
  name: Schema.String,
  pipeline_id: Schema.NullOr(PipelineId),
  is_active: Schema.Boolean,
  client_id: Schema.NullOr(Schema.String),
  secret_ciphertext: Schema.NullOr(Schema.String),
  callback_url: Schema.NullOr(Schema.String),
  allowed_origins: Schema.Array(Schema.String),
  allowed_ips: Schema.Array(Schema.String),
  credentials_ciphertext: Schema.NullOr(Schema.String),
  webhook_key: Schema.NullOr(Schema.String),
  rate_per_second: Schema.NullOr(Schema.Number),
  service_window_ms: Schema.NullOr(Schema.Number),
  is_simulated: Schema.Boolean
})

export class ChannelsRepo extends Effect.Service<ChannelsRepo>()("@parley/server/ChannelsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const select = sql`
      select id, workspace_id, kind, name, pipeline_id, is_active, client_id, callback_url, allowed_origins,
             allowed_ips, webhook_key, is_simulated, status, status_reason, rate_per_second, created_at, updated_at
      from channels`

    const set = (w: ChannelWrite) => {
      const entries: Array<Statement.Fragment> = []
      if (w.name !== undefined) entries.push(sql`name = ${w.name}`)
      if (w.pipeline_id !== undefined) entries.push(sql`pipeline_id = ${w.pipeline_id}`)
      if (w.is_active !== undefined) entries.push(sql`is_active = ${w.is_active}`)
      if (w.callback_url !== undefined) entries.push(sql`callback_url = ${w.callback_url}`)
      if (w.allowed_origins !== undefined) entries.push(sql`allowed_origins = ${w.allowed_origins}::text[]`)
      if (w.allowed_ips !== undefined) entries.push(sql`allowed_ips = ${w.allowed_ips}::text[]`)
      if (w.rate_per_second !== undefined) entries.push(sql`rate_per_second = ${w.rate_per_second}`)
      if (w.credentials_ciphertext !== undefined) {
        entries.push(sql`credentials_ciphertext = ${w.credentials_ciphertext}`)
        entries.push(sql`status = 'connected'`, sql`status_reason = null`)
      }
      if (w.service_window_ms !== undefined) entries.push(sql`service_window_ms = ${w.service_window_ms}`)
      if (w.is_simulated !== undefined) entries.push(sql`is_simulated = ${w.is_simulated}`)
      return sql.csv([...entries, sql`updated_at = now()`])
    }

    const list = SqlSchema.findAll({
      Request: WorkspaceIds,
      Result: ChannelRow,
      execute: (workspaceIds) => sql`${select} where workspace_id in ${sql.in(workspaceIds)} order by id`
    })

    const find = SqlSchema.findOne({
      Request: Schema.Struct({ id: ChannelId, workspaceIds: WorkspaceIds }),
      Result: ChannelRow,
      execute: ({ id, workspaceIds }) => sql`${select} where id = ${id} and workspace_id in ${sql.in(workspaceIds)}`
    })

    const insert = SqlSchema.single({
      Request: NewChannel,
      Result: Schema.Struct({ id: ChannelId }),
      execute: (row) =>
        sql`
          insert into channels (workspace_id, kind, name, pipeline_id, is_active, client_id, secret_ciphertext,
                                callback_url, allowed_origins, allowed_ips, credentials_ciphertext, webhook_key,
                                rate_per_second, service_window_ms, is_simulated)
          values (${row.workspace_id}, ${row.kind}, ${row.name}, ${row.pipeline_id}, ${row.is_active}, ${row.client_id},
                  ${row.secret_ciphertext}, ${row.callback_url}, ${row.allowed_origins}::text[], ${row.allowed_ips}::text[],
                  ${row.credentials_ciphertext}, ${row.webhook_key}, ${row.rate_per_second}, ${row.service_window_ms},
                  ${row.is_simulated})
          returning id`
    })

    const pipelineWorkspace = SqlSchema.findOne({
      Request: PipelineId,
      Result: Schema.Struct({ workspace_id: WorkspaceId }),
      execute: (pipelineId) => sql`select workspace_id from pipelines where id = ${pipelineId}`
    })

    const byWebhookKey = SqlSchema.findOne({
      Request: Schema.String,
      Result: ProviderChannelRow,
      execute: (key) =>
        sql`
          select id, workspace_id, kind, pipeline_id, is_active, credentials_ciphertext
          from channels where webhook_key = ${key} and credentials_ciphertext is not null`
    })

    /** A workspace's provider channels of one kind (those a shared webhook may carry events for). */
    const providerChannels = SqlSchema.findAll({
      Request: Schema.Struct({ workspaceId: WorkspaceId, kind: Schema.String }),
      Result: ProviderChannelRow,
      execute: ({ kind, workspaceId }) =>
        sql`
          select id, workspace_id, kind, pipeline_id, is_active, credentials_ciphertext
          from channels where workspace_id = ${workspaceId} and kind = ${kind} and credentials_ciphertext is not null
          order by id`
    })

    const credentialsOf = SqlSchema.findOne({
      Request: ChannelId,
      Result: Schema.Struct({ kind: Schema.String, credentials_ciphertext: Schema.String }),
      execute: (id) =>
        sql`select kind, credentials_ciphertext from channels where id = ${id} and credentials_ciphertext is not null`
    })

    return {
      list: flow(list, Effect.orDie),
      byWebhookKey: flow(byWebhookKey, Effect.orDie),
      providerChannels: (workspaceId: WorkspaceId, kind: string) =>
        providerChannels({ workspaceId, kind }).pipe(Effect.orDie),
      credentialsOf: flow(credentialsOf, Effect.orDie),

      /** The provider revoked the channel's token: its sends stop until new credentials reconnect it. */
      disconnect: (id: ChannelId, reason: string) =>
        sql`update channels set status = 'disconnected', status_reason = ${reason}, updated_at = now()
            where id = ${id} and status = 'connected' returning id`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),

      find: (workspaceIds: ReadonlyArray<WorkspaceId>, id: ChannelId) => find({ id, workspaceIds }).pipe(Effect.orDie),

      insert: flow(insert, Effect.map((r) => r.id), Effect.orDie),

      update: (id: ChannelId, write: ChannelWrite) =>
        sql`update channels set ${set(write)} where id = ${id}`.pipe(Effect.asVoid, Effect.orDie),

      setCredentials: (id: ChannelId, clientId: string, secretCiphertext: string | null) =>
        sql`update channels set client_id = ${clientId}, secret_ciphertext = ${secretCiphertext}, updated_at = now()
            where id = ${id}`.pipe(Effect.asVoid, Effect.orDie),

      pipelineWorkspace: flow(pipelineWorkspace, Effect.map(Option.map((r) => r.workspace_id)), Effect.orDie)
    }
  })
}) {}
