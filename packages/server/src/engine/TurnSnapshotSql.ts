/**
 * The SQL a turn reads a conversation with (TurnsRepo runs it): the conversation's columns as ConversationRow over its
 * joins, and the whole turn's snapshot (TurnSnapshot) in one statement.
 */
import type { SqlClient, Statement } from "@effect/sql"
import { windowColumns } from "../channels/ServiceWindow.js"

/**
 * A conversation's columns as ConversationRow, over `c`, `w`, `ct`, `ch` and the laterals `o`, `cv` and `lp` of
 * `conversationFrom`.
 */
export const conversationColumns = (sql: SqlClient.SqlClient) =>
  sql`
  c.id, c.workspace_id, c.contact_id, c.channel_id, c.external_chat_id, c.status, c.cost_for_user::float8 as cost,
  -- counted only when the pipeline limits them: a long conversation's count is a scan of all its messages
  (select count(*) from messages m where m.conversation_id = c.id and m.role = 'assistant' and not m.is_manual
     and m.status <> 'failed' and m.call_type = 'ai'
     and lp.max_conversation_messages is not null
  )::int as ai_replies,
  w.credits::float8 as credits, w.is_subscription_active, c.is_eval, ch.pipeline_id as channel_pipeline_id,
  ch.kind as channel_kind,
  ${windowColumns(sql)},
  o.id as opportunity_id, o.status as opportunity_status, o.stage_id as opportunity_stage_id,
  o.pipeline_id as opportunity_pipeline_id, o.context as opportunity_context,
  coalesce(ct.custom_name, ct.name) as contact_name, coalesce(ct.custom_email, ct.email) as contact_email,
  coalesce(ct.custom_phone, ct.phone) as contact_phone, ct.identifier as contact_identifier,
  c.handoff_state, c.handoff_return_note, c.handoff_returned_upto,
  (select s.handoff_instructions from parley_live_stages(o.pipeline_id, cv.config) s where s.id = o.stage_id) as stage_handoff_instructions,
  cv.config as config_version`
export const conversationFrom = (sql: SqlClient.SqlClient) =>
  sql`
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

/**
 * A model as a turn calls it (`am` joined with its provider `pr`): the provider's row and revision, so the registry
 * builds the client the row describes now (TurnContextFrom.toModel reads it).
 */
export const modelJson = (sql: SqlClient.SqlClient) =>
  sql`json_build_object('id', am.id, 'provider', pr.slug, 'kind', pr.kind, 'provider_id', pr.id,
        'revision', pr.updated_at::text, 'model', am.model, 'input_price', am.input_price_per_million::float8,
        'output_price', am.output_price_per_million::float8, 'context_window', am.context_window,
        'capabilities', am.capabilities, 'charge_credits', pr.charge_credits or pr.workspace_id is null,
        'has_key', pr.api_key_ciphertext is not null)`

/**
 * The conversation, its pipeline (the opportunity's, else the channel's) with stages, the models of
 * its model and pool, the actions the model may call at the opportunity's stage and the AI
 * variables, and the memory window (up to `upTo` when given): one statement for the whole turn.
 */
export const snapshotOf = (sql: SqlClient.SqlClient, conversationId: string, upTo: Statement.Fragment) =>
  sql`
      select ${conversationColumns(sql)},
        (select to_json(pc) from (
           select p.id, p.name, p.status, p.is_archived, p.persona, p.instructions, p.model_temperature::float8 as model_temperature,
                  p.agent_memory_window, p.context_message_count, p.rag_mode, p.no_of_relevant_points, p.max_conversation_cost::float8 as max_conversation_cost,
                  p.max_conversation_messages, p.ai_model_id, p.is_model_routing_enabled, p.model_pool,
                  p.fallback_model_id, p.vision_model_id, p.transcription_model_id, p.cite_sources,
                  at.name as agent_type_name, at.description as agent_type_description, l.name as language, d.name as dialect,
                  p.handoff_instructions, p.handoff_bridge_mode, p.handoff_bridge_text, p.handoff_keywords, p.handoff_after_failures,
                  (select coalesce(json_agg(json_build_object('id', s.id, 'name', s.name, 'nature', s.nature, 'ai_persona', s.ai_persona,
                            'instructions', s.instructions, 'enter_condition', s.enter_condition) order by s.sort_order, s.id), '[]')
                   from parley_live_stages(p.id, cv.config) s) as stages,
                  (select coalesce(json_agg(${modelJson(sql)}), '[]')
                   from ai_models am join ai_providers pr on pr.id = am.ai_provider_id
                   where am.id in (p.ai_model_id, p.fallback_model_id, p.vision_model_id, p.transcription_model_id)
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
        (select coalesce(json_agg(json_build_object('id', h.id, 'role', h.role, 'message', h.message, 'files', h.files) order by h.created_at, h.id), '[]')
         from (
           select m.role, m.message, m.files, m.created_at, m.id from messages m
           where m.conversation_id = c.id and m.status <> 'failed'
             and (${upTo}::text is null or (m.created_at, m.id) <= (select u.created_at, u.id from messages u where u.id = ${upTo}))
           order by m.created_at desc, m.id desc
           limit coalesce(lp.agent_memory_window, 0)
         ) h) as history
      from ${conversationFrom(sql)}
      where c.id = ${conversationId}`
