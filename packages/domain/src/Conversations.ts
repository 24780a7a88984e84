/**
 * Conversations as an operator reads them (`GET /api/user/conversations`, its messages, read markers):
 * the shapes the REST API, the MCP tools and the console share.
 */
import { Schema } from "effect"
import { ChannelKind } from "./Channels.js"
import { MessageCitation } from "./Citations.js"
import { FileEntryWithUrl } from "./Files.js"
import { Handoff, HandoffEvent, HandoffState } from "./Handoff.js"
import { ChannelId, IdFromString, PipelineId, StageId, UserId, WorkspaceId } from "./Ids.js"
import { NoReplyReasonField } from "./NoReply.js"
import { ContactId, ConversationId, ConversationStatus, OpportunityId } from "./Opportunities.js"
import { DeliveryStatus } from "./ports/ChannelProvider.js"
import { all, maxChars, PerPage, Timestamp } from "./Schemas.js"

/** `true`/`false` (also `1`/`0`) in a query string. */
const BooleanParam = Schema.transform(Schema.Literal("true", "false", "1", "0"), Schema.Boolean, {
  strict: true,
  decode: (v) => v === "true" || v === "1",
  encode: (b) => (b ? "true" : "false")
})

/**
 * `activity`: newest activity first. `queue`: an operator's work list: conversations waiting for a person
 * (longest waiting first), then those the caller has (newest activity first), then the rest (the same).
 */
export const ConversationsOrder = Schema.Literal("activity", "queue")
export type ConversationsOrder = typeof ConversationsOrder.Type

const Cursor = Schema.String.pipe(maxChars(200)).annotations({ description: "`next_cursor` of the previous page" })

export const ListConversationsQuery = Schema.Struct({
  workspace_id: Schema.optional(IdFromString(WorkspaceId)).annotations({
    description:
      "Only this workspace's conversations (one you own or manage; another is 404); default: every workspace you reach"
  }),
  pipeline_id: Schema.optional(IdFromString(PipelineId)),
  channel_id: Schema.optional(IdFromString(ChannelId)),
  channel_kind: Schema.optional(ChannelKind).annotations({
    description: "Only conversations on channels of this kind (`whatsapp`, `telegram`, `web`, ...)"
  }),
  status: Schema.optional(ConversationStatus),
  handoff: Schema.optional(HandoffState),
  assignee_id: Schema.optional(IdFromString(UserId)),
  opportunity_id: Schema.optional(IdFromString(OpportunityId)),
  stage_id: Schema.optional(IdFromString(StageId)).annotations({
    description: "Only conversations whose current opportunity is in this stage"
  }),
  contact_id: Schema.optional(IdFromString(ContactId)),
  q: Schema.optional(Schema.String.pipe(maxChars(255))).annotations({
    description: "Part of the contact's name, email, phone or identifier, or of a message's text"
  }),
  unread: Schema.optional(BooleanParam).annotations({
    description: "`true`: only conversations with contact messages the caller has not read"
  }),
  order: Schema.optional(ConversationsOrder).annotations({
    description:
      "`activity` (default): newest activity first. `queue`: waiting for a person first (longest waiting first), then those assigned to the caller, then the rest (newest activity first each)"
  }),
  cursor: Schema.optional(Cursor),
  per_page: Schema.optionalWith(PerPage, { default: () => 25 })
}).annotations(all)
export type ListConversationsQuery = typeof ListConversationsQuery.Type

export const ConversationContact = Schema.Struct({
  id: ContactId,
  name: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  phone: Schema.NullOr(Schema.String),
  identifier: Schema.NullOr(Schema.String)
})

export const ConversationOpportunity = Schema.Struct({
  id: OpportunityId,
  name: Schema.NullOr(Schema.String),
  pipeline_id: PipelineId,
  stage_id: Schema.NullOr(StageId),
  stage_name: Schema.NullOr(Schema.String),
  stage_nature: Schema.NullOr(Schema.Literal("neutral", "won", "lost")),
  status: Schema.String
})

/** One row of the conversation list. */
export class ConversationListItem extends Schema.Class<ConversationListItem>("ConversationListItem")({
  id: ConversationId,
  workspace_id: Schema.Number,
  status: ConversationStatus,
  is_test: Schema.Boolean,
  channel_id: Schema.NullOr(ChannelId),
  channel_kind: Schema.NullOr(Schema.String),
  contact: ConversationContact,
  opportunity: Schema.NullOr(ConversationOpportunity).annotations({
    description: "The conversation's current (newest) opportunity"
  }),
  handoff: Handoff,
  last_message_at: Schema.NullOr(Timestamp),
  last_message_preview: Schema.NullOr(Schema.String).annotations({
    description:
      "The contact's last message (200 characters), whatever came after it; the last message when the contact has written nothing"
  }),
  reply_failed: Schema.Boolean.annotations({
    description:
      "The agent could not answer the contact's last message (its provider failed, or the output guard withheld the reply)"
  }),
  messages_count: Schema.Number,
  unread_count: Schema.Number.annotations({ description: "Contact messages newer than the caller's read marker" }),
  created_at: Timestamp
}) {}

export class ConversationsPage extends Schema.Class<ConversationsPage>("ConversationsPage")({
  conversations: Schema.Array(ConversationListItem),
  next_cursor: Schema.NullOr(Schema.String).annotations({
    description: "Pass back as `cursor` for the next page; null on the last"
  })
}) {}

/** `GET /api/user/conversations/{id}`: the row, its notes, costs and the handoff history. */
export class ConversationDetail extends ConversationListItem.extend<ConversationDetail>("ConversationDetail")({
  notes: Schema.Array(Schema.String),
  cost_for_user: Schema.Number,
  avg_response_time: Schema.Number,
  handoff_events: Schema.Array(HandoffEvent),
  service_window_closes_at: Schema.NullOr(Timestamp).annotations({
    description:
      "On a channel whose provider allows free-form messages only for a while after the contact's latest message (WhatsApp: 24 hours): when that ends (in the past once closed: only a template may be sent). Null on other channels"
  })
}) {}

/** One attempt of the signed reply webhook for a message. */
export const DeliveryAttempt = Schema.Struct({
  attempt: Schema.Number,
  url: Schema.String,
  status_code: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.String),
  duration_ms: Schema.Number,
  created_at: Timestamp
})

/** A message as an operator reads it: who wrote it, what came of it. */
export class ConversationMessage extends Schema.Class<ConversationMessage>("ConversationMessage")({
  id: Schema.String,
  conversation_id: ConversationId,
  role: Schema.Literal("user", "assistant"),
  sender: Schema.Literal("contact", "ai", "operator").annotations({
    description:
      "`contact` for the contact's messages, `operator` for a person's (sender_id says who), `ai` for the agent's"
  }),
  sender_id: Schema.NullOr(UserId),
  message: Schema.NullOr(Schema.String),
  files: Schema.Array(FileEntryWithUrl),
  status: Schema.String,
  call_type: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  no_reply_reason: NoReplyReasonField,
  external_message_id: Schema.NullOr(Schema.String),
  cost_for_user: Schema.Number,
  delivery_status: Schema.NullOr(DeliveryStatus).annotations({
    description:
      "A provider channel's receipts (docs/channels.md): `sent`, `delivered`, `read`, or `failed`; null before the first and on web channels"
  }),
  delivered_at: Schema.NullOr(Timestamp),
  read_at: Schema.NullOr(Timestamp),
  deliveries: Schema.Array(DeliveryAttempt).annotations({ description: "Reply-webhook attempts, oldest first" }),
  citations: Schema.optional(Schema.Array(MessageCitation)).annotations({
    description:
      "On an AI reply that was given knowledge points: each point (table, `point_id`) and, for a source's, its title, URL or file name and page"
  }),
  created_at: Timestamp
}) {}

export const MessagesDirection = Schema.Literal("older", "newer")

export const ConversationMessagesQuery = Schema.Struct({
  cursor: Schema.optional(Cursor),
  direction: Schema.optionalWith(MessagesDirection, { default: () => "older" as const }).annotations({
    description:
      "`older` (default): newest first, then older pages. `newer`: oldest first from the cursor, for catching up"
  }),
  per_page: Schema.optionalWith(PerPage, { default: () => 50 })
}).annotations(all)
export type ConversationMessagesQuery = typeof ConversationMessagesQuery.Type

export class ConversationMessagesPage extends Schema.Class<ConversationMessagesPage>("ConversationMessagesPage")({
  messages: Schema.Array(ConversationMessage),
  next_cursor: Schema.NullOr(Schema.String).annotations({
    description: "The next page in the same direction; null when there is none"
  })
}) {}

export class ReadMarker extends Schema.Class<ReadMarker>("ReadMarker")({
  conversation_id: ConversationId,
  read_at: Timestamp,
  unread_count: Schema.Number
}) {}
