import { SqlClient, SqlSchema } from "@effect/sql"
import {
  ConversationId,
  Followup,
  FollowupInterval,
  OpportunityId,
  PipelineId,
  StageId,
  WorkspaceId
} from "@parley/domain"
import { Effect, Option, Schema } from "effect"

export const StageRef = Schema.Struct({ id: Schema.Number, workspace_id: Schema.Number, pipeline_id: Schema.Number })
export type StageRef = typeof StageRef.Type

/** Everything that decides whether a sequence goes on, read in one query. */
export const SequenceState = Schema.Struct({
  id: Schema.Number,
  workspace_id: WorkspaceId,
  status: Schema.Literal("running", "completed", "cancelled"),
  opportunity_id: OpportunityId,
  pipeline_id: PipelineId,
  stage_id: StageId,
  current_stage_id: StageId,
  /** a later stage entry of the opportunity exists (it left the stage, or entered it again) */
  superseded: Schema.Boolean,
  conversation_id: Schema.NullOr(ConversationId),
  steps: Schema.Number,
  followup_active: Schema.Boolean,
  instructions: Schema.NullOr(Schema.String),
  assets: Schema.NullOr(Schema.String),
  after_followup_stage_id: Schema.NullOr(StageId),
  /** a contact message came after the sequence's anchor (by message order, not wall time) */
  contact_wrote: Schema.Boolean,
  followup_limit: Schema.Number,
  /** followups the conversation has received (every stage's sequences) */
  followups_sent: Schema.Number
})
export type SequenceState = typeof SequenceState.Type

/** A sequence as its workflow runs it: its conversation and its own copy of the intervals. */
export const SequencePlan = Schema.Struct({
  id: Schema.Number,
  conversation_id: Schema.NullOr(Schema.Number),
  intervals: Schema.Array(FollowupInterval)
})
export type SequencePlan = typeof SequencePlan.Type

/** What a stage entry's sequence starts from: the entry, the followup as the pipeline runs, the newest conversation. */
export const SequenceSource = Schema.Struct({
  workspace_id: Schema.Number,
  opportunity_id: Schema.Number,
  stage_id: Schema.Number,
  /** null when the running version's followup has no row any more */
  followup_id: Schema.NullOr(Schema.Number),
  intervals: Schema.Array(FollowupInterval),
  conversation_id: Schema.NullOr(Schema.Number)
})
export type SequenceSource = typeof SequenceSource.Type

export const NewSequence = Schema.Struct({
  ...SequenceSource.fields,
  stage_entry_id: Schema.Number,
  anchor_message_id: Schema.NullOr(Schema.String),
  next_due_at: Schema.String
})
export type NewSequence = typeof NewSequence.Type

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
        sql`select id, workspace_id, pipeline_id from stages where id = ${id} and workspace_id in ${
          sql.in(workspaceIds)
        }`
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

    const sequenceOfEntry = SqlSchema.findOne({
      Request: Schema.Number,
      Result: SequencePlan,
      execute: (entryId) =>
        sql`select id, conversation_id, intervals from followup_sequences where stage_entry_id = ${entryId}`
    })

    const sequenceSource = SqlSchema.findOne({
      Request: Schema.Number,
      Result: SequenceSource,
      execute: (entryId) =>
        sql`
          select e.workspace_id, e.opportunity_id, e.stage_id, (select t.id from followups t where t.id = f.id) as followup_id, f.intervals,
                 (select co.conversation_id from conversation_opportunity co where co.opportunity_id = e.opportunity_id
                  order by co.created_at desc limit 1) as conversation_id
          from stage_entries e
          join opportunities o on o.id = e.opportunity_id and o.stage_id = e.stage_id
          join lateral parley_live_followups(e.pipeline_id, o.config_version_id) f on f.stage_id = e.stage_id and f.is_active
          where e.id = ${entryId}
            and not exists (select 1 from stage_entries later where later.opportunity_id = e.opportunity_id and later.id > e.id)`
    })

    const newestMessage = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ id: Schema.String }),
      execute: (conversationId) =>
        sql`
          select id from messages where conversation_id = ${conversationId} order by created_at desc, id desc limit 1`
    })

    const insertSequence = SqlSchema.single({
      Request: NewSequence,
      Result: SequencePlan,
      execute: (s) =>
        sql`
          insert into followup_sequences (workspace_id, stage_entry_id, followup_id, opportunity_id, stage_id, conversation_id,
                                          intervals, anchor_message_id, next_due_at)
          values (${s.workspace_id}, ${s.stage_entry_id}, ${s.followup_id}, ${s.opportunity_id}, ${s.stage_id}, ${s.conversation_id},
                  ${JSON.stringify(s.intervals)}::jsonb, ${s.anchor_message_id}, ${s.next_due_at})
          returning id, conversation_id, intervals`
    })

    const stageNature = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.Number, pipelineId: Schema.Number }),
      Result: Schema.Struct({ nature: Schema.String }),
      execute: ({ id, pipelineId }) =>
        sql`
          select nature from stages where id = ${id} and pipeline_id = ${pipelineId}`
    })

    const overdue = SqlSchema.findAll({
      Request: Schema.String,
      Result: Schema.Struct({ stage_entry_id: Schema.Number }),
      execute: (dueBefore) =>
        sql`
          select stage_entry_id from followup_sequences
          where status = 'running' and next_due_at < ${dueBefore}
          order by next_due_at limit 200`
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
      }) =>
        sql`
          insert into followups (workspace_id, pipeline_id, stage_id, is_active, intervals, instructions, assets, after_followup_stage_id)
          values (${stage.workspace_id}, ${stage.pipeline_id}, ${stage.id}, ${f.is_active}, ${
          JSON.stringify(f.intervals)
        }::jsonb,
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
        sql`delete from followups where stage_id = ${stageId} returning id`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),

      sequenceState: (sequenceId: number) => sequenceState(sequenceId).pipe(Effect.orDie),

      /** Whether the entry's stage has an active followup in the configuration its opportunity runs. */
      startsSequence: (entryId: number) =>
        sql`
          select 1 from stage_entries e join opportunities o on o.id = e.opportunity_id
          join lateral parley_live_followups(e.pipeline_id, o.config_version_id) f on f.stage_id = e.stage_id
          where e.id = ${entryId} and f.is_active`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),

      sequenceOfEntry: (entryId: number) => sequenceOfEntry(entryId).pipe(Effect.orDie),

      /** None when the entry is not the opportunity's current one or its stage has no active followup. */
      sequenceSource: (entryId: number) => sequenceSource(entryId).pipe(Effect.orDie),

      newestMessageId: (conversationId: number) =>
        newestMessage(conversationId).pipe(Effect.map(Option.map((m) => m.id)), Effect.orDie),

      insertSequence: (s: NewSequence) => insertSequence(s).pipe(Effect.orDie),

      advanceSequence: (sequenceId: number, step: number, nextDueAt: string) =>
        sql`
          update followup_sequences set steps_done = greatest(steps_done, ${step}), next_due_at = ${nextDueAt}, updated_at = now()
          where id = ${sequenceId} and status = 'running'`.pipe(Effect.asVoid, Effect.orDie),

      endSequence: (sequenceId: number, status: "completed" | "cancelled", reason: string) =>
        sql`
          update followup_sequences set status = ${status}, end_reason = ${reason}, next_due_at = null, updated_at = now()
          where id = ${sequenceId} and status = 'running'`.pipe(Effect.asVoid, Effect.orDie),

      /** Row lock on the sequence's opportunity, held to the end of the transaction. */
      lockOpportunityOf: (sequenceId: number) =>
        sql`select o.id from opportunities o join followup_sequences s on s.opportunity_id = o.id where s.id = ${sequenceId} for update of o`
          .pipe(Effect.asVoid, Effect.orDie),

      /** The stage's nature, when the stage belongs to the pipeline. */
      stageNature: (id: StageId, pipelineId: PipelineId) =>
        stageNature({ id, pipelineId }).pipe(Effect.map(Option.map((s) => s.nature)), Effect.orDie),

      /** The entries of running sequences due before the given time, the most overdue first. */
      overdueEntries: (dueBefore: string) =>
        overdue(dueBefore).pipe(Effect.map((rows) => rows.map((r) => r.stage_entry_id)), Effect.orDie)
    }
  })
}) {}
