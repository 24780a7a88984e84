/**
 * The lifecycle of followup sequences (the `FollowupSequences` port): started once per stage entry of a
 * stage whose followup is active, advanced step by step by the FollowupSequence workflow, ended early
 * when the contact writes or the opportunity leaves the stage, and finished with the move to
 * `after_followup_stage_id`, written as a stage entry exactly as a REST move writes it (so that stage's
 * automations run). Times come from the application's `Clock`, the one durable waits use.
 */
import { SqlClient } from "@effect/sql"
import {
  type FollowupEnd,
  type FollowupInterval,
  FollowupPlan,
  FollowupSequences,
  intervalMillis,
  type OpportunityId,
  type PipelineId,
  type StageId,
  type WorkspaceId
} from "@parley/domain"
import { Clock, Effect, Layer, Option } from "effect"
import { OpportunitiesRepo } from "../opportunities/OpportunitiesRepo.js"
import { blocker, FollowupsRepo } from "./FollowupsRepo.js"

const at = (ms: number) => new Date(ms).toISOString()

export const FollowupSequencesLive = Layer.effect(
  FollowupSequences,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* FollowupsRepo
    const opportunities = yield* OpportunitiesRepo

    const starts = (entryId: number) =>
      sql`
        select 1 from stage_entries e join opportunities o on o.id = e.opportunity_id
        join lateral parley_live_followups(e.pipeline_id, o.config_version_id) f on f.stage_id = e.stage_id
        where e.id = ${entryId} and f.is_active`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    const toPlan = (row: { id: number; conversation_id: number | null; intervals: ReadonlyArray<FollowupInterval> }) =>
      new FollowupPlan({
        sequenceId: Number(row.id),
        conversationId: row.conversation_id === null ? null : String(row.conversation_id),
        delaysMs: row.intervals.map(intervalMillis)
      })

    const plan = (entryId: number) =>
      sql.withTransaction(Effect.gen(function*() {
        type Row = { id: number; conversation_id: number | null; intervals: ReadonlyArray<FollowupInterval> }
        const existing = yield* sql<Row>`select id, conversation_id, intervals from followup_sequences where stage_entry_id = ${entryId}`
        if (existing[0]) return Option.some(toPlan(existing[0]))
        const rows = yield* sql<{
          workspace_id: number
          opportunity_id: number
          stage_id: number
          followup_id: number
          intervals: ReadonlyArray<FollowupInterval>
          conversation_id: number | null
        }>`
          select e.workspace_id, e.opportunity_id, e.stage_id, (select t.id from followups t where t.id = f.id) as followup_id, f.intervals,
                 (select co.conversation_id from conversation_opportunity co where co.opportunity_id = e.opportunity_id
                  order by co.created_at desc limit 1) as conversation_id
          from stage_entries e
          join opportunities o on o.id = e.opportunity_id and o.stage_id = e.stage_id
          join lateral parley_live_followups(e.pipeline_id, o.config_version_id) f on f.stage_id = e.stage_id and f.is_active
          where e.id = ${entryId}
            and not exists (select 1 from stage_entries later where later.opportunity_id = e.opportunity_id and later.id > e.id)`
        const e = rows[0]
        if (!e || e.intervals.length === 0) return Option.none<FollowupPlan>()
        // a contact message after the newest message of now ends the sequence (message order, not wall time)
        const anchor = e.conversation_id === null ? [] : yield* sql<{ id: string }>`
          select id from messages where conversation_id = ${e.conversation_id} order by created_at desc, id desc limit 1`
        const now = yield* Clock.currentTimeMillis
        const inserted = yield* sql<Row>`
          insert into followup_sequences (workspace_id, stage_entry_id, followup_id, opportunity_id, stage_id, conversation_id,
                                          intervals, anchor_message_id, next_due_at)
          values (${e.workspace_id}, ${entryId}, ${e.followup_id}, ${e.opportunity_id}, ${e.stage_id}, ${e.conversation_id},
                  ${JSON.stringify(e.intervals)}::jsonb, ${anchor[0]?.id ?? null}, ${at(now + intervalMillis(e.intervals[0]!))})
          returning id, conversation_id, intervals`
        return Option.some(toPlan(inserted[0]!))
      })).pipe(Effect.orDie, Effect.withSpan("FollowupSequences.plan", { attributes: { entryId } }))

    const check = (sequenceId: number) =>
      Effect.map(repo.sequenceState(sequenceId), Option.match({ onNone: () => "ended" as const, onSome: (s) => blocker(s) ?? "skipped" }))

    const advance = (sequenceId: number, step: number, nextDelayMs: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        sql`
          update followup_sequences set steps_done = greatest(steps_done, ${step}), next_due_at = ${at(now + nextDelayMs)}, updated_at = now()
          where id = ${sequenceId} and status = 'running'`).pipe(Effect.asVoid, Effect.orDie)

    const end = (sequenceId: number, status: "completed" | "cancelled", reason: string) =>
      sql`
        update followup_sequences set status = ${status}, end_reason = ${reason}, next_due_at = null, updated_at = now()
        where id = ${sequenceId} and status = 'running'`.pipe(Effect.asVoid)

    const cancel = (sequenceId: number, reason: string) => end(sequenceId, "cancelled", reason).pipe(Effect.orDie)

    const finish = (sequenceId: number) =>
      sql.withTransaction(Effect.gen(function*() {
        // the opportunity row first: a reply moving it at the same moment waits, then this sees its move
        yield* sql`select o.id from opportunities o join followup_sequences s on s.opportunity_id = o.id where s.id = ${sequenceId} for update of o`
        const found = yield* repo.sequenceState(sequenceId)
        if (Option.isNone(found)) return "ended" as FollowupEnd
        const s = found.value
        const stop = blocker(s)
        if (stop !== null) {
          yield* end(sequenceId, "cancelled", stop)
          return stop as FollowupEnd
        }
        const target = s.after_followup_stage_id
        const stage = target === null ? [] : yield* sql<{ nature: string }>`
          select nature from stages where id = ${target} and pipeline_id = ${s.pipeline_id}`
        if (target === null || !stage[0] || target === s.current_stage_id) {
          yield* end(sequenceId, "completed", "completed")
          return "completed" as FollowupEnd
        }
        // the move as a REST move writes it: the opportunity (a won or lost stage sets its status) and a stage entry
        const nature = stage[0].nature
        yield* opportunities.updateOpportunity(s.opportunity_id as OpportunityId, {
          stage_id: target as StageId,
          ...(nature === "won" || nature === "lost" ? { status: nature } : {})
        })
        yield* opportunities.recordStageEntry({
          workspace_id: s.workspace_id as WorkspaceId,
          opportunity_id: s.opportunity_id as OpportunityId,
          pipeline_id: s.pipeline_id as PipelineId,
          stage_id: target as StageId,
          previous_stage_id: s.current_stage_id as StageId,
          cause: "moved"
        })
        yield* end(sequenceId, "completed", "moved")
        return "moved" as FollowupEnd
      })).pipe(Effect.orDie, Effect.withSpan("FollowupSequences.finish", { attributes: { sequenceId } }))

    const overdue = (graceMs: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        sql<{ stage_entry_id: number }>`
          select stage_entry_id from followup_sequences
          where status = 'running' and next_due_at < ${at(now - graceMs)}
          order by next_due_at limit 200`).pipe(
        Effect.map((rows) => rows.map((r) => Number(r.stage_entry_id))),
        Effect.orDie
      )

    return FollowupSequences.of({ starts, plan, check, advance, cancel, finish, overdue })
  })
).pipe(Layer.provide(OpportunitiesRepo.Default))
