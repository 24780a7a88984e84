import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import {
  ConversationId,
  FollowupInterval,
  MessageTemplate,
  OpportunityId,
  PipelineId,
  StageId,
  WorkspaceId
} from "@parley/domain"
import { Effect, Option, Schema } from "effect"

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
  /** the followup's template, for a step after a provider's window closed */
  template: Schema.NullOr(MessageTemplate),
  after_followup_stage_id: Schema.NullOr(StageId),
  /** a contact message came after the sequence's anchor (by message order, not wall time) */
  contact_wrote: Schema.Boolean,
  /** the newest message sent to the contact after the anchor, if any, and how long ago (by the database's clock) */
  sent_since_id: Schema.NullOr(Schema.String),
  sent_since_age_ms: Schema.NullOr(Schema.Number),
  /** a contact message came after that message */
  contact_wrote_since: Schema.Boolean,
  /** the interval of the step the sequence waits for (steps_done + 1), in the sequence's copy */
  current_interval: Schema.NullOr(FollowupInterval),
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

/**
 * The newest message sent to the contact of a conversation after a message (all of them when `after` is null):
 * an assistant message with text or files that did not fail (an AI reply, an operator's message, an opening, a
 * followup, a bridge message).
 */
const sentToContact = (
  sql: SqlClient.SqlClient,
  conversationId: Statement.Fragment,
  after: Statement.Fragment
) =>
  sql`
    select m.id, m.created_at from messages m
    where m.conversation_id = ${conversationId} and m.role = 'assistant' and m.status <> 'failed'
      and (coalesce(m.message, '') <> '' or m.files <> '[]'::jsonb)
      and (${after} is null or (m.created_at, m.id) > (select a.created_at, a.id from messages a where a.id = ${after}))
    order by m.created_at desc, m.id desc limit 1`

/** Followup sequences: their state, waits and ends. SQL only. */
export class SequencesRepo extends Effect.Service<SequencesRepo>()("@parley/server/SequencesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const sequenceState = SqlSchema.findOne({
      Request: Schema.Number,
      Result: SequenceState,
      execute: (sequenceId) =>
        sql`
          select s.id, s.workspace_id, s.status, s.opportunity_id, o.pipeline_id, s.stage_id, o.stage_id as current_stage_id,
                 exists (select 1 from stage_entries e where e.opportunity_id = s.opportunity_id and e.id > s.stage_entry_id) as superseded,
                 s.conversation_id, jsonb_array_length(s.intervals)::int as steps,
                 coalesce(f.is_active, false) as followup_active, f.instructions, f.assets, f.template, f.after_followup_stage_id,
                 case
                   when s.conversation_id is null then false
                   when s.anchor_message_id is null then exists (
                     select 1 from messages m where m.conversation_id = s.conversation_id and m.role = 'user')
                   else exists (
                     select 1 from messages m, messages a
                     where a.id = s.anchor_message_id and m.conversation_id = s.conversation_id and m.role = 'user'
                       and (m.created_at, m.id) > (a.created_at, a.id))
                 end as contact_wrote,
                 sent.id as sent_since_id,
                 (extract(epoch from clock_timestamp() - sent.created_at) * 1000)::float8 as sent_since_age_ms,
                 sent.id is not null and exists (
                   select 1 from messages m where m.conversation_id = s.conversation_id and m.role = 'user'
                     and (m.created_at, m.id) > (sent.created_at, sent.id)) as contact_wrote_since,
                 s.intervals -> s.steps_done as current_interval,
                 p.followup_limit,
                 (select count(*) from messages m where m.conversation_id = s.conversation_id and m.call_type = 'followup'
                    and m.status <> 'failed')::int as followups_sent
          from followup_sequences s
          join opportunities o on o.id = s.opportunity_id
          -- the followup and limit as the pipeline runs (docs/versions.md)
          join lateral parley_live_pipeline(o.pipeline_id, o.config_version_id) p on true
          left join lateral parley_live_followups(o.pipeline_id, o.config_version_id) f on f.id = s.followup_id
          left join lateral (${sentToContact(sql, sql`s.conversation_id`, sql`s.anchor_message_id`)}) sent on true
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

    const resumable = SqlSchema.findAll({
      Request: Schema.Undefined,
      Result: Schema.Struct({ stage_entry_id: Schema.Number, resume_deferred: Schema.String }),
      execute: () =>
        sql`
          select s.stage_entry_id, s.resume_deferred from followup_sequences s
          join lateral (${sentToContact(sql, sql`s.conversation_id`, sql`s.anchor_message_id`)}) sent on true
          where s.status = 'running' and s.resume_deferred is not null
            and not exists (select 1 from messages m where m.conversation_id = s.conversation_id and m.role = 'user'
                              and (m.created_at, m.id) > (sent.created_at, sent.id))
          limit 200`
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

      /** `step` is done; a followup it sent is the anchor the next step's wait counts from. */
      advanceSequence: (sequenceId: number, step: number, nextDueAt: string) =>
        sql`
          update followup_sequences s set steps_done = greatest(s.steps_done, ${step}), next_due_at = ${nextDueAt},
                 anchor_message_id = coalesce((select m.id from messages m where m.followup_sequence_id = s.id
                                                 and m.followup_step = ${step} limit 1), s.anchor_message_id),
                 updated_at = now()
          where s.id = ${sequenceId} and s.status = 'running'`.pipe(Effect.asVoid, Effect.orDie),

      /** The wait counts again from `anchor`, a message sent to the contact: the step is due at `nextDueAt`. */
      rearmSequence: (sequenceId: number, anchor: string, nextDueAt: string) =>
        sql`
          update followup_sequences set anchor_message_id = ${anchor}, next_due_at = ${nextDueAt}, updated_at = now()
          where id = ${sequenceId} and status = 'running'`.pipe(Effect.asVoid, Effect.orDie),

      /** While paused there is nothing due: the sweep resumes it through `deferred`, not by `next_due_at`. */
      pauseSequence: (sequenceId: number, deferred: string) =>
        sql`
          update followup_sequences set resume_deferred = ${deferred}, next_due_at = null, updated_at = now()
          where id = ${sequenceId} and status = 'running'`.pipe(Effect.asVoid, Effect.orDie),

      nextDueAt: (sequenceId: number) =>
        sql<{ next_due_at: Date | string | null }>`select next_due_at from followup_sequences where id = ${sequenceId}`
          .pipe(
            Effect.map((rows) => rows[0]?.next_due_at == null ? null : new Date(rows[0].next_due_at).getTime()),
            Effect.orDie
          ),

      resumable: resumable(undefined).pipe(Effect.orDie),

      resumed: (entryId: number) =>
        sql`
          update followup_sequences set resume_deferred = null, updated_at = now()
          where stage_entry_id = ${entryId}`.pipe(Effect.asVoid, Effect.orDie),

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
