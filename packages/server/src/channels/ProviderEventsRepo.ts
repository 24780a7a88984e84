/**
 * The SQL of what a provider says about messages the account sent (docs/channels.md, "Receipts" and "Echoes"):
 * receipts by message id or by watermark, which never move a delivery status backwards, and the account's echoes of
 * messages sent from elsewhere, kept once per provider id.
 */
import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { ChannelId, ConversationId, type ReceiptStatus, WorkspaceId } from "@parley/domain"
import { Effect, Option, Schema } from "effect"
import * as MessagePartWrites from "../tables/MessagePartWrites.js"
import * as MessageWrites from "../tables/MessageWrites.js"

/** A receipt applied: the message it moved, for the operators' socket. */
const ReceiptApplied = Schema.Struct({
  id: Schema.String,
  conversation_id: ConversationId,
  workspace_id: WorkspaceId,
  delivery_status: Schema.String
})

/** An echo kept: its message and conversation, for the operators' socket. */
const EchoStored = Schema.Struct({ id: Schema.String, conversation_id: ConversationId, workspace_id: WorkspaceId })

export interface Echo {
  readonly id: string
  readonly channelId: ChannelId
  readonly thread: string
  readonly providerMessageId: string
  readonly sentAt: Date
  readonly text: string
  readonly attachments: ReadonlyArray<Record<string, unknown>>
}

export class ProviderEventsRepo extends Effect.Service<ProviderEventsRepo>()("@parley/server/ProviderEventsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * A receipt moves `delivery_status` forwards only (sent, delivered, read; failed only from nothing or sent),
     * and fills its own timestamp once; a failure marks the message failed with the provider's error. The
     * workspace's event webhooks get `message.status`. `where` picks the account's messages it covers.
     */
    const moved = (
      r: { readonly status: string; readonly at: Date; readonly error: string | null },
      where: Statement.Fragment
    ) => {
      const { at, error, status } = r
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
          sql`where ${where}`
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

    const Receipt = Schema.Struct({
      channelId: ChannelId,
      status: Schema.String,
      at: Schema.DateFromSelf,
      error: Schema.NullOr(Schema.String)
    })

    /** One message: by the provider's id of it, or (a message of several parts) by ours. */
    const applyReceipt = SqlSchema.findOne({
      Request: Schema.Struct({
        ...Receipt.fields,
        match: Schema.Union(
          Schema.TaggedStruct("ProviderId", { id: Schema.String }),
          Schema.TaggedStruct("MessageId", { id: Schema.String })
        )
      }),
      Result: ReceiptApplied,
      execute: (r) =>
        moved(
          r,
          sql.and([
            sql`channel_id = ${r.channelId}`,
            sql`role = 'assistant'`,
            r.match._tag === "ProviderId"
              // a message sent in parts moves with its parts' receipts only (MessagePartWrites)
              ? sql`external_message_id = ${r.match.id} and not exists (select 1 from message_parts p where p.message_id = messages.id)`
              : sql`id = ${r.match.id}`
          ])
        )
    })

    /** Every message the account sent on the thread at or before the watermark (by our clock of storing it). */
    const applyWatermark = SqlSchema.findAll({
      Request: Schema.Struct({ ...Receipt.fields, thread: Schema.String, upTo: Schema.DateFromSelf }),
      Result: ReceiptApplied,
      execute: (r) =>
        moved(
          r,
          sql.and([
            sql`channel_id = ${r.channelId}`,
            sql`role = 'assistant'`,
            sql`conversation_id in (select id from conversations where channel_id = ${r.channelId} and external_chat_id = ${r.thread})`,
            // taken by the provider by then: a receipt may be the first word of a send (no `sent` receipt came)
            sql`status = 'sent_to_user' and coalesce(sent_at, created_at) <= ${r.upTo}`,
            sql`coalesce(array_position(array['sent', 'delivered', 'read'], delivery_status), 0)
                < array_position(array['sent', 'delivered', 'read'], ${r.status}::text)`
          ])
        )
    })

    /**
     * An echo of a message the account sent from elsewhere, on the conversation of its thread: an operator's message,
     * sent already, answered by nobody. Nothing when the id is stored (Parley's own send, or a retried webhook) or the
     * thread has no conversation.
     */
    const insertEcho = SqlSchema.findOne({
      Request: Schema.Any,
      Result: EchoStored,
      execute: (e: Echo) =>
        sql`
          with cv as (
            select c.id, c.workspace_id, c.contact_id, last.opportunity_id, last.stage_id, last.pipeline_id
            from conversations c
            left join lateral (select opportunity_id, stage_id, pipeline_id from messages
                               where conversation_id = c.id order by created_at desc, id desc limit 1) last on true
            where c.channel_id = ${e.channelId} and c.external_chat_id = ${e.thread}
            order by c.id limit 1
          )
          ${
          MessageWrites.insert(sql, {
            id: e.id,
            workspace_id: sql`cv.workspace_id`,
            conversation_id: sql`cv.id`,
            opportunity_id: sql`cv.opportunity_id`,
            contact_id: sql`cv.contact_id`,
            channel_id: e.channelId,
            stage_id: sql`cv.stage_id`,
            pipeline_id: sql`cv.pipeline_id`,
            role: "assistant",
            status: "sent_to_user",
            message: e.text,
            files: sql`'[]'::jsonb`,
            attachments: sql`${JSON.stringify(e.attachments)}::jsonb`,
            external_chat_id: e.thread,
            external_message_id: e.providerMessageId,
            call_type: "echo",
            is_manual: true,
            sender_id: null,
            delivery_status: "sent",
            sent_at: e.sentAt,
            provider_sent_at: e.sentAt
          })
        }
          from cv
          where not exists (select 1 from messages m where m.channel_id = ${e.channelId}
                              and m.external_message_id = ${e.providerMessageId})
            and not exists (select 1 from message_parts p where p.channel_id = ${e.channelId}
                              and p.provider_message_id = ${e.providerMessageId})
          on conflict (channel_id, external_message_id) where call_type = 'echo' do nothing
          returning id, conversation_id, workspace_id`
    })

    return {
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
      applyWatermark: (channelId: ChannelId, r: { thread: string; status: ReceiptStatus; upTo: Date }) =>
        applyWatermark({ channelId, thread: r.thread, status: r.status, at: r.upTo, upTo: r.upTo, error: null }).pipe(
          Effect.orDie
        ),
      insertEcho: (e: Echo) => insertEcho(e).pipe(Effect.orDie),
      /** Whether the thread has a conversation on the channel. */
      knownThread: (channelId: ChannelId, thread: string) =>
        sql<{ one: number }>`select 1 as one from conversations where channel_id = ${channelId}
                             and external_chat_id = ${thread} limit 1`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        )
    }
  })
}) {}
