import { SqlClient, SqlSchema } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import {
  type ChannelId,
  type CreatePipeline,
  type CreateStage,
  type ModelPoolEntry,
  Pipeline,
  PipelineId,
  Stage,
  StageId,
  type UpdatePipeline,
  type UpdateStage,
  type WorkspaceId
} from "@parley/domain"
import { Effect, Schema } from "effect"

const Ids = Schema.Array(Schema.Number)
const InWorkspaces = Schema.Struct({ id: Schema.Number, workspaceIds: Ids })
/** A row to insert, column to value: only the columns the request sent, the database's defaults for the others. */
const Columns = Schema.Record({ key: Schema.String, value: Schema.Unknown })
const Count = Schema.Struct({ n: Schema.Number })

/** Settings columns a create or update may write, in the order of the table. */
const settingColumns = [
  "name",
  "description",
  "persona",
  "instructions",
  "status",
  "is_archived",
  "agent_type_id",
  "ai_model_id",
  "language_id",
  "dialect_id",
  "rag_mode",
  "model_temperature",
  "no_of_relevant_points",
  "agent_memory_window",
  "context_message_count",
  "max_conversation_cost",
  "max_conversation_messages",
  "reply_debounce_ms",
  "followup_limit",
  "is_unknown_contacts_enabled",
  "is_model_routing_enabled",
  "handoff_instructions",
  "handoff_bridge_mode",
  "handoff_bridge_text",
  "handoff_bridge_template",
  "handoff_timeout_seconds",
  "handoff_timeout_action",
  "handoff_keywords",
  "handoff_after_failures",
  "fallback_message",
  "handoff_on_failure",
  "fallback_model_id",
  "vision_model_id",
  "transcription_model_id",
  "cite_sources"
] as const

const stageColumns = [
  "name",
  "nature",
  "description",
  "ai_persona",
  "instructions",
  "notes",
  "enter_condition",
  "parent_id",
  "is_opening_message",
  "opening_message_type",
  "static_opening_message",
  "opening_template",
  "handoff_instructions"
] as const

/** Columns that hold JSON documents (a template): written as JSON text. */
const jsonColumns: ReadonlySet<string> = new Set(["handoff_bridge_template", "opening_template"])

const pick = <K extends string>(source: Partial<Record<K, unknown>>, keys: ReadonlyArray<K>) => {
  const out: Record<string, unknown> = {}
  for (const k of keys) {
    const v = source[k]
    if (v !== undefined) out[k] = jsonColumns.has(k) && v !== null ? JSON.stringify(v) : v
  }
  return out
}

export class PipelinesRepo extends Effect.Service<PipelinesRepo>()("@parley/server/PipelinesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const selectPipeline = sql`
      select p.id, p.workspace_id, p.name, p.description, p.persona, p.instructions, p.status, p.is_archived,
             p.agent_type_id, p.ai_model_id, p.language_id, p.dialect_id,
             (select min(c.id) from channels c where c.pipeline_id = p.id) as channel_id,
             p.rag_mode, p.model_temperature, p.no_of_relevant_points, p.agent_memory_window, p.context_message_count,
             p.max_conversation_cost, p.max_conversation_messages, p.reply_debounce_ms, p.followup_limit, p.is_unknown_contacts_enabled,
             p.is_model_routing_enabled, p.model_pool as is_model_routing, p.handoff_instructions, p.handoff_bridge_mode,
             p.handoff_bridge_text, p.handoff_bridge_template, p.handoff_timeout_seconds, p.handoff_timeout_action, p.handoff_keywords, p.handoff_after_failures,
             p.fallback_message, p.handoff_on_failure, p.fallback_model_id, p.vision_model_id, p.transcription_model_id,
             p.cite_sources, (select count(*) from stages s where s.pipeline_id = p.id)::int as stages_count,
             p.created_at, p.updated_at
      from pipelines p`
    const selectStage = sql`
      select id, pipeline_id, name, nature, sort_order as "order", description, ai_persona, instructions, notes,
             enter_condition, parent_id, is_opening_message, opening_message_type, static_opening_message, opening_template,
             handoff_instructions, created_at, updated_at
      from stages`

    /** `a = $1, b = $2, updated_at = now()`: only the columns sent change. */
    const setClause = (set: Record<string, unknown>) =>
      sql.csv([...Object.entries(set).map(([k, v]) => sql`${sql(k)} = ${v as never}`), sql`updated_at = now()`])

    const list = SqlSchema.findAll({
      Request: Ids,
      Result: Pipeline,
      execute: (workspaceIds) => sql`${selectPipeline} where p.workspace_id in ${sql.in(workspaceIds)} order by p.id`
    })

    const find = SqlSchema.findOne({
      Request: InWorkspaces,
      Result: Pipeline,
      execute: ({ id, workspaceIds }) =>
        sql`${selectPipeline} where p.id = ${id} and p.workspace_id in ${sql.in(workspaceIds)}`
    })

    const insert = SqlSchema.single({
      Request: Columns,
      Result: Schema.Struct({ id: PipelineId }),
      execute: (columns) => sql`insert into pipelines ${sql.insert(columns)} returning id`
    })

    const stages = SqlSchema.findAll({
      Request: Schema.Number,
      Result: Stage,
      execute: (pipelineId) => sql`${selectStage} where pipeline_id = ${pipelineId} order by sort_order, id`
    })

    const findStage = SqlSchema.findOne({
      Request: InWorkspaces,
      Result: Stage,
      execute: ({ id, workspaceIds }) =>
        sql`${selectStage} where id = ${id} and workspace_id in ${sql.in(workspaceIds)}`
    })

    const stageCount = SqlSchema.single({
      Request: Schema.Number,
      Result: Count,
      execute: (pipelineId) => sql`select count(*)::int as n from stages where pipeline_id = ${pipelineId}`
    })

    const insertStage = SqlSchema.single({
      Request: Columns,
      Result: Schema.Struct({ id: StageId }),
      execute: (columns) => sql`insert into stages ${sql.insert(columns)} returning id`
    })

    const opportunitiesIn = SqlSchema.single({
      Request: Schema.Number,
      Result: Count,
      execute: (stageId) => sql`select count(*)::int as n from opportunities where stage_id = ${stageId}`
    })

    return {
      list: (workspaceIds: ReadonlyArray<WorkspaceId>) => list(workspaceIds).pipe(Effect.orDie),

      find: (workspaceIds: ReadonlyArray<WorkspaceId>, id: PipelineId) => find({ id, workspaceIds }).pipe(Effect.orDie),

      /** Row lock so concurrent stage edits of one pipeline re-number one after the other. */
      lock: (id: PipelineId) =>
        sql`select id from pipelines where id = ${id} for update`.pipe(Effect.asVoid, Effect.orDie),

      insert: (
        workspaceId: WorkspaceId,
        input: CreatePipeline,
        modelPool: ReadonlyArray<ModelPoolEntry>
      ): Effect.Effect<PipelineId, SqlError> =>
        insert({ workspace_id: workspaceId, ...pick(input, settingColumns), model_pool: JSON.stringify(modelPool) })
          .pipe(
            Effect.map((row) => row.id),
            // the SqlError stays typed: the service turns the name's unique violation into a 422
            Effect.catchTags({ ParseError: Effect.die, NoSuchElementException: Effect.die })
          ),

      update: (
        id: PipelineId,
        input: UpdatePipeline,
        modelPool: ReadonlyArray<ModelPoolEntry> | undefined
      ): Effect.Effect<void, SqlError> => {
        const set = { ...pick(input, settingColumns), ...(modelPool ? { model_pool: JSON.stringify(modelPool) } : {}) }
        return sql`update pipelines set ${setClause(set)} where id = ${id}`.pipe(Effect.asVoid)
      },

      linkChannel: (pipelineId: PipelineId, channelId: ChannelId) =>
        sql`update channels set pipeline_id = ${pipelineId}, updated_at = now() where id = ${channelId}`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),

      unlinkChannels: (pipelineId: PipelineId) =>
        sql`update channels set pipeline_id = null, updated_at = now() where pipeline_id = ${pipelineId}`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),

      stages: (pipelineId: PipelineId) => stages(pipelineId).pipe(Effect.orDie),

      findStage: (workspaceIds: ReadonlyArray<WorkspaceId>, id: StageId) =>
        findStage({ id, workspaceIds }).pipe(Effect.orDie),

      stageCount: (pipelineId: PipelineId) => stageCount(pipelineId).pipe(Effect.map((row) => row.n), Effect.orDie),

      /** Moves the stages at positions [from, to] by `delta` (+1 to open a gap, -1 to close one). */
      shiftStages: (pipelineId: PipelineId, from: number, to: number, delta: 1 | -1) =>
        sql`update stages set sort_order = sort_order + ${delta}
            where pipeline_id = ${pipelineId} and sort_order between ${from} and ${to}`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),

      insertStage: (workspaceId: WorkspaceId, pipelineId: PipelineId, order: number, input: CreateStage) =>
        insertStage({
          workspace_id: workspaceId,
          pipeline_id: pipelineId,
          sort_order: order,
          ...pick(input, stageColumns)
        }).pipe(
          Effect.map((row) => row.id),
          Effect.orDie
        ),

      updateStage: (id: StageId, input: UpdateStage, order: number | undefined) => {
        const set = { ...pick(input, stageColumns), ...(order !== undefined ? { sort_order: order } : {}) }
        return sql`update stages set ${setClause(set)} where id = ${id}`.pipe(Effect.asVoid, Effect.orDie)
      },

      opportunitiesIn: (id: StageId) => opportunitiesIn(id).pipe(Effect.map((row) => row.n), Effect.orDie),

      deleteStage: (id: StageId) => sql`delete from stages where id = ${id}`.pipe(Effect.asVoid, Effect.orDie),

      channelInWorkspace: (workspaceId: WorkspaceId, channelId: ChannelId) =>
        sql`select 1 from channels where id = ${channelId} and workspace_id = ${workspaceId}`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        )
    }
  })
}) {}
