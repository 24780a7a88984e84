/**
 * The conversation entity's reads and writes over the application tables (the `ConversationTurns`
 * port). Each write is one transaction and idempotent: the reply is unique per contact message it
 * answers (`in_reply_to`), an opening message per stage entry.
 */
import { SqlClient } from "@effect/sql"
import {
  type ConversationId,
  ConversationTurns,
  handoffKeywordIn,
  type FailReason,
  type FollowupDue,
  type ModelRef,
  type OpeningContext,
  type OpportunityId,
  type PipelineId,
  type StageId,
  type WorkspaceId,
  type PendingWork,
  type Prepared,
  type ReplyDraft,
  type SkipReason,
  placeholders,
  templatedStrings,
  type TurnAction,
  type TurnContext,
  type TurnStage,
  ulid
} from "@parley/domain"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Metric, Option, Stream } from "effect"
import { enqueueStageStarted, enqueueToolCalls } from "../actions/ActionRunsLive.js"
import { blocker, FollowupsRepo } from "../followups/FollowupsRepo.js"
import { Knowledge } from "../knowledge/Knowledge.js"
import { ModelKeys } from "./ModelKeys.js"
import { Realtime } from "../realtime/Realtime.js"
import { repliesMade } from "@parley/worker"
import { Handoff } from "../handoff/Handoff.js"
import { makeTurnDelivery } from "./TurnDelivery.js"
import { makeTurnHandoffRules } from "./TurnHandoffRules.js"
import { type ConversationRow, type ModelRow, type PipelineConfig, type TurnSnapshot } from "./TurnRows.js"
import { makeContextFrom } from "./TurnContextFrom.js"
import { TurnsRepo } from "./TurnsRepo.js"
import { OpportunitiesRepo } from "../opportunities/OpportunitiesRepo.js"

export const ConversationTurnsLive = Layer.effect(
  ConversationTurns,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const realtime = yield* Realtime
    const opportunities = yield* OpportunitiesRepo
    const repo = yield* TurnsRepo
    const knowledge = yield* Knowledge
    const followupsRepo = yield* FollowupsRepo
    const modelKeys = yield* ModelKeys
    const handoff = yield* Handoff
    const { turnHandoff, failureRule, turnTexts } = yield* makeTurnHandoffRules
    const { undelivered, deliver } = yield* makeTurnDelivery

    const pending = (conversationId: string) =>
      Effect.map(repo.pendingWork(conversationId), (row): PendingWork => ({
        turn: row.latest_id === null
          ? Option.none()
          : Option.some({ latestMessageId: row.latest_id, latestAt: new Date(row.latest_at!), debounceMs: row.debounce_ms ?? 0 }),
        undelivered: row.undelivered
      }))

    const orphaned = (graceMs: number) =>
      Effect.map(repo.orphaned(graceMs), (rows) => rows.map((r) => ({ conversationId: r.conversation_id, messageId: r.message_id })))

    const conversation = repo.conversation

    const contextFrom = makeContextFrom(knowledge, turnHandoff)

    /** The snapshot of a conversation and its turn context (none without an agent), for a turn up to `upTo`. */
    const snapshotContext = (conversationId: string, upTo: string | null, withKnowledge = true) =>
      Effect.flatMap(repo.snapshot(conversationId, upTo), (snap) =>
        Option.isNone(snap)
          ? Effect.succeed(Option.none<{ snap: TurnSnapshot; ready: Option.Option<{ context: TurnContext; pipeline: PipelineConfig }> }>())
          : Effect.map(contextFrom(snap.value, upTo, withKnowledge), (ready) => Option.some({ snap: snap.value, ready })))

    const prepare = (conversationId: string, upTo: string) =>
      Effect.gen(function*() {
        const skip = (reason: SkipReason, detail?: string): Prepared => ({ _tag: "Skip", reason, ...(detail === undefined ? {} : { detail }) })
        const found = yield* snapshotContext(conversationId, upTo)
        if (Option.isNone(found)) return skip("closed")
        const { ready, snap: c } = found.value
        if (Option.isNone(ready)) return skip("no_agent")
        const { context, pipeline: p } = ready.value
        if (p.status !== "active" || p.is_archived) return skip("no_agent")
        if (c.status === "paused" || c.opportunity_status === "paused" || c.handoff_state === "human") return skip("paused")
        if (c.handoff_state === "waiting") return skip("waiting_for_person")
        // this turn's own messages: those handled while waiting or handed back are never read again
        const keyword = p.handoff_keywords.length === 0 ? null : handoffKeywordIn(p.handoff_keywords, yield* turnTexts(conversationId, upTo))
        if (keyword !== null && context.handoff?.canRequest === true) {
          yield* handoff.moveAsSystem(Number(c.id) as ConversationId, { action: "request", actor: "rule", reason: `The contact wrote "${keyword}"` })
            .pipe(Effect.catchAll((e) => Effect.logWarning("The keyword rule could not ask for a person", e)))
          return skip("waiting_for_person", `keyword rule: "${keyword}"`)
        }
        // the rule Initiate refuses a conversation by (SPEC.md 4.4), applied to each reply
        if (!c.is_subscription_active) return skip("no_subscription")
        if (!(c.credits > 0)) return skip("no_credits")
        if (p.max_conversation_messages !== null && c.ai_replies >= p.max_conversation_messages) return skip("message_limit")
        if (p.max_conversation_cost !== null && c.cost >= p.max_conversation_cost) return skip("cost_limit")
        const unusable = [context.model, ...(context.routing ?? []).map((t) => t.model)].flatMap((m) => {
          const key = modelKeys.missingKey(m.provider)
          return key === null ? [] : [`the model ${m.model} needs ${key}, which is not set`]
        })
        if (unusable.length > 0) return skip("model_not_configured", [...new Set(unusable)].join("; "))
        // the visitor's chat shows that an answer is coming; the reply's new_message ends it
        yield* realtime.typing(Number(c.id), c.workspace_id, true)
        return { _tag: "Ready", context } satisfies Prepared
      }).pipe(Effect.withSpan("ConversationTurns.prepare"))

    const skip = (conversationId: string, upTo: string, reason: SkipReason) => repo.markHandled(conversationId, upTo, reason)

    const existingReply = repo.replyTo

    /** A produced message's columns for TurnsRepo.storeReply (stored before it is delivered). */
    const draftColumns = (conversationId: string, inReplyTo: string, draft: ReplyDraft, callType: "ai" | "opening" | "followup") => ({
      id: ulid(),
      conversationId,
      inReplyTo,
      upTo: null,
      reason: "replied",
      status: "ai_generated",
      text: draft.text,
      modelId: draft.model?.id ?? null,
      model: draft.model?.model ?? null,
      inputTokens: draft.inputTokens,
      outputTokens: draft.outputTokens,
      cost: draft.cost,
      error: null,
      callType,
      followupSequenceId: null,
      followupStep: null
    })

    /** The stage move the model asked for, through OpportunitiesRepo (a won or lost stage sets the status). */
    const moveStage = (c: ConversationRow, stageId: number) =>
      Effect.gen(function*() {
        if (c.opportunity_id === null || c.opportunity_pipeline_id === null || c.opportunity_stage_id === stageId) return
        const stage = yield* repo.stageNature(stageId, c.opportunity_pipeline_id)
        if (Option.isNone(stage)) return
        const nature = stage.value.nature
        const opportunityId = c.opportunity_id as OpportunityId
        yield* opportunities.updateOpportunity(opportunityId, { stage_id: stageId as StageId, ...(nature === "neutral" ? {} : { status: nature }) })
        yield* opportunities.recordStageEntry({
          workspace_id: c.workspace_id as WorkspaceId,
          opportunity_id: opportunityId,
          pipeline_id: c.opportunity_pipeline_id as PipelineId,
          stage_id: stageId as StageId,
          previous_stage_id: c.opportunity_stage_id as StageId | null,
          cause: "moved"
        })
      })

    /** A reply's columns: it answers the turn's newest contact message and marks the turn handled. */
    const replyColumns = (conversationId: string, upTo: string, draft: ReplyDraft) => ({
      ...draftColumns(conversationId, upTo, draft, "ai"),
      upTo
    })

    /** What a reply does beyond being stored: a stage move, a handoff, action calls, knowledge use. */
    const hasEffects = (draft: ReplyDraft) =>
      draft.moveToStageId !== null || (draft.handoffReason !== undefined && draft.handoffReason !== null) ||
      (draft.actionCalls !== undefined && draft.actionCalls.length > 0) || draft.knowledgePointIds.length > 0

    const applyEffects = (conversationId: string, upTo: string, draft: ReplyDraft) =>
      Effect.gen(function*() {
        const c = Option.getOrThrow(yield* conversation(conversationId))
        if (draft.moveToStageId !== null) yield* moveStage(c, draft.moveToStageId)
        if (draft.handoffReason !== undefined && draft.handoffReason !== null) {
          yield* handoff.moveAsSystem(c.id as ConversationId, { action: "request", actor: "ai", reason: draft.handoffReason }).pipe(
            Effect.catchTags({ HandoffConflict: Effect.logWarning, NotFound: Effect.logWarning, Unprocessable: Effect.logWarning })
          )
        }
        if (draft.actionCalls !== undefined && draft.actionCalls.length > 0) {
          yield* enqueueToolCalls(sql, {
            workspaceId: c.workspace_id,
            pipelineId: c.opportunity_pipeline_id ?? c.channel_pipeline_id,
            conversationId: c.id,
            opportunityId: c.opportunity_id,
            stageId: c.opportunity_stage_id,
            messageId: upTo
          }, draft.actionCalls)
        }
        yield* knowledge.recordUsage(draft.knowledgePointIds)
      })

    /**
     * A reply alone is one statement (stored, charged, the turn marked handled); one with effects runs
     * them in the same transaction, only when this run stored it (a repeat after a crash applies nothing twice).
     */
    const commit = (conversationId: string, upTo: string, draft: ReplyDraft) => {
      const store = repo.storeReply(replyColumns(conversationId, upTo, draft))
      return (hasEffects(draft)
        ? sql.withTransaction(Effect.tap(store, (r) => r.stored_id === null ? Effect.void : applyEffects(conversationId, upTo, draft)))
        : store).pipe(
          // a turn repeated after a crash finds its reply stored: counted once, when it was stored
          Effect.tap((r) => r.stored_id === null ? Effect.void : Metric.increment(repliesMade)),
          Effect.map(storedId),
          Effect.orDie,
          Effect.withSpan("ConversationTurns.commit")
        )
    }

    /** The failed reply (`status: failed`, `error`) and the turn handled with the reason, then the failure rule. */
    const fail = (conversationId: string, upTo: string, reason: FailReason, error: string, model: ModelRef | null) =>
      sql.withTransaction(Effect.gen(function*() {
        const stored = yield* repo.storeReply({
          ...draftColumns(conversationId, upTo, { text: "", model, inputTokens: 0, outputTokens: 0, cost: 0, tier: null, moveToStageId: null, knowledgePointIds: [] }, "ai"),
          upTo,
          reason,
          status: "failed",
          text: null,
          error: error.slice(0, 2000)
        })
        yield* failureRule(conversationId)
        return stored.workspace_id
      })).pipe(
        Effect.orDie,
        Effect.flatMap((workspaceId) => workspaceId === null ? Effect.void : realtime.typing(Number(conversationId), workspaceId, false))
      )

    const opening = (entryId: number) =>
      Effect.gen(function*() {
        const rows = yield* sql<{
          stage_id: number
          cause: string
          is_opening_message: boolean
          opening_message_type: "static" | "ai_generated" | null
          static_opening_message: string | null
          current_stage_id: number
          conversation_id: number | null
        }>`
          select e.stage_id, e.cause, s.is_opening_message, s.opening_message_type, s.static_opening_message,
                 o.stage_id as current_stage_id,
                 (select co.conversation_id from conversation_opportunity co where co.opportunity_id = e.opportunity_id
                  order by co.created_at desc limit 1) as conversation_id
          from stage_entries e join stages s on s.id = e.stage_id join opportunities o on o.id = e.opportunity_id
          where e.id = ${entryId}`
        const e = rows[0]
        if (!e || !e.is_opening_message || e.opening_message_type === null || e.conversation_id === null) return Option.none<OpeningContext>()
        // the opportunity has moved on since: that stage's opening is out of date
        if (e.current_stage_id !== e.stage_id) return Option.none()
        // a contact whose own message made the entry gets the agent's reply, not a greeting on top of it;
        // a create over the API greets even a contact who wrote before (SPEC.md 3.1, 4.1 rule 3)
        if (e.cause === "inbound") {
          const wrote = yield* sql`select 1 from messages where conversation_id = ${e.conversation_id} and role = 'user' limit 1`
          if (wrote.length > 0) return Option.none()
        }
        const found = yield* snapshotContext(String(e.conversation_id), null)
        if (Option.isNone(found)) return Option.none()
        const ready = found.value.ready
        if (Option.isNone(ready)) return Option.none()
        return Option.some<OpeningContext>({
          entryId,
          kind: e.opening_message_type,
          staticText: e.static_opening_message,
          context: ready.value.context
        })
      }).pipe(Effect.orDie)

    /** The stored message's id: this run's, or the one an earlier run stored. */
    const storedId = (r: { readonly stored_id: string | null; readonly existing_id: string | null }) => (r.stored_id ?? r.existing_id)!

    const commitOpening = (conversationId: string, entryId: number, draft: ReplyDraft) =>
      repo.storeReply(draftColumns(conversationId, `stage-entry:${entryId}`, draft, "opening")).pipe(Effect.map(storedId))

    /** One key per sequence step: a step repeated after a crash finds its followup stored. */
    const followupKey = (sequenceId: number, step: number) => `followup:${sequenceId}:${step}`

    const followup = (sequenceId: number, step: number) =>
      Effect.gen(function*() {
        const skip = (outcome: Extract<FollowupDue, { _tag: "Skip" }>["outcome"]): FollowupDue => ({ _tag: "Skip", outcome })
        // stored by an earlier run of this step (and delivered with the entity's leftovers)
        if (Option.isSome(yield* existingReply(followupKey(sequenceId, step)))) return skip("sent")
        const found = yield* followupsRepo.sequenceState(sequenceId)
        if (Option.isNone(found)) return skip("ended")
        const s = found.value
        const stop = blocker(s)
        if (stop !== null) return skip(stop)
        if (s.followups_sent >= s.followup_limit) return skip("limit_reached")
        if (s.conversation_id === null) return skip("skipped")
        const current = yield* snapshotContext(String(s.conversation_id), null)
        if (Option.isNone(current)) return skip("skipped")
        const c = current.value.snap
        // a person was asked for, or has it: the stage's followups stay silent (docs/handoff.md)
        if (c.status === "paused" || c.opportunity_status === "paused" || c.handoff_state !== "ai" || !c.is_subscription_active || !(c.credits > 0)) {
          return skip("skipped")
        }
        const ready = current.value.ready
        if (Option.isNone(ready)) return skip("skipped")
        const p = ready.value.pipeline
        if (p.status !== "active" || p.is_archived) return skip("skipped")
        return {
          _tag: "Send",
          followup: { sequenceId, step, steps: s.steps, instructions: s.instructions, assets: s.assets, context: ready.value.context }
        } satisfies FollowupDue
      }).pipe(Effect.orDie, Effect.withSpan("ConversationTurns.followup", { attributes: { sequenceId, step } }))

    const commitFollowup = (conversationId: string, sequenceId: number, step: number, draft: ReplyDraft) =>
      repo.storeReply({
        ...draftColumns(conversationId, followupKey(sequenceId, step), draft, "followup"),
        followupSequenceId: sequenceId,
        followupStep: step
      }).pipe(Effect.map(storedId))

    const stageEntries = (limit: number) =>
      sql<{ entry_id: number; conversation_id: string | null }>`
        select e.id as entry_id,
               (select co.conversation_id::text from conversation_opportunity co where co.opportunity_id = e.opportunity_id
                order by co.created_at desc limit 1) as conversation_id
        from stage_entries e where e.consumed_at is null order by e.id limit ${limit}`.pipe(
        Effect.map((rows) => rows.map((r) => ({ entryId: Number(r.entry_id), conversationId: r.conversation_id }))),
        Effect.orDie
      )

    const consumeStageEntry = (entryId: number) =>
      sql.withTransaction(Effect.gen(function*() {
        const consumed = yield* sql`update stage_entries set consumed_at = now() where id = ${entryId} and consumed_at is null returning id`
        // stage_started actions fire with the entry's consumption, exactly once
        if (consumed.length > 0) yield* enqueueStageStarted(sql, entryId)
        // a won or lost stage resolves the opportunity's conversations: the agent has them again
        const resolved = consumed.length === 0 ? [] : yield* sql<{ id: ConversationId }>`
          select c.id from stage_entries e
          join stages s on s.id = e.stage_id and s.nature in ('won', 'lost')
          join conversation_opportunity co on co.opportunity_id = e.opportunity_id
          join conversations c on c.id = co.conversation_id and c.handoff_state <> 'ai'
          where e.id = ${entryId}`
        for (const c of resolved) {
          yield* handoff.moveAsSystem(c.id, { action: "resolve" }).pipe(Effect.catchTag("HandoffConflict", () => Effect.void))
        }
      })).pipe(Effect.orDie)

    const stageEntriesWritten = pg.listen("parley_stage_entries").pipe(
      Stream.as(undefined as void),
      Stream.catchAllCause((cause) => Stream.fromEffect(Effect.logWarning("stage-entry notifications stopped; polling only", cause)).pipe(Stream.drain))
    )

    const currentContext = (conversationId: string) =>
      Effect.map(snapshotContext(conversationId, null, false), (found) =>
        Option.flatMap(found, ({ ready }) => Option.map(ready, (r) => r.context)))

    return ConversationTurns.of({
      stageEntriesWritten,
      context: currentContext,
      pending,
      orphaned,
      prepare,
      skip,
      commit,
      fail,
      undelivered,
      deliver,
      opening,
      commitOpening,
      followup,
      commitFollowup,
      stageEntries,
      consumeStageEntry
    })
  })
).pipe(Layer.provide([ModelKeys.Default, TurnsRepo.Default, OpportunitiesRepo.Default]))
