/**
 * The one writer of `message_parts`: the parts of a message a provider took as several messages, each with its id
 * and its own receipt (docs/channels.md, "Receipts").
 */
import type { SqlClient } from "@effect/sql"
import type { ChannelId, ReceiptStatus } from "@parley/domain"

const RANKED = "array['sent', 'delivered', 'read']"

/**
 * The parts one send of a message of several parts got out, `from` being the first one's number (a message sent as
 * one has its id on the message alone). A part stored already (a repeated attempt) is kept.
 */
export const insertParts = (
  sql: SqlClient.SqlClient,
  p: {
    readonly messageId: string
    readonly channelId: ChannelId
    readonly from: number
    readonly ids: ReadonlyArray<string>
  }
) =>
  p.ids.length === 0
    ? sql`select 1`
    : sql`insert into message_parts (channel_id, provider_message_id, message_id, part)
          values ${sql.csv(p.ids.map((id, i) => sql`(${p.channelId}, ${id}, ${p.messageId}, ${p.from + i})`))}
          on conflict do nothing`

/** A receipt for one part, moving its status forwards only (failed only from nothing or sent); its message's id. */
export const partReceipt = (
  sql: SqlClient.SqlClient,
  r: { readonly channelId: ChannelId; readonly providerId: string; readonly status: ReceiptStatus }
) =>
  sql<{ message_id: string }>`
    update message_parts
    set delivery_status = case
      when ${r.status} = 'failed' and (delivery_status is null or delivery_status = 'sent') then 'failed'
      when delivery_status = 'failed' then delivery_status
      when coalesce(array_position(${sql.literal(RANKED)}, ${r.status}::text), 0)
         > coalesce(array_position(${sql.literal(RANKED)}, delivery_status), 0) then ${r.status}
      else delivery_status end
    where channel_id = ${r.channelId} and provider_message_id = ${r.providerId}
    returning message_id`

/**
 * Where a message of several parts stands: failed once a part failed, else the status every part has reached (none
 * while a part has had no receipt). Locks the message's row (run it in the transaction that moves the message), so
 * one part's receipt at a time moves it.
 */
export const messageStatus = (sql: SqlClient.SqlClient, messageId: string) =>
  sql<{ status: ReceiptStatus | null }>`
    with locked as (select id from messages where id = ${messageId} for update)
    select case
      when bool_or(delivery_status = 'failed') then 'failed'
      when bool_and(delivery_status is not null)
        then (${sql.literal(RANKED)})[min(array_position(${sql.literal(RANKED)}, delivery_status))]
      end as status
    from message_parts where message_id = (select id from locked)`
