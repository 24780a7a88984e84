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
import { TurnsRepo } from "./TurnsRepo.js"

interface ConversationRow {
  readonly id: number
  readonly workspace_id: number
  readonly contact_id: number
  readonly channel_id: number | null
  readonly external_chat_id: string | null
  readonly status: string
  readonly cost: number
  readonly ai_replies: number
  readonly credits: number
  readonly is_subscription_active: boolean
  readonly channel_pipeline_id: number | null
  readonly opportunity_id: number | null
  readonly opportunity_status: string | null
  readonly opportunity_stage_id: number | null
  readonly opportunity_pipeline_id: number | null
  readonly opportunity_context: Record<string, unknown> | null
  readonly contact_name: string | null
  readonly contact_email: string | null
  readonly contact_phone: string | null
  readonly contact_identifier: string | null
  readonly handoff_state: "ai" | "waiting" | "human"
  readonly handoff_return_note: string | null
  readonly handoff_returned_upto: string | null
  readonly stage_handoff_instructions: string | null
}

interface PipelineRow {
  readonly id: number
  readonly name: string
  readonly status: string
  readonly is_archived: boolean
  readonly persona: string | null
  readonly instructions: string | null
  readonly model_temperature: number
  readonly agent_memory_window: number
  readonly rag_mode: "none" | "vector" | "hybrid"
  readonly no_of_relevant_points: number
  readonly max_conversation_cost: number | null
  readonly max_conversation_messages: number | null
  readonly ai_model_id: number
  readonly is_model_routing_enabled: boolean
  readonly model_pool: ReadonlyArray<{ tier: "router" | "simple" | "moderate" | "complex"; ai_model_id: number; instructions?: string | null }>
  readonly agent_type_name: string
  readonly agent_type_description: string | null
  readonly language: string
  readonly dialect: string | null
  readonly handoff_instructions: string | null
  readonly handoff_bridge_mode: "static" | "ai_generated"
  readonly handoff_bridge_text: string | null
  readonly handoff_keywords: ReadonlyArray<string>
  readonly handoff_after_failures: number | null
}

interface ModelRow {
  readonly id: number
  readonly provider: string
  readonly model: string
  readonly input_price: number
  readonly output_price: number
}

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

    const conversation = (conversationId: string) =>
      sql<ConversationRow>`
        select c.id, c.workspace_id, c.contact_id, c.channel_id, c.external_chat_id, c.status, c.cost_for_user::float8 as cost,
               (select count(*) from messages m where m.conversation_id = c.id and m.role = 'assistant' and not m.is_manual
                  and m.status <> 'failed' and m.call_type = 'ai')::int as ai_replies,
               w.credits::float8 as credits, w.is_subscription_active, ch.pipeline_id as channel_pipeline_id,
               o.id as opportunity_id, o.status as opportunity_status, o.stage_id as opportunity_stage_id,
               o.pipeline_id as opportunity_pipeline_id, o.context as opportunity_context,
               coalesce(ct.custom_name, ct.name) as contact_name, coalesce(ct.custom_email, ct.email) as contact_email,
               coalesce(ct.custom_phone, ct.phone) as contact_phone, ct.identifier as contact_identifier,
               c.handoff_state, c.handoff_return_note, c.handoff_returned_upto,
               (select s.handoff_instructions from stages s where s.id = o.stage_id) as stage_handoff_instructions
        from conversations c
        join workspaces w on w.id = c.workspace_id
        join contacts ct on ct.id = c.contact_id
        left join channels ch on ch.id = c.channel_id
        left join lateral (
          select o.id, o.status, o.stage_id, o.pipeline_id, o.context from conversation_opportunity co
          join opportunities o on o.id = co.opportunity_id
          where co.conversation_id = c.id order by o.created_at desc, o.id desc limit 1
        ) o on true
        where c.id = ${conversationId}`.pipe(Effect.map((rows) => Option.fromNullable(rows[0])), Effect.orDie)

    const pipeline = (id: number) =>
      sql<PipelineRow>`
        select p.id, p.name, p.status, p.is_archived, p.persona, p.instructions, p.model_temperature::float8 as model_temperature,
               p.agent_memory_window, p.rag_mode, p.no_of_relevant_points, p.max_conversation_cost::float8 as max_conversation_cost, p.max_conversation_messages,
               p.ai_model_id, p.is_model_routing_enabled, p.model_pool,
               at.name as agent_type_name, at.description as agent_type_description, l.name as language, d.name as dialect,
               p.handoff_instructions, p.handoff_bridge_mode, p.handoff_bridge_text, p.handoff_keywords, p.handoff_after_failures
        from pipelines p
        join agent_types at on at.id = p.agent_type_id
        join languages l on l.id = p.language_id
        left join dialects d on d.id = p.dialect_id
        where p.id = ${id}`.pipe(Effect.map((rows) => Option.fromNullable(rows[0])), Effect.orDie)

    const models = (ids: ReadonlyArray<number>) =>
      sql<ModelRow>`
        select m.id, pr.slug as provider, m.model, m.input_price_per_million::float8 as input_price,
               m.output_price_per_million::float8 as output_price
        from ai_models m join ai_providers pr on pr.id = m.ai_provider_id where m.id in ${sql.in(ids)}`.pipe(
        Effect.map((rows) => new Map(rows.map((r) => [Number(r.id), toModel(r)]))),
        Effect.orDie
      )

    const stages = (pipelineId: number) =>
      sql<{ id: number; name: string; nature: TurnStage["nature"]; ai_persona: string | null; instructions: string | null; enter_condition: string | null }>`
        select id, name, nature, ai_persona, instructions, enter_condition from stages where pipeline_id = ${pipelineId}
        order by sort_order, id`.pipe(
        Effect.map((rows) =>
          rows.map((s): TurnStage => ({
            id: Number(s.id),
            name: s.name,
            nature: s.nature,
            persona: s.ai_persona,
            instructions: s.instructions,
            enterCondition: s.enter_condition
          }))
        ),
        Effect.orDie
      )

    /** The memory window: the last `window` messages, up to `upTo` when given, oldest first. */
    const history = (conversationId: string, upTo: string | null, window: number) =>
      sql<{ role: "user" | "assistant"; message: string | null; files: ReadonlyArray<unknown> }>`
        select role, message, files from messages
        where conversation_id = ${conversationId} and status <> 'failed'
          ${upTo === null ? sql`` : sql`and (created_at, id) <= (select created_at, id from messages where id = ${upTo})`}
        order by created_at desc, id desc limit ${window}`.pipe(
        Effect.map((rows) =>
          [...rows].reverse().map((m) => ({
            role: m.role,
            text: m.message !== null && m.message !== "" ? m.message : m.files.length > 0 ? "[Attachment]" : ""
          }))
        ),
        Effect.orDie
      )

    /** The actions the model may call in this turn, with the `from_ai` variables each uses. */
    const turnActions = (pipelineId: number, stageId: number | null) =>
      Effect.gen(function*() {
        const actions = yield* sql<{
          id: number
          name: string
          fixed_trigger: "on_user_message" | "custom"
          description: string | null
          instructions: string | null
          url: string
          headers: Record<string, string>
          payload: unknown
        }>`
          select id, name, fixed_trigger, description, instructions, url, headers, payload from actions
          where pipeline_id = ${pipelineId} and is_active and fixed_trigger in ('on_user_message', 'custom')
            and (stage_id is null or stage_id = ${stageId})
          order by sort_order, id`
        if (actions.length === 0) return []
        const aiVariables = yield* sql<{ name: string; value: string }>`
          select name, value from variables where pipeline_id = ${pipelineId} and type = 'from_ai'`
        return actions.map((a): TurnAction => {
          const used = new Set(templatedStrings(a).flatMap((s) => placeholders(s.text)))
          return {
            id: Number(a.id),
            name: a.name,
            trigger: a.fixed_trigger,
            description: a.description,
            instructions: a.instructions,
            aiVariables: aiVariables.filter((v) => used.has(v.name)).map((v) => ({ name: v.name, instruction: v.value }))
          }
        })
      }).pipe(Effect.orDie)

    /** The turn context, or why there is no agent to answer. */
    /** `withKnowledge` false: no retrieval (a bridge message or a summary answers no question). */
    const contextFor = (c: ConversationRow, upTo: string | null, withKnowledge = true) =>
      Effect.gen(function*() {
        const pipelineId = c.opportunity_pipeline_id ?? c.channel_pipeline_id
        if (pipelineId === null) return Option.none<{ context: TurnContext; pipeline: PipelineRow }>()
        const p = yield* pipeline(pipelineId)
        if (Option.isNone(p)) return Option.none()
        const pl = p.value
        const pool = pl.is_model_routing_enabled && pl.model_pool.length === 4 ? pl.model_pool : null
        const catalogue = yield* models([pl.ai_model_id, ...(pool ?? []).map((t) => t.ai_model_id)])
        const all = yield* stages(pl.id)
        const memory = yield* history(String(c.id), upTo, pl.agent_memory_window)
        const lastAssistant = memory.map((m) => m.role).lastIndexOf("assistant")
        const asked = memory.slice(lastAssistant + 1).filter((m) => m.role === "user").map((m) => m.text).join("\n")
        const hits = !withKnowledge || pl.rag_mode === "none" || asked.trim() === ""
          ? []
          : yield* knowledge.retrieve(pl.id, asked, pl.rag_mode, pl.no_of_relevant_points)
        const context: TurnContext = {
          conversationId: String(c.id),
          workspaceId: c.workspace_id,
          pipelineId: pl.id,
          pipelineName: pl.name,
          opportunityId: c.opportunity_pipeline_id === pl.id ? c.opportunity_id : null,
          agentType: { name: pl.agent_type_name, description: pl.agent_type_description },
          persona: pl.persona,
          instructions: pl.instructions,
          language: pl.language,
          dialect: pl.dialect,
          temperature: pl.model_temperature,
          stage: all.find((s) => s.id === c.opportunity_stage_id) ?? null,
          stages: all,
          contact: { name: c.contact_name, email: c.contact_email, phone: c.contact_phone, identifier: c.contact_identifier },
          context: c.opportunity_context ?? {},
          history: memory,
          knowledge: hits.map((h) => ({ pointId: h.id, source: h.table_name, text: h.text })),
          model: catalogue.get(Number(pl.ai_model_id))!,
          actions: yield* turnActions(pl.id, c.opportunity_pipeline_id === pl.id ? c.opportunity_stage_id : null),
          routing: pool === null
            ? null
            : pool.map((t) => ({ tier: t.tier, model: catalogue.get(Number(t.ai_model_id))!, instructions: t.instructions ?? null })),
          operatorNote: c.handoff_return_note,
          handoff: turnHandoff(c, pl, upTo)
        }
        return Option.some({ context, pipeline: pl })
      })

    const prepare = (conversationId: string, upTo: string) =>
      Effect.gen(function*() {
        const skip = (reason: SkipReason, detail?: string): Prepared => ({ _tag: "Skip", reason, ...(detail === undefined ? {} : { detail }) })
        const found = yield* conversation(conversationId)
        if (Option.isNone(found)) return skip("closed")
        const c = found.value
        const ready = yield* contextFor(c, upTo)
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
        const c = yield* conversation(String(e.conversation_id))
        if (Option.isNone(c)) return Option.none()
        const ready = yield* contextFor(c.value, null)
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
        const c = yield* conversation(String(s.conversation_id))
        if (Option.isNone(c)) return skip("skipped")
        // a person was asked for, or has it: the stage's followups stay silent (docs/handoff.md)
        if (c.value.status === "paused" || c.value.opportunity_status === "paused" || c.value.handoff_state !== "ai" || !c.value.is_subscription_active ||
          !(c.value.credits > 0)) {
          return skip("skipped")
        }
        const ready = yield* contextFor(c.value, null)
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
      Effect.flatMap(conversation(conversationId), (found) =>
        Option.isNone(found) ? Effect.succeedNone : Effect.map(contextFor(found.value, null, false), Option.map((r) => r.context)))

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
