/**
 * The lifecycle of followup sequences (the `FollowupSequences` port): started once per stage entry of a
 * stage whose followup is active, advanced step by step by the FollowupSequence workflow, ended early
 * when the contact writes or the opportunity leaves the stage, and finished with the move to
 * `after_followup_stage_id`, written as a stage entry exactly as a REST move writes it (so that stage's
 * automations run). Times come from the application's `Clock`, the one durable waits use.
 */
import { SqlClient } from "@effect/sql"
import { type FollowupEnd, FollowupPlan, FollowupSequences, intervalMillis } from "@parley/domain"
import { Clock, Effect, Layer, Option } from "effect"
import { OpportunitiesRepo } from "../opportunities/OpportunitiesRepo.js"
import { blocker, type SequencePlan, SequencesRepo } from "./SequencesRepo.js"

const at = (ms: number) => new Date(ms).toISOString()

const toPlan = (row: SequencePlan) =>
  new FollowupPlan({
    sequenceId: row.id,
    conversationId: row.conversation_id === null ? null : String(row.conversation_id),
    delaysMs: row.intervals.map(intervalMillis)
  })

export const FollowupSequencesLive = Layer.effect(
  FollowupSequences,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* SequencesRepo
    const opportunities = yield* OpportunitiesRepo

    const starts = (entryId: number) => repo.startsSequence(entryId)

    const plan = (entryId: number) =>
      sql.withTransaction(Effect.gen(function*() {
        const existing = yield* repo.sequenceOfEntry(entryId)
        if (Option.isSome(existing)) return Option.some(toPlan(existing.value))
        const source = yield* repo.sequenceSource(entryId)
        if (Option.isNone(source) || source.value.intervals.length === 0) return Option.none<FollowupPlan>()
        const e = source.value
        // a contact message after the newest message of now ends the sequence (message order, not wall time)
        const anchor = e.conversation_id === null
          ? Option.none<string>()
          : yield* repo.newestMessageId(e.conversation_id)
        const now = yield* Clock.currentTimeMillis
        const inserted = yield* repo.insertSequence({
          ...e,
          stage_entry_id: entryId,
          anchor_message_id: Option.getOrNull(anchor),
          next_due_at: at(now + intervalMillis(e.intervals[0]!))
        })
        return Option.some(toPlan(inserted))
      })).pipe(Effect.orDie, Effect.withSpan("FollowupSequences.plan", { attributes: { entryId } }))

    const check = (sequenceId: number) =>
      Effect.map(
        repo.sequenceState(sequenceId),
        Option.match({ onNone: () => "ended" as const, onSome: (s) => blocker(s) ?? "skipped" })
      )

    const advance = (sequenceId: number, step: number, nextDelayMs: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => repo.advanceSequence(sequenceId, step, at(now + nextDelayMs)))

    const cancel = (sequenceId: number, reason: string) => repo.endSequence(sequenceId, "cancelled", reason)

    const remaining = (sequenceId: number) =>
      Effect.zipWith(
        repo.nextDueAt(sequenceId),
        Clock.currentTimeMillis,
        (due, now) => due === null ? 0 : Math.max(0, due - now)
      )

    const pause = (sequenceId: number, deferred: string) => repo.pauseSequence(sequenceId, deferred)

    const resumable = Effect.map(
      repo.resumable,
      (rows) => rows.map((r) => ({ entryId: r.stage_entry_id, deferred: r.resume_deferred }))
    )

    const finish = (sequenceId: number) =>
      sql.withTransaction(Effect.gen(function*() {
        // the opportunity row first: a reply moving it at the same moment waits, then this sees its move
        yield* repo.lockOpportunityOf(sequenceId)
        const found = yield* repo.sequenceState(sequenceId)
        if (Option.isNone(found)) return "ended" as FollowupEnd
        const s = found.value
        const stop = blocker(s)
        if (stop !== null) {
          yield* repo.endSequence(sequenceId, "cancelled", stop)
          return stop as FollowupEnd
        }
        const target = s.after_followup_stage_id
        const nature = target === null ? Option.none<string>() : yield* repo.stageNature(target, s.pipeline_id)
        if (target === null || Option.isNone(nature) || target === s.current_stage_id) {
          yield* repo.endSequence(sequenceId, "completed", "completed")
          return "completed" as FollowupEnd
        }
        // the move as a REST move writes it: the opportunity (a won or lost stage sets its status) and a stage entry
        yield* opportunities.updateOpportunity(s.opportunity_id, {
          stage_id: target,
          ...(nature.value === "won" || nature.value === "lost" ? { status: nature.value } : {})
        })
        yield* opportunities.recordStageEntry({
          workspace_id: s.workspace_id,
          opportunity_id: s.opportunity_id,
          pipeline_id: s.pipeline_id,
          stage_id: target,
          previous_stage_id: s.current_stage_id,
          cause: "moved"
        })
        yield* repo.endSequence(sequenceId, "completed", "moved")
        return "moved" as FollowupEnd
      })).pipe(Effect.orDie, Effect.withSpan("FollowupSequences.finish", { attributes: { sequenceId } }))

    const overdue = (graceMs: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => repo.overdueEntries(at(now - graceMs)))

    return FollowupSequences.of({
      starts,
      plan,
      check,
      advance,
      remaining,
      pause,
      resumable,
      resumed: repo.resumed,
      cancel,
      finish,
      overdue
    })
  })
).pipe(Layer.provide(OpportunitiesRepo.Default))
