/**
 * The conversation entity's hot statements, each one round trip (docs/benchmarks.md counts them per
 * reply): what a conversation has waiting, and storing a reply with everything that goes with it.
 * Rows are typed with SqlSchema; callers (ConversationTurnsLive) decide what to do with them.
 */
import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { contactSentAtMs } from "../channels/ServiceWindow.js"
import * as MessageWrites from "../tables/MessageWrites.js"
import * as WorkspaceWrites from "../tables/WorkspaceWrites.js"
import { ConversationRow, TurnSnapshot } from "./TurnRows.js"

/** The newest unanswered contact message with its pipeline's debounce, and replies not yet delivered. */
export const PendingWorkRow = Schema.Struct({
  latest_id: Schema.NullOr(Schema.String),
  latest_at: Schema.NullOr(Schema.String),
  debounce_ms: Schema.NullOr(Schema.Number),
  undelivered: Schema.Array(Schema.String)
})

const decodePending = Schema.decodeUnknown(PendingWorkRow)
const decodeSnapshot = Schema.decodeUnknown(TurnSnapshot)

/** A reply to store: the message's own columns (the conversation's are read by the statement). */
export const StoreReply = Schema.Struct({
  id: Schema.String,
  conversationId: Schema.String,
  /** the contact message (or stage entry, followup step) it answers: unique, so a repeat stores nothing */
  inReplyTo: Schema.String,
  /** mark the conversation's contact messages up to this one handled, with `reason` (a reply or a failure) */
  upTo: Schema.NullOr(Schema.String),
  reason: Schema.String,
  status: Schema.String,
  text: Schema.NullOr(Schema.String),
  modelId: Schema.NullOr(Schema.Number),
  model: Schema.NullOr(Schema.String),
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  cost: Schema.Number,
  error: Schema.NullOr(Schema.String),
  callType: Schema.String,
  /** a followup's sequence and step */
  followupSequenceId: Schema.NullOr(Schema.Number),
  followupStep: Schema.NullOr(Schema.Number),
  /** sent as this template (a provider's window closed): name, language, resolved parameters */
  template: Schema.optional(Schema.NullOr(Schema.Unknown))
})
export type StoreReply = typeof StoreReply.Type

/**
 * `stored_id` when this call stored it, else `existing_id`: the reply an earlier run stored; neither when
 * the workspace's credits could not pay for it (`unpaid`: not stored, the turn handled as `no_credits`).
 */
export const StoredReplyRow = Schema.Struct({
  stored_id: Schema.NullOr(Schema.String),
  existing_id: Schema.NullOr(Schema.String),
  /** null when the conversation is gone */
  workspace_id: Schema.NullOr(Schema.Number),
  /** an eval's sandbox: not counted as a reply made (null when the conversation is gone) */
  is_eval: Schema.NullOr(Schema.Boolean),
  unpaid: Schema.Boolean
})

export class TurnsRepo extends Effect.Service<TurnsRepo>()("@parley/server/TurnsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** The conversation's contact messages not yet handled, up to `upTo` (the turn's newest). */
    const unhandledUpTo = (conversationId: string, upTo: string | null) =>
      sql`conversation_id = ${conversationId} and role = 'user' and handled_at is null
          and (created_at, id) <= (select created_at, id from messages where id = ${upTo})`

    /** Marks a turn's contact messages handled with `reason` (a skip; a reply or failure does it in storeReply). */
    const markHandled = (conversationId: string, upTo: string, reason: string) =>
      MessageWrites.update(
        sql,
        { handled_at: sql`now()`, handled_reason: reason },
        sql`where ${unhandledUpTo(conversationId, upTo)}`
      )

    const pendingWorkOf = (conversationId: string) =>
      sql`
          select latest.id as latest_id, latest.created_at as latest_at, latest.reply_debounce_ms as debounce_ms,
                 (select coalesce(json_agg(u.id order by u.created_at, u.id), '[]') from messages u
                  where u.conversation_id = ${conversationId} and u.status = 'ai_generated') as undelivered
          from (select 1) one
          left join lateral (
            select m.id, m.created_at, p.reply_debounce_ms
            from messages m left join pipelines p on p.id = m.pipeline_id
            where m.conversation_id = ${conversationId} and m.role = 'user' and m.handled_at is null
            order by m.created_at desc, m.id desc limit 1
          ) latest on true`

    /**
     * One statement, so atomic without a transaction: the reply inserted with the conversation's
     * current opportunity, stage, pipeline and channel (nothing if one answering `inReplyTo` exists),
     * the workspace charged for what was inserted, and the turn's contact messages marked handled. A reply
     * that costs something is made only when the credits cover it: the workspace row is locked first (in
     * READ COMMITTED, `for update` reads the newest balance once concurrent charges commit), so concurrent
     * turns can never take the balance below zero.
     */
    const storeReply = SqlSchema.single({
      Request: StoreReply,
      Result: StoredReplyRow,
      execute: (r) =>
        sql`
          with c as (
            select c.id, c.workspace_id, c.contact_id, c.channel_id, c.external_chat_id, c.is_eval, ch.pipeline_id as channel_pipeline_id,
                   o.id as opportunity_id, o.stage_id, o.pipeline_id as opportunity_pipeline_id
            from conversations c
            left join channels ch on ch.id = c.channel_id
            left join lateral (
              select o.id, o.stage_id, o.pipeline_id from conversation_opportunity co
              join opportunities o on o.id = co.opportunity_id
              where co.conversation_id = c.id order by o.created_at desc, o.id desc limit 1
            ) o on true
            where c.id = ${r.conversationId}
          ), funds as (
            select w.credits >= ${r.cost}::numeric as covered from workspaces w
            where ${r.cost}::numeric > 0 and w.id = (select workspace_id from c)
            for update
          ), paid as (
            select ${r.cost}::numeric <= 0 or coalesce((select covered from funds), false) as ok
          ), stored as (
            ${
          MessageWrites.insert(sql, {
            id: r.id,
            workspace_id: sql`c.workspace_id`,
            conversation_id: sql`c.id`,
            opportunity_id: sql`c.opportunity_id`,
            contact_id: sql`c.contact_id`,
            channel_id: sql`c.channel_id`,
            stage_id: sql`c.stage_id`,
            pipeline_id: sql`coalesce(c.opportunity_pipeline_id, c.channel_pipeline_id)`,
            role: "assistant",
            status: r.status,
            message: r.text,
            external_chat_id: sql`c.external_chat_id`,
            call_type: r.callType,
            is_manual: false,
            cost_for_user: sql`${r.cost}::numeric`,
            ai_model_id: r.modelId,
            model: r.model,
            input_tokens: r.inputTokens,
            output_tokens: r.outputTokens,
            in_reply_to: r.inReplyTo,
            error: r.error,
            followup_sequence_id: r.followupSequenceId,
            followup_step: r.followupStep,
            template: r.template === undefined || r.template === null ? null : sql`${JSON.stringify(r.template)}::jsonb`
          })
        }
            from c where (select ok from paid)
            on conflict (in_reply_to) where in_reply_to is not null do nothing
            returning id, workspace_id
          ), charged as (
            -- atomic: concurrent turns of one workspace each subtract their own cost
            ${
          WorkspaceWrites.chargeCredits(sql, sql`(select workspace_id from stored)`, r.cost, { coveredOnly: false })
        }
          ), handled as (
            ${
          MessageWrites.update(sql, {
            handled_at: sql`now()`,
            handled_reason:
              sql`case when (select ok from paid) or exists (select 1 from messages where in_reply_to = ${r.inReplyTo})
                     then ${r.reason} else 'no_credits' end`
          }, sql`where ${r.upTo}::text is not null and ${unhandledUpTo(r.conversationId, r.upTo)}`)
        }
          )
          select (select id from stored) as stored_id, (select id from messages where in_reply_to = ${r.inReplyTo}) as existing_id,
                 (select workspace_id from c) as workspace_id, (select is_eval from c) as is_eval, not (select ok from paid) as unpaid`
    })

    /**
     * A conversation's columns as ConversationRow, over `c`, `w`, `ct`, `ch` and the laterals `o`, `cv` and `lp` of
     * `conversationFrom`.
     */
    const conversationColumns = sql`
      c.id, c.workspace_id, c.contact_id, c.channel_id, c.external_chat_id, c.status, c.cost_for_user::float8 as cost,
      -- counted only when the pipeline limits them: a long conversation's count is a scan of all its messages
      (select count(*) from messages m where m.conversation_id = c.id and m.role = 'assistant' and not m.is_manual
         and m.status <> 'failed' and m.call_type = 'ai'
         and lp.max_conversation_messages is not null
      )::int as ai_replies,
      w.credits::float8 as credits, w.is_subscription_active, c.is_eval, ch.pipeline_id as channel_pipeline_id,
      ch.kind as channel_kind,
      ${contactSentAtMs(sql)} as contact_sent_at_ms,
      o.id as opportunity_id, o.status as opportunity_status, o.stage_id as opportunity_stage_id,
      o.pipeline_id as opportunity_pipeline_id, o.context as opportunity_context,
      coalesce(ct.custom_name, ct.name) as contact_name, coalesce(ct.custom_email, ct.email) as contact_email,
      coalesce(ct.custom_phone, ct.phone) as contact_phone, ct.identifier as contact_identifier,
      c.handoff_state, c.handoff_return_note, c.handoff_returned_upto,
      (select s.handoff_instructions from parley_live_stages(o.pipeline_id, cv.config) s where s.id = o.stage_id) as stage_handoff_instructions,
      cv.config as config_version`
    const conversationFrom = sql`
      conversations c
      join workspaces w on w.id = c.workspace_id
      join contacts ct on ct.id = c.contact_id
      left join channels ch on ch.id = c.channel_id
      left join lateral (
        select o.id, o.status, o.stage_id, o.pipeline_id, o.context, o.config_version_id from conversation_opportunity co
        join opportunities o on o.id = co.opportunity_id
        where co.conversation_id = c.id order by o.created_at desc, o.id desc limit 1
      ) o on true
      -- the configuration this statement reads (docs/versions.md), resolved once: 0 the tables, else a version.
      -- offset 0 keeps it a subquery: pulled up, cv.config is an expression with a subplan, and a
      -- parley_live_* call given that is run as a function (its body planned on every call) instead of inlined
      cross join lateral (
        select case when o.config_version_id is not null then o.config_version_id
                    when w.is_drafts_enabled then coalesce((select lp.live_version_id from pipelines lp
                                                            where lp.id = coalesce(o.pipeline_id, ch.pipeline_id)), 0)
                    else 0 end as config
        offset 0
      ) cv
      -- its pipeline as it runs (the opportunity's, else the channel's)
      left join lateral parley_live_pipeline(coalesce(o.pipeline_id, ch.pipeline_id), cv.config) lp on true`

    const conversation = SqlSchema.findOne({
      Request: Schema.String,
      Result: ConversationRow,
      execute: (conversationId) =>
        sql`select ${conversationColumns} from ${conversationFrom} where c.id = ${conversationId}`
    })

    /**
     * The conversation, its pipeline (the opportunity's, else the channel's) with stages, the models of
     * its model and pool, the actions the model may call at the opportunity's stage and the AI
     * variables, and the memory window (up to `upTo` when given): one statement for the whole turn.
     */
    const snapshotOf = (conversationId: string, upTo: Statement.Fragment) =>
      sql`
          select ${conversationColumns},
            (select to_json(pc) from (
               select p.id, p.name, p.status, p.is_archived, p.persona, p.instructions, p.model_temperature::float8 as model_temperature,
                      p.agent_memory_window, p.context_message_count, p.rag_mode, p.no_of_relevant_points, p.max_conversation_cost::float8 as max_conversation_cost,
                      p.max_conversation_messages, p.ai_model_id, p.is_model_routing_enabled, p.model_pool,
                      at.name as agent_type_name, at.description as agent_type_description, l.name as language, d.name as dialect,
                      p.handoff_instructions, p.handoff_bridge_mode, p.handoff_bridge_text, p.handoff_keywords, p.handoff_after_failures,
                      (select coalesce(json_agg(json_build_object('id', s.id, 'name', s.name, 'nature', s.nature, 'ai_persona', s.ai_persona,
                                'instructions', s.instructions, 'enter_condition', s.enter_condition) order by s.sort_order, s.id), '[]')
                       from parley_live_stages(p.id, cv.config) s) as stages,
                      (select coalesce(json_agg(json_build_object('id', am.id, 'provider', pr.slug, 'model', am.model,
                                'input_price', am.input_price_per_million::float8, 'output_price', am.output_price_per_million::float8)), '[]')
                       from ai_models am join ai_providers pr on pr.id = am.ai_provider_id
                       where am.id = p.ai_model_id
                          or (p.is_model_routing_enabled and am.id in (select (t ->> 'ai_model_id')::bigint from jsonb_array_elements(p.model_pool) t))) as models,
                      (select coalesce(json_agg(json_build_object('id', a.id, 'name', a.name, 'fixed_trigger', a.fixed_trigger,
                                'description', a.description, 'instructions', a.instructions, 'url', a.url, 'headers', a.headers,
                                'payload', a.payload) order by a.sort_order, a.id), '[]')
                       from parley_live_actions(p.id, cv.config) a
                       where a.is_active and a.fixed_trigger in ('on_user_message', 'custom')
                         and (a.stage_id is null or a.stage_id = (case when o.pipeline_id = p.id then o.stage_id end))) as actions,
                      (select coalesce(json_agg(json_build_object('name', v.name, 'value', v.value)), '[]')
                       from parley_live_variables(p.id, cv.config) v where v.type = 'from_ai') as ai_variables,
                      case when p.rag_mode = 'none' then '[]'::json else
                        (select coalesce(json_agg(k.knowledge_table_id order by k.knowledge_table_id), '[]')
                         from parley_live_knowledge_tables(p.id, cv.config) k) end as knowledge_table_ids
               from (select lp.*) p
               join agent_types at on at.id = p.agent_type_id
               join languages l on l.id = p.language_id
               left join dialects d on d.id = p.dialect_id
             ) pc) as pipeline,
            (select coalesce(json_agg(json_build_object('role', h.role, 'message', h.message, 'files', h.files) order by h.created_at, h.id), '[]')
             from (
               select m.role, m.message, m.files, m.created_at, m.id from messages m
               where m.conversation_id = c.id and m.status <> 'failed'
                 and (${upTo}::text is null or (m.created_at, m.id) <= (select u.created_at, u.id from messages u where u.id = ${upTo}))
               order by m.created_at desc, m.id desc
               limit coalesce(lp.agent_memory_window, 0)
             ) h) as history
          from ${conversationFrom}
          where c.id = ${conversationId}`

    const snapshot = SqlSchema.findOne({
      Request: Schema.Struct({ conversationId: Schema.String, upTo: Schema.NullOr(Schema.String) }),
      Result: TurnSnapshot,
      execute: ({ conversationId, upTo }) => snapshotOf(conversationId, sql`${upTo}`)
    })

    /**
     * What a conversation has waiting (PendingWorkRow) and, when its newest contact message is due by the
     * database's clock, the snapshot of the turn that answers it: the entity's usual next read, in the
     * same round trip (`snapshot` none when not due; the snapshot's columns are all null then).
     */
    const pendingTurn = (conversationId: string) =>
      sql<Record<string, unknown>>`
          select pw.latest_id, pw.latest_at, pw.debounce_ms, pw.undelivered, s.*
          from (${pendingWorkOf(conversationId)}) pw
          left join lateral (${snapshotOf(conversationId, sql`pw.latest_id`)}) s
            on pw.latest_id is not null and pw.latest_at + make_interval(secs => coalesce(pw.debounce_ms, 0) / 1000.0) <= now()`
        .pipe(
          Effect.flatMap((rows) =>
            Effect.all({
              pending: decodePending(rows[0]),
              snapshot: rows[0]?.id === null || rows[0]?.id === undefined
                ? Effect.succeedNone
                : Effect.asSome(decodeSnapshot(rows[0]))
            })
          )
        )

    /**
     * What the hand-over sweep re-sends: contact messages still unhandled `graceMs` after their debounce
     * window closed, and replies stored but still undelivered `graceMs` after they were stored (a crash
     * between a turn's commit and its delivery). Re-sending one that is in progress is harmless.
     */
    const orphaned = SqlSchema.findAll({
      Request: Schema.Number,
      Result: Schema.Struct({ conversation_id: Schema.String, message_id: Schema.String }),
      execute: (graceMs) =>
        sql`
          select conversation_id::text as conversation_id, max(id) as message_id from (
            select m.conversation_id, m.id from messages m left join pipelines p on p.id = m.pipeline_id
            where m.role = 'user' and m.handled_at is null
              and m.created_at < now() - make_interval(secs => (coalesce(p.reply_debounce_ms, 0) + ${graceMs}) / 1000.0)
            union all
            select conversation_id, id from messages
            where status = 'ai_generated' and created_at < now() - make_interval(secs => ${graceMs / 1000})
          ) o
          group by conversation_id limit 500`
    })

    /**
     * A stage of the pipeline as the configuration `version` has it (0 the tables, else a version), by id: what
     * a stage move the model asked for needs. Nothing when the stage is not in that configuration, or its row was
     * deleted in the draft (docs/versions.md).
     */
    const stageNature = SqlSchema.findOne({
      Request: Schema.Struct({ stageId: Schema.Number, pipelineId: Schema.Number, version: Schema.Number }),
      Result: Schema.Struct({ nature: Schema.Literal("neutral", "won", "lost") }),
      execute: ({ pipelineId, stageId, version }) =>
        sql`select l.nature from stages s join parley_live_stages(${pipelineId}, ${version}) l on l.id = s.id
            where s.id = ${stageId} and s.pipeline_id = ${pipelineId}`
    })

    /** The message stored in reply to `key` (a contact message, a stage entry, a followup step), if any. */
    const replyTo = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ id: Schema.String }),
      execute: (key) => sql`select id from messages where in_reply_to = ${key}`
    })

    return {
      markHandled: (conversationId: string, upTo: string, reason: string) =>
        Effect.orDie(Effect.asVoid(markHandled(conversationId, upTo, reason))),
      orphaned: (graceMs: number) => Effect.orDie(orphaned(graceMs)),
      stageNature: (stageId: number, pipelineId: number, version: number) =>
        Effect.orDie(stageNature({ stageId, pipelineId, version })),
      replyTo: (key: string) => Effect.map(Effect.orDie(replyTo(key)), Option.map((r) => r.id)),
      conversation: (conversationId: string) => Effect.orDie(conversation(conversationId)),
      snapshot: (conversationId: string, upTo: string | null) => Effect.orDie(snapshot({ conversationId, upTo })),
      pendingTurn: (conversationId: string) => Effect.orDie(pendingTurn(conversationId)),
      storeReply: (reply: StoreReply) => Effect.orDie(storeReply(reply))
    }
  })
}) {}
