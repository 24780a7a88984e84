/**
 * A link that starts a contact's chat on a channel already tied to that contact (docs/channels.md, "Links to a
 * known contact"): Telegram's `t.me/{bot}?start={token}`. The token is Parley's, signed, and names the contact.
 */
import { Schema } from "effect"
import { ContactId } from "./Opportunities.js"
import { Timestamp } from "./Schemas.js"

export const CreateChannelLink = Schema.Struct({
  contact_id: ContactId.annotations({ description: "The contact the chat started by the link belongs to" })
})

export class ChannelLink extends Schema.Class<ChannelLink>("ChannelLink")({
  /** Where the contact taps to start the chat (`https://t.me/{bot username}?start={token}`). */
  url: Schema.String,
  /** Parley's signed token in the link (64 characters at most, as Telegram's `start` parameter allows). */
  token: Schema.String,
  contact_id: ContactId,
  expires_at: Timestamp
}) {}
