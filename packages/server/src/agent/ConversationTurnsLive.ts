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
import { TurnsRepo } from "./TurnsRepo.js"

const toModel = (r: ModelRow): ModelRef => ({
  id: r.id,
  provider: r.provider,
  model: r.model,
  inputPricePerMillion: r.input_price,
  outputPricePerMillion: r.output_price
})

export const ConversationTurnsLive = Layer.effect(
  ConversationTurns,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const realtime = yield* Realtime
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

    /**
     * What the hand-over sweep re-sends: contact messages still unhandled `graceMs` after their debounce
     * window closed, and replies stored but still undelivered `graceMs` after they were stored (a crash
     * between a turn's commit and its delivery). Re-sending one that is in progress is harmless.
     */
    const orphaned = (graceMs: number) =>
      sql<{ conversation_id: string; message_id: string }>`
        select conversation_id::text as conversation_id, max(id) as message_id from (
          select m.conversation_id, m.id from messages m left join pipelines p on p.id = m.pipeline_id
          where m.role = 'user' and m.handled_at is null
            and m.created_at < now() - make_interval(secs => (coalesce(p.reply_debounce_ms, 0) + ${graceMs}) / 1000.0)
          union all
          select conversation_id, id from messages
          where status = 'ai_generated' and created_at < now() - make_interval(secs => ${graceMs / 1000})
        ) o
        group by conversation_id limit 500`.pipe(
        Effect.map((rows) => rows.map((r) => ({ conversationId: r.conversation_id, messageId: r.message_id }))),
        Effect.orDie
      )

    const conversation = repo.conversation

    /** The turn context from a snapshot (TurnsRepo), or none when there is no agent to answer. */
    /** `withKnowledge` false: no retrieval (a bridge message or a summary answers no question). */
    const contextFrom = (snap: TurnSnapshot, upTo: string | null, withKnowledge = true) =>
      Effect.gen(function*() {
        const pl = snap.pipeline
        if (pl === null) return Option.none<{ context: TurnContext; pipeline: PipelineConfig }>()
        const pool = pl.is_model_routing_enabled && pl.model_pool.length === 4 ? pl.model_pool : null
        const catalogue = new Map(pl.models.map((m) => [Number(m.id), toModel(m)]))
        const stages = pl.stages.map((s): TurnStage => ({
          id: Number(s.id),
          name: s.name,
          nature: s.nature,
          persona: s.ai_persona,
          instructions: s.instructions,
          enterCondition: s.enter_condition
        }))
        const memory = snap.history.map((m) => ({
          role: m.role,
          text: m.message !== null && m.message !== "" ? m.message : m.files.length > 0 ? "[Attachment]" : ""
        }))
        const lastAssistant = memory.map((m) => m.role).lastIndexOf("assistant")
        const asked = memory.slice(lastAssistant + 1).filter((m) => m.role === "user").map((m) => m.text).join("\n")
        const hits = !withKnowledge || pl.rag_mode === "none" || asked.trim() === ""
          ? []
          : yield* knowledge.retrieve(pl.id, asked, pl.rag_mode, pl.no_of_relevant_points)
        const context: TurnContext = {
          conversationId: String(snap.id),
          workspaceId: snap.workspace_id,
          pipelineId: pl.id,
          pipelineName: pl.name,
          opportunityId: snap.opportunity_pipeline_id === pl.id ? snap.opportunity_id : null,
          agentType: { name: pl.agent_type_name, description: pl.agent_type_description },
          persona: pl.persona,
          instructions: pl.instructions,
          language: pl.language,
          dialect: pl.dialect,
          temperature: pl.model_temperature,
          stage: stages.find((s) => s.id === snap.opportunity_stage_id) ?? null,
          stages,
          contact: { name: snap.contact_name, email: snap.contact_email, phone: snap.contact_phone, identifier: snap.contact_identifier },
          context: snap.opportunity_context ?? {},
          history: memory,
          knowledge: hits.map((h) => ({ pointId: h.id, source: h.table_name, text: h.text })),
          model: catalogue.get(Number(pl.ai_model_id))!,
          actions: pl.actions.map((a): TurnAction => {
            const used = new Set(templatedStrings(a).flatMap((t) => placeholders(t.text)))
            return {
              id: Number(a.id),
              name: a.name,
              trigger: a.fixed_trigger,
              description: a.description,
              instructions: a.instructions,
              aiVariables: pl.ai_variables.filter((v) => used.has(v.name)).map((v) => ({ name: v.name, instruction: v.value }))
            }
          }),
          routing: pool === null
            ? null
            : pool.map((t) => ({ tier: t.tier, model: catalogue.get(Number(t.ai_model_id))!, instructions: t.instructions ?? null })),
          operatorNote: snap.handoff_return_note,
          handoff: turnHandoff(snap, pl, upTo)
        }
        return Option.some({ context, pipeline: pl })
      })

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

    const markHandled = (conversationId: string, upTo: string, reason: string) =>
      sql`
        update messages set handled_at = now(), handled_reason = ${reason}
        where conversation_id = ${conversationId} and role = 'user' and handled_at is null
          and (created_at, id) <= (select created_at, id from messages where id = ${upTo})`.pipe(Effect.asVoid)

    const skip = (conversationId: string, upTo: string, reason: SkipReason) =>
      markHandled(conversationId, upTo, reason).pipe(Effect.orDie)

    const existingReply = (key: string) =>
      sql<{ id: string }>`select id from messages where in_reply_to = ${key}`.pipe(Effect.map((rows) => Option.fromNullable(rows[0]?.id)))

    /** Inserts an assistant message for the conversation (its current opportunity, stage and channel). */
    const insertReply = (
      c: ConversationRow,
      fields: {
        readonly inReplyTo: string
        readonly status: string
        readonly text: string | null
        readonly model: ModelRef | null
        readonly inputTokens: number
        readonly outputTokens: number
        readonly cost: number
        readonly error: string | null
        readonly callType: string
      }
    ) =>
      Effect.gen(function*() {
        const id = ulid()
        yield* sql`
          insert into messages (id, workspace_id, conversation_id, opportunity_id, contact_id, channel_id, stage_id, pipeline_id,
                                role, status, message, external_chat_id, call_type, is_manual, cost_for_user, ai_model_id, model,
                                input_tokens, output_tokens, in_reply_to, error)
          values (${id}, ${c.workspace_id}, ${c.id}, ${c.opportunity_id}, ${c.contact_id}, ${c.channel_id}, ${c.opportunity_stage_id},
                  ${c.opportunity_pipeline_id ?? c.channel_pipeline_id}, 'assistant', ${fields.status}, ${fields.text},
                  ${c.external_chat_id}, ${fields.callType}, false, ${fields.cost}, ${fields.model?.id ?? null},
                  ${fields.model?.model ?? null}, ${fields.inputTokens}, ${fields.outputTokens}, ${fields.inReplyTo}, ${fields.error})`
        if (fields.cost > 0) {
          // atomic: concurrent turns of one workspace each subtract their own cost
          yield* sql`update workspaces set credits = credits - ${fields.cost}, updated_at = now() where id = ${c.workspace_id}`
        }
        return id
      })

    /** A produced message, stored before it is delivered. */
    const generated = (inReplyTo: string, draft: ReplyDraft, callType: "ai" | "opening" | "followup") => ({
      inReplyTo,
      status: "ai_generated",
      text: draft.text,
      model: draft.model,
      inputTokens: draft.inputTokens,
      outputTokens: draft.outputTokens,
      cost: draft.cost,
      error: null,
      callType
    })

    const moveStage = (c: ConversationRow, stageId: number) =>
      Effect.gen(function*() {
        if (c.opportunity_id === null || c.opportunity_stage_id === stageId) return
        const rows = yield* sql<{ nature: string }>`
          select nature from stages where id = ${stageId} and pipeline_id = ${c.opportunity_pipeline_id}`
        const stage = rows[0]
        if (!stage) return
        yield* sql`
          update opportunities set stage_id = ${stageId},
            status = case ${stage.nature} when 'won' then 'won' when 'lost' then 'lost' else status end, updated_at = now()
          where id = ${c.opportunity_id}`
        yield* sql`
          insert into stage_entries (workspace_id, opportunity_id, pipeline_id, stage_id, previous_stage_id, cause)
          values (${c.workspace_id}, ${c.opportunity_id}, ${c.opportunity_pipeline_id}, ${stageId}, ${c.opportunity_stage_id}, 'moved')`
      })

    /** The reply's own columns for TurnsRepo.storeReply. */
    const replyColumns = (conversationId: string, upTo: string, draft: ReplyDraft) => ({
      id: ulid(),
      conversationId,
      inReplyTo: upTo,
      upTo,
      reason: "replied",
      status: "ai_generated",
      text: draft.text,
      modelId: draft.model?.id ?? null,
      model: draft.model?.model ?? null,
      inputTokens: draft.inputTokens,
      outputTokens: draft.outputTokens,
      cost: draft.cost,
      error: null,
      callType: "ai"
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
          Effect.map((r) => (r.stored_id ?? r.existing_id)!),
          Effect.orDie,
          Effect.withSpan("ConversationTurns.commit")
        )
    }

    const fail = (conversationId: string, upTo: string, reason: FailReason, error: string, model: ModelRef | null) =>
      sql.withTransaction(Effect.gen(function*() {
        const earlier = yield* existingReply(upTo)
        const found = yield* conversation(conversationId)
        if (Option.isNone(earlier)) {
          const c = Option.getOrThrow(found)
          yield* insertReply(c, {
            inReplyTo: upTo,
            status: "failed",
            text: null,
            model,
            inputTokens: 0,
            outputTokens: 0,
            cost: 0,
            error: error.slice(0, 2000),
            callType: "ai"
          })
        }
        yield* markHandled(conversationId, upTo, reason)
        yield* failureRule(conversationId)
        return Option.map(found, (c) => c.workspace_id)
      })).pipe(
        Effect.orDie,
        Effect.flatMap(Option.match({
          onNone: () => Effect.void,
          onSome: (workspaceId) => realtime.typing(Number(conversationId), workspaceId, false)
        }))
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

    const commitOpening = (conversationId: string, entryId: number, draft: ReplyDraft) =>
      sql.withTransaction(Effect.gen(function*() {
        const key = `stage-entry:${entryId}`
        const earlier = yield* existingReply(key)
        if (Option.isSome(earlier)) return earlier.value
        const c = Option.getOrThrow(yield* conversation(conversationId))
        return yield* insertReply(c, generated(key, draft, "opening"))
      })).pipe(Effect.orDie)

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
      sql.withTransaction(Effect.gen(function*() {
        const key = followupKey(sequenceId, step)
        const earlier = yield* existingReply(key)
        if (Option.isSome(earlier)) return earlier.value
        const c = Option.getOrThrow(yield* conversation(conversationId))
        const id = yield* insertReply(c, generated(key, draft, "followup"))
        yield* sql`update messages set followup_sequence_id = ${sequenceId}, followup_step = ${step} where id = ${id}`
        return id
      })).pipe(Effect.orDie)

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
).pipe(Layer.provide([ModelKeys.Default, TurnsRepo.Default]))
