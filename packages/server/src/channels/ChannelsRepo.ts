import { SqlClient, SqlSchema } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import { Channel, ChannelId, PipelineId, WorkspaceId } from "@parley/domain"
import { Effect, flow, Option, Schema } from "effect"

export interface ChannelWrite {
  readonly name?: string | undefined
  readonly pipeline_id?: PipelineId | null | undefined
  readonly is_active?: boolean | undefined
  readonly callback_url?: string | null | undefined
  readonly allowed_origins?: ReadonlyArray<string> | undefined
  readonly allowed_ips?: ReadonlyArray<string> | undefined
}

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
  allowed_ips: Schema.Array(Schema.String)
})

export class ChannelsRepo extends Effect.Service<ChannelsRepo>()("@parley/server/ChannelsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const select = sql`
      select id, workspace_id, kind, name, pipeline_id, is_active, client_id, callback_url, allowed_origins,
             allowed_ips, created_at, updated_at
      from channels`

    const set = (w: ChannelWrite) => {
      const entries: Array<Statement.Fragment> = []
      if (w.name !== undefined) entries.push(sql`name = ${w.name}`)
      if (w.pipeline_id !== undefined) entries.push(sql`pipeline_id = ${w.pipeline_id}`)
      if (w.is_active !== undefined) entries.push(sql`is_active = ${w.is_active}`)
      if (w.callback_url !== undefined) entries.push(sql`callback_url = ${w.callback_url}`)
      if (w.allowed_origins !== undefined) entries.push(sql`allowed_origins = ${w.allowed_origins}::text[]`)
      if (w.allowed_ips !== undefined) entries.push(sql`allowed_ips = ${w.allowed_ips}::text[]`)
      return sql.csv([...entries, sql`updated_at = now()`])
    }

    const list = SqlSchema.findAll({
      Request: WorkspaceIds,
      Result: Channel,
      execute: (workspaceIds) => sql`${select} where workspace_id in ${sql.in(workspaceIds)} order by id`
    })

    const find = SqlSchema.findOne({
      Request: Schema.Struct({ id: ChannelId, workspaceIds: WorkspaceIds }),
      Result: Channel,
      execute: ({ id, workspaceIds }) => sql`${select} where id = ${id} and workspace_id in ${sql.in(workspaceIds)}`
    })

    const insert = SqlSchema.single({
      Request: NewChannel,
      Result: Schema.Struct({ id: ChannelId }),
      execute: (row) =>
        sql`
          insert into channels (workspace_id, kind, name, pipeline_id, is_active, client_id, secret_ciphertext,
                                callback_url, allowed_origins, allowed_ips)
          values (${row.workspace_id}, ${row.kind}, ${row.name}, ${row.pipeline_id}, ${row.is_active}, ${row.client_id},
                  ${row.secret_ciphertext}, ${row.callback_url}, ${row.allowed_origins}::text[], ${row.allowed_ips}::text[])
          returning id`
    })

    const pipelineWorkspace = SqlSchema.findOne({
      Request: PipelineId,
      Result: Schema.Struct({ workspace_id: WorkspaceId }),
      execute: (pipelineId) => sql`select workspace_id from pipelines where id = ${pipelineId}`
    })

    return {
      list: flow(list, Effect.orDie),

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
