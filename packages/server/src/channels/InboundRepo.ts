/**
 * The SQL of the inbound path of every channel (docs/channels.md, "Inbound"), run by InboundStore: a returning
 * contact's thread by its thread id on the channel, a contact message stored once per provider id or Idempotency-Key,
 * and what a provider posted that we could not use. Receipts and echoes are in ProviderEventsRepo.ts.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { ChannelId, ContactId, ConversationId, OpportunityId, PipelineId, StageId, WorkspaceId } from "@parley/domain"
import { Effect, flow, Option, Schema } from "effect"
import * as MessageWrites from "../tables/MessageWrites.js"

const ThreadRow = Schema.Struct({
  contact_id: ContactId,
  conversation_id: ConversationId,
  opportunity_id: Schema.NullOr(OpportunityId),
  stage_id: Schema.NullOr(StageId),
  complete: Schema.Boolean
})

/** A contact's message as stored: the provider's id and clock when it has them (the web chat has neither). */
export interface ContactMessageRow extends MessageWrites.ThreadMessage {
  readonly message: string
  readonly external_message_id: string | null
  readonly provider_sent_at: Date | null
  /** Set for a message stored as handled already (a machine's mail, never answered). */
  readonly handled_reason?: string
}

/** What a provider posted, as JSON of bounded size (an excerpt when it is too long). */
const detailJson = (detail: unknown) => {
  if (detail === undefined || detail === null) return null
  const json = JSON.stringify(detail)
  return json.length <= 20_000 ? json : JSON.stringify({ excerpt: json.slice(0, 20_000) })
}

export class InboundRepo extends Effect.Service<InboundRepo>()("@parley/server/InboundRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const handled = (m: { readonly handled_reason?: string }) =>
      m.handled_reason === undefined ? {} : { handled_at: sql`now()`, handled_reason: m.handled_reason }

    /**
     * A returning contact's thread: its conversation on the channel by the provider's thread id, the contact, and its
     * current opportunity in the pipeline; `complete` when nothing is to be created or linked.
     */
    const threadSql = (channelId: number, pipelineId: number | null, chat: string) =>
      sql`
        select cv.contact_id, cv.id as conversation_id, o.id as opportunity_id, o.stage_id,
               ${pipelineId}::int8 is null or (o.id is not null and exists (
                 select 1 from conversation_opportunity co where co.opportunity_id = o.id and co.conversation_id = cv.id
               )) as complete
        from conversations cv
        left join lateral (select id, stage_id from opportunities
                           where contact_id = cv.contact_id and pipeline_id = ${pipelineId}
                           order by created_at desc, id desc limit 1) o on true
        where cv.channel_id = ${channelId} and cv.external_chat_id = ${chat}
        order by cv.id limit 1`

    /**
     * A returning contact's thread in one statement: its conversation on the channel by the provider's thread id,
     * the contact, and its current opportunity in the pipeline; `complete` when nothing is to be created or linked.
     */
    const threadByChat = SqlSchema.findOne({
      Request: Schema.Struct({ channelId: ChannelId, pipelineId: Schema.NullOr(PipelineId), chat: Schema.String }),
      Result: ThreadRow,
      execute: ({ channelId, chat, pipelineId }) => threadSql(channelId, pipelineId, chat)
    })

    /**
     * A returning contact's message in one statement, atomic by itself: stored on its thread (as `threadByChat`
     * reads it) when the thread is complete and the provider id is new; else nothing is stored (a new thread, or a
     * retried webhook) and the caller finds out which.
     */
    const insertOnKnownThread = SqlSchema.findOne({
      Request: Schema.Any,
      Result: Schema.Struct({ conversation_id: ConversationId }),
      execute: (m: Omit<ContactMessageRow, "conversation_id" | "opportunity_id" | "contact_id" | "stage_id">) =>
        sql`
          with t as (${threadSql(m.channel_id, m.pipeline_id, m.external_chat_id)})
          ${
          MessageWrites.insert(sql, {
            id: m.id,
            workspace_id: m.workspace_id,
            conversation_id: sql`t.conversation_id`,
            opportunity_id: sql`case when ${m.pipeline_id}::int8 is null then null else t.opportunity_id end`,
            contact_id: sql`t.contact_id`,
            channel_id: m.channel_id,
            stage_id: sql`case when ${m.pipeline_id}::int8 is null then null else t.stage_id end`,
            pipeline_id: m.pipeline_id,
            role: "user",
            status: "received",
            message: m.message,
            files: sql`${JSON.stringify(m.files)}::jsonb`,
            attachments: sql`${JSON.stringify(m.attachments)}::jsonb`,
            external_chat_id: m.external_chat_id,
            external_message_id: m.external_message_id,
            provider_sent_at: m.provider_sent_at,
            call_type: m.call_type,
            is_manual: false,
            sender_id: null,
            ...handled(m)
          })
        }
          from t where t.complete
          on conflict (channel_id, external_message_id) where role = 'user' and external_message_id is not null
          do nothing
          returning conversation_id`
    })

    const seen = SqlSchema.findOne({
      Request: Schema.Struct({ channelId: ChannelId, providerId: Schema.String }),
      Result: Schema.Struct({ id: Schema.String }),
      execute: ({ channelId, providerId }) =>
        sql`
          select id from messages
          where channel_id = ${channelId} and external_message_id = ${providerId} and role = 'user'`
    })

    /** The contact's message, unless the provider's id is stored already (then nothing is returned). */
    const insertMessage = SqlSchema.findOne({
      Request: Schema.Any,
      Result: Schema.Struct({ id: Schema.String }),
      execute: (m: ContactMessageRow) =>
        sql`
          ${
          MessageWrites.insert(sql, {
            ...m,
            role: "user",
            status: "received",
            files: sql`${JSON.stringify(m.files)}::jsonb`,
            attachments: sql`${JSON.stringify(m.attachments)}::jsonb`,
            provider_sent_at: m.provider_sent_at,
            is_manual: false,
            sender_id: null,
            ...handled(m)
          })
        }
          on conflict (channel_id, external_message_id) where role = 'user' and external_message_id is not null
          do nothing
          returning id`
    })

    /** The message an Idempotency-Key stored (SPEC.md 4.4: a repeated key answers the first id). */
    const idempotentMessage = SqlSchema.findOne({
      Request: Schema.Struct({ channelId: ChannelId, key: Schema.String }),
      Result: Schema.Struct({ message_id: Schema.String, conversation_id: ConversationId }),
      execute: (k) =>
        sql`
          select k.message_id, m.conversation_id from idempotency_keys k join messages m on m.id = k.message_id
          where k.channel_id = ${k.channelId} and k.key = ${k.key}`
    })

    const recordEvent = (
      e: { workspaceId: WorkspaceId; channelId: ChannelId; kind: string; reason: string; detail: unknown }
    ) =>
      sql`
        insert into channel_events (workspace_id, channel_id, kind, reason, detail)
        values (${e.workspaceId}, ${e.channelId}, ${e.kind}, ${e.reason.slice(0, 1000)},
                ${detailJson(e.detail)}::jsonb)`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    return {
      threadByChat: (channelId: ChannelId, pipelineId: PipelineId | null, chat: string) =>
        threadByChat({ channelId, pipelineId, chat }).pipe(Effect.orDie),
      seen: (channelId: ChannelId, providerId: string) =>
        seen({ channelId, providerId }).pipe(Effect.map(Option.isSome), Effect.orDie),
      insertMessage: flow(insertMessage, Effect.map(Option.map((r) => r.id)), Effect.orDie),
      insertOnKnownThread: flow(insertOnKnownThread, Effect.map(Option.map((r) => r.conversation_id)), Effect.orDie),
      recordEvent,

      idempotentMessage: (channelId: ChannelId, key: string) =>
        idempotentMessage({ channelId, key }).pipe(
          Effect.map(Option.map((r) => ({ messageId: r.message_id, conversationId: r.conversation_id }))),
          Effect.orDie
        ),

      /**
       * Its SqlError stays the caller's, not a defect: a unique violation is a concurrent retry with the same
       * key that stored first, and the store then answers what that one stored.
       */
      rememberIdempotency: (channelId: ChannelId, key: string, messageId: string) =>
        sql`insert into idempotency_keys (channel_id, key, message_id) values (${channelId}, ${key}, ${messageId})`,

      insertFile: (f: {
        key: string
        workspace_id: WorkspaceId
        channel_id: ChannelId
        name: string
        mimetype: string
        size: number
      }) =>
        sql`insert into files (key, workspace_id, channel_id, name, mimetype, size)
            values (${f.key}, ${f.workspace_id}, ${f.channel_id}, ${f.name}, ${f.mimetype}, ${f.size})`.pipe(
          Effect.asVoid,
          Effect.orDie
        )
    }
  })
}) {}
