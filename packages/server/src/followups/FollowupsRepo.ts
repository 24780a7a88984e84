import { SqlClient, SqlSchema } from "@effect/sql"
import { Followup, type FollowupInterval, type StageId, type WorkspaceId } from "@parley/domain"
import { Effect, Schema } from "effect"

export const StageRef = Schema.Struct({ id: Schema.Number, workspace_id: Schema.Number, pipeline_id: Schema.Number })
export type StageRef = typeof StageRef.Type

/** Everything that decides whether a sequence goes on, read in one query. */
export const SequenceState = Schema.Struct({
  id: Schema.Number,
  workspace_id: Schema.Number,
  status: Schema.Literal("running", "completed", "cancelled"),
  opportunity_id: Schema.Number,
  pipeline_id: Schema.Number,
  stage_id: Schema.Number,
  current_stage_id: Schema.Number,
  /** a later stage entry of the opportunity exists (it left the stage, or entered it again) */
  superseded: Schema.Boolean,
  conversation_id: Schema.NullOr(Schema.Number),
  steps: Schema.Number,
  followup_active: Schema.Boolean,
  instructions: Schema.NullOr(Schema.String),
  assets: Schema.NullOr(Schema.String),
  after_followup_stage_id: Schema.NullOr(Schema.Number),
  /** a contact message came after the sequence's anchor (by message order, not wall time) */
  contact_wrote: Schema.Boolean,
  followup_limit: Schema.Number,
  /** followups the conversation has received (every stage's sequences) */
  followups_sent: Schema.Number
})
export type SequenceState = typeof SequenceState.Type

/** Why a sequence cannot go on, or null when it can. */
export const blocker = (s: SequenceState) =>
  s.status !== "running"
    ? "ended" as const
    : s.contact_wrote
    ? "contact_replied" as const
    : s.current_stage_id !== s.stage_id || s.superseded
    ? "stage_left" as const
    : !s.followup_active
    ? "followup_inactive" as const
    : null

/** Followups (one per stage) and their sequences: SQL only. */
export class FollowupsRepo extends Effect.Service<FollowupsRepo>()("@parley/server/FollowupsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const selectFollowup = sql`
      select f.id, f.stage_id, f.pipeline_id, f.is_active, f.intervals, f.instructions, f.assets, f.after_followup_stage_id,
             least(jsonb_array_length(f.intervals), p.followup_limit)::int as max_messages, f.created_at, f.updated_at
      from followups f join pipelines p on p.id = f.pipeline_id`

    const findStage = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.Number, workspaceIds: Schema.Array(Schema.Number) }),
      Result: StageRef,
      execute: ({ id, workspaceIds }) =>
        sql`select id, workspace_id, pipeline_id from stages where id = ${id} and workspace_id in ${sql.in(workspaceIds)}`
    })

    const byStage = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Followup,
      execute: (stageId) => sql`${selectFollowup} where f.stage_id = ${stageId}`
    })

    const sequenceState = SqlSchema.findOne({
      Request: Schema.Number,
      Result: SequenceState,
      execute: (sequenceId) =>
        sql`
          select s.id, s.workspace_id, s.status, s.opportunity_id, o.pipeline_id, s.stage_id, o.stage_id as current_stage_id,
                 exists (select 1 from stage_entries e where e.opportunity_id = s.opportunity_id and e.id > s.stage_entry_id) as superseded,
                 s.conversation_id, jsonb_array_length(s.intervals)::int as steps,
                 coalesce(f.is_active, false) as followup_active, f.instructions, f.assets, f.after_followup_stage_id,
                 case
                   when s.conversation_id is null then false
                   when s.anchor_message_id is null then exists (
                     select 1 from messages m where m.conversation_id = s.conversation_id and m.role = 'user')
                   else exists (
                     select 1 from messages m, messages a
                     where a.id = s.anchor_message_id and m.conversation_id = s.conversation_id and m.role = 'user'
                       and (m.created_at, m.id) > (a.created_at, a.id))
                 end as contact_wrote,
                 p.followup_limit,
                 (select count(*) from messages m where m.conversation_id = s.conversation_id and m.call_type = 'followup'
                    and m.status <> 'failed')::int as followups_sent
          from followup_sequences s
          join opportunities o on o.id = s.opportunity_id
          -- the followup and limit as the pipeline runs (docs/versions.md)
          join lateral parley_live_pipeline(o.pipeline_id, o.config_version_id) p on true
          left join lateral parley_live_followups(o.pipeline_id, o.config_version_id) f on f.id = s.followup_id
          where s.id = ${sequenceId}`
    })

    return {
      findStage: (workspaceIds: ReadonlyArray<WorkspaceId>, id: StageId) => findStage({ id, workspaceIds }).pipe(Effect.orDie),

      /** Row lock: saves and deletes of one stage's followup run one after the other. */
      lockStage: (id: StageId) => sql`select id from stages where id = ${id} for update`.pipe(Effect.asVoid, Effect.orDie),

      stageInPipeline: (pipelineId: number, id: number) =>
        sql`select 1 from stages where id = ${id} and pipeline_id = ${pipelineId}`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),

      byStage: (stageId: StageId) => byStage(stageId).pipe(Effect.orDie),

      insert: (stage: StageRef, f: {
        readonly is_active: boolean
        readonly intervals: ReadonlyArray<FollowupInterval>
        readonly instructions: string | null
        readonly assets: string | null
        readonly after_followup_stage_id: number | null
      }) =>
        sql`
          insert into followups (workspace_id, pipeline_id, stage_id, is_active, intervals, instructions, assets, after_followup_stage_id)
          values (${stage.workspace_id}, ${stage.pipeline_id}, ${stage.id}, ${f.is_active}, ${JSON.stringify(f.intervals)}::jsonb,
                  ${f.instructions}, ${f.assets}, ${f.after_followup_stage_id})`.pipe(Effect.asVoid, Effect.orDie),

      /** Only the fields sent change. */
      update: (stageId: StageId, set: Record<string, unknown>) =>
        sql`update followups set ${
          sql.csv([
            ...Object.entries(set).map(([k, v]) =>
              k === "intervals" ? sql`intervals = ${JSON.stringify(v)}::jsonb` : sql`${sql(k)} = ${v as never}`
            ),
            sql`updated_at = now()`
          ])
        } where stage_id = ${stageId}`.pipe(Effect.asVoid, Effect.orDie),

      remove: (stageId: StageId) =>
        sql`delete from followups where stage_id = ${stageId} returning id`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),

      sequenceState: (sequenceId: number) => sequenceState(sequenceId).pipe(Effect.orDie)
    }
  })
}) {}
