/**
 * A provider's customer service window (docs/channels.md): free-form messages only until `serviceWindowMs` after the
 * contact's latest message, by the provider's clock. One rule for the AI's replies, openings, followups and operator
 * sends, whatever the provider.
 */
import { Option } from "effect"
import type { ChannelProviders } from "./Providers.js"

/**
 * When the conversation's window closes (ms since the epoch; 0 when the contact never wrote), or none when its
 * channel's provider has no window.
 */
export const windowClosesAt = (
  providers: ChannelProviders,
  kind: string | null,
  contactSentAtMs: number | null
): Option.Option<number> =>
  Option.flatMap(providers.forKind(kind ?? ""), (entry) =>
    Option.map(
      Option.fromNullable(entry.provider.rules.serviceWindowMs),
      (windowMs) => contactSentAtMs === null ? 0 : contactSentAtMs + windowMs
    ))

/** Whether only a template may be sent now. */
export const windowClosed = (
  providers: ChannelProviders,
  kind: string | null,
  contactSentAtMs: number | null,
  now: number
) => Option.match(windowClosesAt(providers, kind, contactSentAtMs), { onNone: () => false, onSome: (at) => at < now })
