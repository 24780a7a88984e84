/**
 * A channel's customer service window (docs/channels.md): free-form messages only until the channel's
 * `service_window_ms` after the contact's latest message, by the provider's clock. One rule for the AI's replies,
 * openings, followups and operator sends, whatever the provider. The window is the channel's, set from its adapter
 * when it is connected: a Twilio number has none, its WhatsApp sender has WhatsApp's 24 hours.
 */
import type { SqlClient } from "@effect/sql"
import { Option } from "effect"

/** What a statement reads of a conversation's window (`windowColumns`). */
export interface ChannelWindow {
  /** The channel's window (ms); null: none (the web chat, Telegram, SMS, email). */
  readonly service_window_ms: number | null
  /** When the contact's latest message was sent (ms since the epoch); null: the contact never wrote. */
  readonly contact_sent_at_ms: number | null
}

/**
 * When the conversation's window closes (ms since the epoch; 0 when the contact never wrote), or none when its channel
 * has no window. `extendedMs`: a longer window an operator has (Messenger's HUMAN_AGENT tag: 7 days).
 */
export const windowClosesAt = (w: ChannelWindow, extendedMs?: number): Option.Option<number> =>
  w.service_window_ms === null
    ? Option.none()
    : Option.some(
      w.contact_sent_at_ms === null ? 0 : w.contact_sent_at_ms + Math.max(w.service_window_ms, extendedMs ?? 0)
    )

/** Whether only a template may be sent now. */
export const windowClosed = (w: ChannelWindow, now: number) =>
  Option.match(windowClosesAt(w), { onNone: () => false, onSome: (at) => at < now })

/**
 * SQL: when the contact's latest message on conversation `c` was sent by the provider's clock (ms since the epoch,
 * float8), when its channel `ch` is a provider channel with credentials; else null. `c` and `ch` are the aliases of
 * the statement's `conversations` and `channels`.
 */
export const contactSentAtMs = (sql: SqlClient.SqlClient, c = "c", ch = "ch") =>
  sql.literal(`case when ${ch}.credentials_ciphertext is not null then
    (select extract(epoch from max(m.provider_sent_at)) * 1000 from messages m
     where m.conversation_id = ${c}.id and m.role = 'user')::float8 end`)

/** SQL: the columns of `ChannelWindow`, over the aliases `c` and `ch` as `contactSentAtMs` takes them. */
export const windowColumns = (sql: SqlClient.SqlClient, c = "c", ch = "ch") =>
  sql`${contactSentAtMs(sql, c, ch)} as contact_sent_at_ms,
      ${sql.literal(`case when ${ch}.credentials_ciphertext is not null then ${ch}.service_window_ms::float8 end`)}
        as service_window_ms`
