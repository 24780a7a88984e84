/**
 * A provider's customer service window (docs/channels.md): free-form messages only until `serviceWindowMs` after the
 * contact's latest message, by the provider's clock. One rule for the AI's replies, openings, followups and operator
 * sends, whatever the provider.
 */
import type { SqlClient } from "@effect/sql"
import { Option } from "effect"
import type { ChannelProviders } from "./Providers.js"

/**
 * When the conversation's window closes (ms since the epoch; 0 when the contact never wrote), or none when its
 * channel's provider has no window.
 */
export const windowClosesAt = (
  providers: ChannelProviders,
  kind: string | null,
  contactSentAtMs: number | null,
  /** an operator's message may have a longer window (Messenger's HUMAN_AGENT tag) */
  sender: "ai" | "operator" = "ai"
): Option.Option<number> =>
  Option.flatMap(providers.forKind(kind ?? ""), (entry) =>
    Option.map(
      Option.fromNullable(entry.provider.rules.serviceWindowMs),
      (windowMs) =>
        contactSentAtMs === null
          ? 0
          : contactSentAtMs +
            (sender === "operator" ? Math.max(windowMs, entry.provider.rules.operatorWindowMs ?? 0) : windowMs)
    ))

/** Whether the channel kind's provider has a service window at all. */
export const hasWindow = (providers: ChannelProviders, kind: string | null) =>
  Option.isSome(windowClosesAt(providers, kind, null))

/** Whether only a template may be sent now. */
export const windowClosed = (
  providers: ChannelProviders,
  kind: string | null,
  contactSentAtMs: number | null,
  now: number
) => Option.match(windowClosesAt(providers, kind, contactSentAtMs), { onNone: () => false, onSome: (at) => at < now })

/**
 * SQL: when the contact's latest message on conversation `c` was sent by the provider's clock (ms since the epoch,
 * float8), when its channel `ch` is a provider channel with credentials; else null. `c` and `ch` are the aliases of
 * the statement's `conversations` and `channels`.
 */
export const contactSentAtMs = (sql: SqlClient.SqlClient, c = "c", ch = "ch") =>
  sql.literal(`case when ${ch}.credentials_ciphertext is not null then
    (select extract(epoch from max(m.provider_sent_at)) * 1000 from messages m
     where m.conversation_id = ${c}.id and m.role = 'user')::float8 end`)
