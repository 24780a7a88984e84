import { SqlClient } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import { Channel, type ChannelId, type PipelineId, type WorkspaceId } from "@parley/domain"
import { Effect, Option, Schema } from "effect"

const decodeChannels = Schema.decodeUnknown(Schema.Array(Channel))

export interface ChannelWrite {
  readonly name?: string | undefined
  readonly pipeline_id?: PipelineId | null | undefined
  readonly is_active?: boolean | undefined
  readonly callback_url?: string | null | undefined
  readonly allowed_origins?: ReadonlyArray<string> | undefined
  readonly allowed_ips?: ReadonlyArray<string> | undefined
}

export class ChannelsRepo extends Effect.Service<ChannelsRepo>()("@parley/server/ChannelsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const select = sql`
      select id, workspace_id, kind, name, pipeline_id, is_active, client_id, callback_url, allowed_origins,
             allowed_ips, created_at, updated_at
      from channels`
    const channels = (rows: ReadonlyArray<unknown>) => Effect.orDie(decodeChannels(rows))

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

    return {
      list: (workspaceIds: ReadonlyArray<WorkspaceId>) =>
        sql`${select} where workspace_id in ${sql.in(workspaceIds)} order by id`.pipe(Effect.orDie, Effect.flatMap(channels)),

      find: (workspaceIds: ReadonlyArray<WorkspaceId>, id: ChannelId) =>
        sql`${select} where id = ${id} and workspace_id in ${sql.in(workspaceIds)}`.pipe(
          Effect.orDie,
          Effect.flatMap(channels),
          Effect.map((rows) => Option.fromNullable(rows[0]))
        ),

      insert: (row: {
        workspace_id: WorkspaceId
        kind: string
        name: string
        pipeline_id: PipelineId | null
        is_active: boolean
        client_id: string | null
        secret_ciphertext: string | null
        callback_url: string | null
        allowed_origins: ReadonlyArray<string>
        allowed_ips: ReadonlyArray<string>
      }) =>
        sql<{ id: ChannelId }>`
          insert into channels (workspace_id, kind, name, pipeline_id, is_active, client_id, secret_ciphertext,
                                callback_url, allowed_origins, allowed_ips)
          values (${row.workspace_id}, ${row.kind}, ${row.name}, ${row.pipeline_id}, ${row.is_active}, ${row.client_id},
                  ${row.secret_ciphertext}, ${row.callback_url}, ${row.allowed_origins}::text[], ${row.allowed_ips}::text[])
          returning id`.pipe(Effect.map((rows) => rows[0]!.id), Effect.orDie),

      update: (id: ChannelId, write: ChannelWrite) =>
        sql`update channels set ${set(write)} where id = ${id}`.pipe(Effect.asVoid, Effect.orDie),

      setCredentials: (id: ChannelId, clientId: string, secretCiphertext: string | null) =>
        sql`update channels set client_id = ${clientId}, secret_ciphertext = ${secretCiphertext}, updated_at = now()
            where id = ${id}`.pipe(Effect.asVoid, Effect.orDie),

      pipelineWorkspace: (pipelineId: PipelineId) =>
        sql<{ workspace_id: WorkspaceId }>`select workspace_id from pipelines where id = ${pipelineId}`.pipe(
          Effect.map((rows) => Option.fromNullable(rows[0]?.workspace_id)),
          Effect.orDie
        )
    }
  })
}) {}
