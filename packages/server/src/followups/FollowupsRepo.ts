import { SqlClient, SqlSchema } from "@effect/sql"
import { Followup, type FollowupInterval, type MessageTemplate, type StageId, type WorkspaceId } from "@parley/domain"
import { Effect, Schema } from "effect"

export const StageRef = Schema.Struct({ id: Schema.Number, workspace_id: Schema.Number, pipeline_id: Schema.Number })
export type StageRef = typeof StageRef.Type

/** A jsonb column's value: JSON text, or null. */
const jsonOrNull = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value))

/** Followups (one per stage): SQL only. The sequences they start are SequencesRepo's. */
export class FollowupsRepo extends Effect.Service<FollowupsRepo>()("@parley/server/FollowupsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const selectFollowup = sql`
      select f.id, f.stage_id, f.pipeline_id, f.is_active, f.intervals, f.instructions, f.assets, f.after_followup_stage_id, f.template,
             least(jsonb_array_length(f.intervals), p.followup_limit)::int as max_messages, f.created_at, f.updated_at
      from followups f join pipelines p on p.id = f.pipeline_id`

    const findStage = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.Number, workspaceIds: Schema.Array(Schema.Number) }),
      Result: StageRef,
      execute: ({ id, workspaceIds }) =>
        sql`select id, workspace_id, pipeline_id from stages where id = ${id} and workspace_id in ${
          sql.in(workspaceIds)
        }`
    })

    const byStage = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Followup,
      execute: (stageId) => sql`${selectFollowup} where f.stage_id = ${stageId}`
    })

    return {
      findStage: (workspaceIds: ReadonlyArray<WorkspaceId>, id: StageId) =>
        findStage({ id, workspaceIds }).pipe(Effect.orDie),

      /** Row lock: saves and deletes of one stage's followup run one after the other. */
      lockStage: (id: StageId) =>
        sql`select id from stages where id = ${id} for update`.pipe(Effect.asVoid, Effect.orDie),

      stageInPipeline: (pipelineId: number, id: number) =>
        sql`select 1 from stages where id = ${id} and pipeline_id = ${pipelineId}`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),

      byStage: (stageId: StageId) => byStage(stageId).pipe(Effect.orDie),

      insert: (stage: StageRef, f: {
        readonly is_active: boolean
        readonly intervals: ReadonlyArray<FollowupInterval>
        readonly instructions: string | null
        readonly assets: string | null
        readonly after_followup_stage_id: number | null
        readonly template: MessageTemplate | null
      }) =>
        sql`
          insert into followups (workspace_id, pipeline_id, stage_id, is_active, intervals, instructions, assets, after_followup_stage_id, template)
          values (${stage.workspace_id}, ${stage.pipeline_id}, ${stage.id}, ${f.is_active}, ${
          JSON.stringify(f.intervals)
        }::jsonb,
                  ${f.instructions}, ${f.assets}, ${f.after_followup_stage_id}, ${jsonOrNull(f.template)}::jsonb)`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),

      /** Only the fields sent change. */
      update: (stageId: StageId, set: Record<string, unknown>) =>
        sql`update followups set ${
          sql.csv([
            ...Object.entries(set).map(([k, v]) =>
              k === "intervals" || k === "template"
                ? sql`${sql(k)} = ${jsonOrNull(v)}::jsonb`
                : sql`${sql(k)} = ${v as never}`
            ),
            sql`updated_at = now()`
          ])
        } where stage_id = ${stageId}`.pipe(Effect.asVoid, Effect.orDie),

      remove: (stageId: StageId) =>
        sql`delete from followups where stage_id = ${stageId} returning id`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        )
    }
  })
}) {}
