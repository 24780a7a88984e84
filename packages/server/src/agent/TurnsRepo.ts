/**
 * The conversation entity's hot statements, each one round trip (docs/benchmarks.md counts them per
 * reply): what a conversation has waiting, and storing a reply with everything that goes with it.
 * Rows are typed with SqlSchema; callers (ConversationTurnsLive) decide what to do with them.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"

/** The newest unanswered contact message with its pipeline's debounce, and replies not yet delivered. */
export const PendingWorkRow = Schema.Struct({
  latest_id: Schema.NullOr(Schema.String),
  latest_at: Schema.NullOr(Schema.String),
  debounce_ms: Schema.NullOr(Schema.Number),
  undelivered: Schema.Array(Schema.String)
})

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
  callType: Schema.String
})
export type StoreReply = typeof StoreReply.Type

/** `stored_id` when this call stored it, else `existing_id`: the reply an earlier run stored. */
export const StoredReplyRow = Schema.Struct({
  stored_id: Schema.NullOr(Schema.String),
  existing_id: Schema.NullOr(Schema.String)
})

export class TurnsRepo extends Effect.Service<TurnsRepo>()("@parley/server/TurnsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const pendingWork = SqlSchema.single({
      Request: Schema.String,
      Result: PendingWorkRow,
      execute: (conversationId) =>
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
    })

    /**
     * One statement, so atomic without a transaction: the reply inserted with the conversation's
     * current opportunity, stage, pipeline and channel (nothing if one answering `inReplyTo` exists),
     * the workspace charged for what was inserted, and the turn's contact messages marked handled.
     */
    const storeReply = SqlSchema.single({
      Request: StoreReply,
      Result: StoredReplyRow,
      execute: (r) =>
        sql`
          with c as (
            select c.id, c.workspace_id, c.contact_id, c.channel_id, c.external_chat_id, ch.pipeline_id as channel_pipeline_id,
                   o.id as opportunity_id, o.stage_id, o.pipeline_id as opportunity_pipeline_id
            from conversations c
            left join channels ch on ch.id = c.channel_id
            left join lateral (
              select o.id, o.stage_id, o.pipeline_id from conversation_opportunity co
              join opportunities o on o.id = co.opportunity_id
              where co.conversation_id = c.id order by o.created_at desc, o.id desc limit 1
            ) o on true
            where c.id = ${r.conversationId}
          ), stored as (
            insert into messages (id, workspace_id, conversation_id, opportunity_id, contact_id, channel_id, stage_id, pipeline_id,
                                  role, status, message, external_chat_id, call_type, is_manual, cost_for_user, ai_model_id, model,
                                  input_tokens, output_tokens, in_reply_to, error)
            select ${r.id}, c.workspace_id, c.id, c.opportunity_id, c.contact_id, c.channel_id, c.stage_id,
                   coalesce(c.opportunity_pipeline_id, c.channel_pipeline_id), 'assistant', ${r.status}, ${r.text},
                   c.external_chat_id, ${r.callType}, false, ${r.cost}::numeric, ${r.modelId}, ${r.model}, ${r.inputTokens}, ${r.outputTokens},
                   ${r.inReplyTo}, ${r.error}
            from c
            on conflict (in_reply_to) where in_reply_to is not null do nothing
            returning id, workspace_id
          ), charged as (
            -- atomic: concurrent turns of one workspace each subtract their own cost
            update workspaces w set credits = w.credits - ${r.cost}::numeric, updated_at = now()
            from stored where ${r.cost}::numeric > 0 and w.id = stored.workspace_id
          ), handled as (
            update messages set handled_at = now(), handled_reason = ${r.reason}
            where ${r.upTo}::text is not null and conversation_id = ${r.conversationId} and role = 'user' and handled_at is null
              and (created_at, id) <= (select created_at, id from messages where id = ${r.upTo})
          )
          select (select id from stored) as stored_id, (select id from messages where in_reply_to = ${r.inReplyTo}) as existing_id`
    })

    return {
      pendingWork: (conversationId: string) => Effect.orDie(pendingWork(conversationId)),
      storeReply: (reply: StoreReply) => Effect.orDie(storeReply(reply))
    }
  })
}) {}
