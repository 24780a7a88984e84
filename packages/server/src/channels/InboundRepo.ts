/**
 * The SQL of the inbound path of every channel (docs/channels.md, "Inbound"), run by InboundStore: a returning
 * contact's thread by its thread id on the channel, a contact message stored once per provider id or Idempotency-Key,
 * receipts that never move a delivery status backwards, and what a provider posted that we could not use.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import {
  ChannelId,
  ContactId,
  ConversationId,
  OpportunityId,
  PipelineId,
  type ReceiptStatus,
  StageId,
  WorkspaceId
} from "@parley/domain"
import { Effect, flow, Option, Schema } from "effect"
import * as MessagePartWrites from "../tables/MessagePartWrites.js"
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
}

/** A receipt applied: the message it moved, for the operators' socket. */
const ReceiptApplied = Schema.Struct({
  id: Schema.String,
  conversation_id: ConversationId,
  workspace_id: WorkspaceId,
  delivery_status: Schema.String
})

/** What a provider posted, as JSON of bounded size (an excerpt when it is too long). */
const detailJson = (detail: unknown) => {
  if (detail === undefined || detail === null) return null
  const json = JSON.stringify(detail)
  return json.length <= 20_000 ? json : JSON.stringify({ excerpt: json.slice(0, 20_000) })
}

export class InboundRepo extends Effect.Service<InboundRepo>()("@parley/server/InboundRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

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
            sender_id: null
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
            sender_id: null
          })
        }
          on conflict (channel_id, external_message_id) where role = 'user' and external_message_id is not null
          do nothing
          returning id`
    })

    /**
     * A receipt moves `delivery_status` forwards only (sent, delivered, read; failed only from nothing or sent),
     * and fills its own timestamp once; a failure marks the message failed with the provider's error. The
     * workspace's event webhooks get `message.status`.
     */
    const applyReceipt = SqlSchema.findOne({
      Request: Schema.Struct({
        channelId: ChannelId,
        /** the message: by the provider's id of it, or (a message of several parts) by ours */
        match: Schema.Union(
          Schema.TaggedStruct("ProviderId", { id: Schema.String }),
          Schema.TaggedStruct("MessageId", { id: Schema.String })
        ),
        status: Schema.String,
        at: Schema.DateFromSelf,
        error: Schema.NullOr(Schema.String)
      }),
      Result: ReceiptApplied,
      execute: ({ at, channelId, error, match, status }) => {
        const rank = (s: unknown) => sql`coalesce(array_position(array['sent', 'delivered', 'read'], ${s}::text), 0)`
        const fails = sql`(${status} = 'failed' and (delivery_status is null or delivery_status = 'sent'))`
        return sql`
          with moved as (
            ${
          MessageWrites.update(
            sql,
            {
              delivery_status: sql`case when ${fails} then 'failed'
                                 when delivery_status = 'failed' then delivery_status
                                 when ${rank(status)} > ${rank(sql`delivery_status`)} then ${status}
                                 else delivery_status end`,
              sent_at: sql`case when ${status} = 'sent' then coalesce(sent_at, ${at}) else sent_at end`,
              delivered_at:
                sql`case when ${status} = 'delivered' then coalesce(delivered_at, ${at}) else delivered_at end`,
              read_at: sql`case when ${status} = 'read' then coalesce(read_at, ${at}) else read_at end`,
              failed_at: sql`case when ${fails} then ${at} else failed_at end`,
              status: sql`case when ${fails} then 'failed' else status end`,
              error:
                sql`case when ${fails} then coalesce(${error}::text, 'The provider could not deliver the message.') else error end`,
              updated_at: sql`now()`
            },
            sql`where channel_id = ${channelId} and role = 'assistant' and ${
              match._tag === "ProviderId"
                // a message sent in parts moves with its parts' receipts only (MessagePartWrites)
                ? sql`external_message_id = ${match.id} and not exists (select 1 from message_parts p where p.message_id = messages.id)`
                : sql`id = ${match.id}`
            }`
          )
        }
            returning id, conversation_id, workspace_id, delivery_status, sent_at, delivered_at, read_at, failed_at
          ), told as (
            select workspace_event(workspace_id, 'message.status', jsonb_build_object(
              'message_id', id, 'conversation_id', conversation_id, 'delivery_status', delivery_status,
              'sent_at', iso_utc(sent_at), 'delivered_at', iso_utc(delivered_at), 'read_at', iso_utc(read_at),
              'failed_at', iso_utc(failed_at))) from moved
          )
          select id, conversation_id, workspace_id, delivery_status from moved, (select count(*) from told) t`
      }
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
      /**
       * A receipt for a message, or for one part of a message sent in parts: that part's status moves, and the
       * message's moves to where every part stands (failed as soon as one part failed).
       */
      applyReceipt: (
        channelId: ChannelId,
        r: { providerMessageId: string; status: ReceiptStatus; at: Date; error: string | undefined }
      ) =>
        Effect.gen(function*() {
          const receipt = { channelId, status: r.status, at: r.at, error: r.error ?? null }
          // a message sent as one: one statement, as before parts were kept
          const direct = yield* applyReceipt({ ...receipt, match: { _tag: "ProviderId", id: r.providerMessageId } })
          if (Option.isSome(direct)) return direct
          const part = yield* MessagePartWrites.partReceipt(sql, { ...receipt, providerId: r.providerMessageId })
          if (part.length === 0) return Option.none()
          const messageId = part[0]!.message_id
          // the part's receipt is committed before the message's standing is read: of two parts' receipts at once, the
          // later read sees both parts; the message's row is locked while it moves
          return yield* Effect.gen(function*() {
            const status = (yield* MessagePartWrites.messageStatus(sql, messageId))[0]?.status ?? null
            if (status === null) return Option.none()
            return yield* applyReceipt({ ...receipt, status, match: { _tag: "MessageId", id: messageId } })
          }).pipe(sql.withTransaction)
        }).pipe(Effect.orDie),
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
