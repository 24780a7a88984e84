/**
 * The conversation entity's hot statements, each one round trip (docs/benchmarks.md counts them per
 * reply): what a conversation has waiting, and storing a reply with everything that goes with it.
 * Rows are typed with SqlSchema; callers (ConversationTurnsLive) decide what to do with them.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import * as MessageWrites from "../tables/MessageWrites.js"
import * as WorkspaceWrites from "../tables/WorkspaceWrites.js"
import { ConversationRow, TurnSnapshot } from "./TurnRows.js"
import { conversationColumns, conversationFrom, snapshotOf } from "./TurnSnapshotSql.js"

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
  /** what the workspace's credits pay: the cost, or 0 through a provider that does not spend them */
  charge: Schema.Number,
  error: Schema.NullOr(Schema.String),
  callType: Schema.String,
  /** a followup's sequence and step */
  followupSequenceId: Schema.NullOr(Schema.Number),
  followupStep: Schema.NullOr(Schema.Number),
  /** sent as this template (a provider's window closed): name, language, resolved parameters */
  template: Schema.optional(Schema.NullOr(Schema.Unknown)),
  /** the knowledge points the reply was given (domain `MessageCitation`s); null or absent: none */
  citations: Schema.optional(Schema.NullOr(Schema.Array(Schema.Unknown)))
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
            select w.credits >= ${r.charge}::numeric as covered from workspaces w
            where ${r.charge}::numeric > 0 and w.id = (select workspace_id from c)
            for update
          ), paid as (
            select ${r.charge}::numeric <= 0 or coalesce((select covered from funds), false) as ok
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
            template: r.template === undefined || r.template === null
              ? null
              : sql`${JSON.stringify(r.template)}::jsonb`,
            citations: r.citations === undefined || r.citations === null || r.citations.length === 0
              ? null
              : sql`${JSON.stringify(r.citations)}::jsonb`
          })
        }
            from c where (select ok from paid)
            on conflict (in_reply_to) where in_reply_to is not null do nothing
            returning id, workspace_id
          ), charged as (
            -- atomic: concurrent turns of one workspace each subtract their own cost
            ${
          WorkspaceWrites.chargeCredits(sql, sql`(select workspace_id from stored)`, r.charge, { coveredOnly: false })
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

    const conversation = SqlSchema.findOne({
      Request: Schema.String,
      Result: ConversationRow,
      execute: (conversationId) =>
        sql`select ${conversationColumns(sql)} from ${conversationFrom(sql)} where c.id = ${conversationId}`
    })

    const snapshot = SqlSchema.findOne({
      Request: Schema.Struct({ conversationId: Schema.String, upTo: Schema.NullOr(Schema.String) }),
      Result: TurnSnapshot,
      execute: ({ conversationId, upTo }) => snapshotOf(sql, conversationId, sql`${upTo}`)
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
          left join lateral (${snapshotOf(sql, conversationId, sql`pw.latest_id`)}) s
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
      /** conversations a crash left work in, with a message of each to hand over again */
      orphaned: (graceMs: number) =>
        Effect.map(
          Effect.orDie(orphaned(graceMs)),
          (rows) => rows.map((r) => ({ conversationId: r.conversation_id, messageId: r.message_id }))
        ),
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
