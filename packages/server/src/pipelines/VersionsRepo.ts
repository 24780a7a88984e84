/**
 * Pipeline versions' SQL (migration 0023, docs/versions.md): the snapshots, the live pointer, the
 * workspace's `is_drafts_enabled`, and what publish checks (stranded opportunities, the eval gate).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { WorkspaceId } from "@parley/domain"
import { Effect, Schema } from "effect"
import * as WorkspaceWrites from "../tables/WorkspaceWrites.js"

const Ids = Schema.Array(Schema.Number)

export const PipelineStateRow = Schema.Struct({
  id: Schema.Number,
  workspace_id: Schema.Number,
  drafts: Schema.Boolean,
  is_publish_gated: Schema.Boolean,
  live_version_id: Schema.NullOr(Schema.Number),
  live_number: Schema.NullOr(Schema.Number),
  live_hash: Schema.NullOr(Schema.String),
  draft_hash: Schema.String
})
export type PipelineStateRow = typeof PipelineStateRow.Type

export const VersionRow = Schema.Struct({
  id: Schema.Number,
  pipeline_id: Schema.Number,
  number: Schema.Number,
  source: Schema.Literal("publish", "rollback"),
  rolled_back_from: Schema.NullOr(Schema.Number),
  published_at: Schema.String,
  published_by: Schema.String,
  published_by_user_id: Schema.NullOr(Schema.Number),
  config_hash: Schema.String,
  is_live: Schema.Boolean
})
export type VersionRow = typeof VersionRow.Type

export const Config = Schema.Record({ key: Schema.String, value: Schema.Unknown })
export type Config = typeof Config.Type

export const LockedPipeline = Schema.Struct({
  id: Schema.Number,
  is_publish_gated: Schema.Boolean,
  live_version_id: Schema.NullOr(Schema.Number)
})
export type LockedPipeline = typeof LockedPipeline.Type

export const NewVersion = Schema.Struct({
  pipelineId: Schema.Number,
  /** the version whose snapshot is republished; null publishes the draft */
  fromNumber: Schema.NullOr(Schema.Number),
  userId: Schema.Number,
  tokenId: Schema.Number
})

export class VersionsRepo extends Effect.Service<VersionsRepo>()("@parley/server/VersionsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const versionColumns = sql`
      v.id, v.pipeline_id, v.number, v.source, v.rolled_back_from, v.published_at, v.published_by, v.published_by_user_id, v.config_hash,
      (v.id = p.live_version_id) is true as is_live`

    /** The draft's hash: what an eval run of the draft recorded as `config_hash`. */
    const draftHashOf = (pipelineId: unknown) => sql`md5(parley_pipeline_config(${pipelineId})::text)`

    const pipeline = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceIds: Ids, id: Schema.Number }),
      Result: PipelineStateRow,
      execute: ({ id, workspaceIds }) =>
        sql`
          select p.id, p.workspace_id, w.is_drafts_enabled as drafts, p.is_publish_gated, p.live_version_id,
                 lv.number as live_number, lv.config_hash as live_hash, ${draftHashOf(sql`p.id`)} as draft_hash
          from pipelines p join workspaces w on w.id = p.workspace_id
          left join pipeline_versions lv on lv.id = p.live_version_id
          where p.id = ${id} and p.workspace_id in ${sql.in(workspaceIds)}`
    })

    const versions = SqlSchema.findAll({
      Request: Schema.Number,
      Result: VersionRow,
      execute: (pipelineId) =>
        sql`select ${versionColumns} from pipeline_versions v join pipelines p on p.id = v.pipeline_id
            where v.pipeline_id = ${pipelineId} order by v.number desc`
    })

    const version = SqlSchema.findOne({
      Request: Schema.Struct({ pipelineId: Schema.Number, number: Schema.Number }),
      Result: Schema.Struct({ ...VersionRow.fields, config: Config }),
      execute: ({ number, pipelineId }) =>
        sql`select ${versionColumns}, v.config from pipeline_versions v join pipelines p on p.id = v.pipeline_id
            where v.pipeline_id = ${pipelineId} and v.number = ${number}`
    })

    /** The publish transaction's first statement: the caller's pipeline, its row locked (publishes one at a time). */
    const lock = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceIds: Ids, id: Schema.Number }),
      Result: LockedPipeline,
      execute: ({ id, workspaceIds }) =>
        sql`select id, is_publish_gated, live_version_id from pipelines where id = ${id} and workspace_id in ${
          sql.in(workspaceIds)
        } for update`
    })

    const draftHash = SqlSchema.single({
      Request: Schema.Number,
      Result: Schema.Struct({ hash: Schema.String }),
      execute: (pipelineId) => sql`select ${draftHashOf(pipelineId)} as hash`
    })

    const draft = SqlSchema.single({
      Request: Schema.Number,
      Result: Schema.Struct({ config: Config }),
      execute: (pipelineId) => sql`select parley_pipeline_config(${pipelineId}) as config`
    })

    /**
     * Opportunities (not evals') in a stage of the live configuration (`live`: 0 the tables, else a version)
     * that the new one lacks, per stage: a publish or rollback that would strand them is refused.
     */
    const stranded = SqlSchema.findAll({
      Request: Schema.Struct({
        pipelineId: Schema.Number,
        live: Schema.Number,
        fromNumber: Schema.NullOr(Schema.Number)
      }),
      Result: Schema.Struct({ name: Schema.String, held: Schema.Number }),
      execute: ({ fromNumber, live, pipelineId }) =>
        sql`
          with next as (
            select coalesce((select v.config from pipeline_versions v where v.pipeline_id = ${pipelineId} and v.number = ${fromNumber}),
                            parley_pipeline_config(${pipelineId})) as config
          )
          select s.name, count(*)::int as held
          from parley_live_stages(${pipelineId}, ${live}) s
          join opportunities o on o.stage_id = s.id and not o.is_eval
          where s.id not in (select (x ->> 'id')::bigint from next, jsonb_array_elements(next.config -> 'stages') x)
          group by s.id, s.name order by s.name`
    })

    /** The newest finished eval run that played the draft (the tables): its status and the draft it played. */
    const lastDraftRun = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ id: Schema.Number, status: Schema.String, config_hash: Schema.NullOr(Schema.String) }),
      execute: (pipelineId) =>
        sql`select id, status, config_hash from eval_runs
            where pipeline_id = ${pipelineId} and version_id is null and status in ('passed', 'failed')
            order by id desc limit 1`
    })

    /**
     * In the publish transaction, after `lock`: the snapshot (the draft's, or an earlier version's for a
     * rollback) stored as the next number and made live. The actor's token names who published.
     */
    const insert = SqlSchema.single({
      Request: NewVersion,
      Result: Schema.Struct({ ...VersionRow.fields, config: Config }),
      execute: (n) =>
        sql`
          with source as (
            select coalesce(v.config, parley_pipeline_config(${n.pipelineId})) as config, v.number as from_number
            from (select 1) one
            left join pipeline_versions v on v.pipeline_id = ${n.pipelineId} and v.number = ${n.fromNumber}
          ), inserted as (
            insert into pipeline_versions (workspace_id, pipeline_id, number, config, config_hash, published_by_user_id, published_by,
                                           source, rolled_back_from)
            select p.workspace_id, p.id, coalesce((select max(number) from pipeline_versions where pipeline_id = p.id), 0) + 1,
                   source.config, md5(source.config::text), ${n.userId},
                   coalesce((select case when account_session_id is null then name else 'console' end from access_tokens where id = ${n.tokenId}),
                            'console'),
                   case when ${n.fromNumber}::int is null then 'publish' else 'rollback' end, source.from_number
            from pipelines p, source where p.id = ${n.pipelineId}
            returning id, pipeline_id, number, source, rolled_back_from, published_at, published_by, published_by_user_id, config_hash, config
          ), live as (
            update pipelines set live_version_id = inserted.id from inserted where pipelines.id = ${n.pipelineId}
          )
          select inserted.*, true as is_live from inserted`
    })

    const settings = SqlSchema.findAll({
      Request: Schema.Struct({ workspaceIds: Ids, workspaceId: Schema.Number }),
      Result: Schema.Struct({ workspace_id: WorkspaceId, drafts: Schema.Boolean }),
      execute: ({ workspaceId, workspaceIds }) =>
        sql`
          select id as workspace_id, is_drafts_enabled as drafts from workspaces where id = ${workspaceId} and id in ${
          sql.in(workspaceIds)
        }`
    })

    return {
      pipeline: (workspaceIds: ReadonlyArray<number>, id: number) => Effect.orDie(pipeline({ workspaceIds, id })),
      versions: (pipelineId: number) => Effect.orDie(versions(pipelineId)),
      version: (pipelineId: number, number: number) => Effect.orDie(version({ pipelineId, number })),
      draft: (pipelineId: number) => Effect.map(Effect.orDie(draft(pipelineId)), (r) => r.config),
      stranded: (pipelineId: number, live: number, fromNumber: number | null) =>
        Effect.orDie(stranded({ pipelineId, live, fromNumber })),
      lastDraftRun: (pipelineId: number) => Effect.orDie(lastDraftRun(pipelineId)),
      lock: (workspaceIds: ReadonlyArray<number>, id: number) => Effect.orDie(lock({ workspaceIds, id })),
      draftHash: (pipelineId: number) => Effect.map(Effect.orDie(draftHash(pipelineId)), (r) => r.hash),
      insert: (n: typeof NewVersion.Type) => Effect.orDie(insert(n)),
      setGate: (pipelineId: number, gated: boolean) =>
        Effect.orDie(sql`update pipelines set is_publish_gated = ${gated} where id = ${pipelineId}`),
      settings: (workspaceIds: ReadonlyArray<WorkspaceId>, workspaceId: WorkspaceId) =>
        Effect.orDie(settings({ workspaceIds, workspaceId })),
      setDrafts: (workspaceId: number, drafts: boolean) =>
        Effect.orDie(
          WorkspaceWrites.update(
            sql,
            { is_drafts_enabled: drafts, updated_at: sql`now()` },
            sql`where id = ${workspaceId}`
          )
        )
    }
  })
}) {}
