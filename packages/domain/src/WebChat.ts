import { Context, Schema, Struct } from "effect"
import { ValidationIssue } from "./Envelope.js"
import { Attachment, FileEntryWithUrl } from "./Files.js"
import { ChannelId, PipelineId, WorkspaceId } from "./Ids.js"
import { NoReplyReasonField } from "./NoReply.js"
import { ConversationId, Email, OpportunityId, Phone } from "./Opportunities.js"
import { all, IntFromQuery, maxChars, PageNumber, PerPage, Text, Timestamp } from "./Schemas.js"

/** The web channel behind a request's Basic credentials. */
export interface WebChannel {
  readonly id: ChannelId
  readonly workspace_id: WorkspaceId
  readonly pipeline_id: PipelineId | null
  readonly client_id: string
  readonly secret: string
  readonly callback_url: string | null
  readonly allowed_origins: ReadonlyArray<string>
  readonly allowed_ips: ReadonlyArray<string>
}
export class CurrentChannel extends Context.Tag("@parley/domain/CurrentChannel")<CurrentChannel, WebChannel>() {}

export const ContactKey = Schema.String.pipe(
  Schema.minLength(1, { message: () => "must not be empty" }),
  maxChars(255, { message: () => "may not be greater than 255 characters" })
)

export const InitiatePayload = Schema.Struct({
  contact_id: Schema.optional(ContactKey),
  name: Schema.optional(Text(255)),
  email: Schema.optional(Email),
  // the rule opportunity create applies (SPEC.md 4.1): normalised to digits with country code, or refused
  phone: Schema.optional(Schema.compose(Text(30), Phone))
}).annotations({ ...all, identifier: "InitiatePayload" })
export type InitiatePayload = typeof InitiatePayload.Type

/** SPEC.md 2.8. */
export class WebChatSession extends Schema.Class<WebChatSession>("WebChatSession")({
  contact_id: Schema.String,
  conversation_id: ConversationId,
  messages_webhook: Schema.String.annotations({
    description: "Receiver base URL: POST {messages_webhook}/web-chat/message"
  }),
  channel: Schema.String,
  token: Schema.String,
  socket_url: Schema.String,
  app_key: Schema.String,
  event: Schema.Literal("new_message")
}) {}

export const MessageRole = Schema.Literal("user", "assistant")

/** SPEC.md 2.4, as listed in the web-chat history. */
export class HistoryMessage extends Schema.Class<HistoryMessage>("HistoryMessage")({
  id: Schema.String,
  role: MessageRole,
  message: Schema.NullOr(Schema.String),
  status: Schema.String,
  files: Schema.Array(FileEntryWithUrl),
  attachments: Schema.Array(Attachment),
  conversation_id: ConversationId,
  opportunity_id: Schema.NullOr(OpportunityId),
  error: Schema.NullOr(Schema.String),
  sender_id: Schema.NullOr(Schema.Int),
  sender: Schema.Literal("contact", "ai", "operator").annotations({
    description: "Who wrote it: the contact, the AI agent, or an operator (a person of the team)"
  }),
  sender_name: Schema.NullOr(Schema.String).annotations({
    description: "An operator's message: the operator's display name, to show the contact who answers; null otherwise"
  }),
  external_message_id: Schema.NullOr(Schema.String).annotations({
    description: "The `message_id` your reply-webhook receiver answered for this reply (SPEC.md 6.2); null until then"
  }),
  no_reply_reason: NoReplyReasonField,
  created_at: Timestamp
}) {}

/**
 * The website widget's history record: the web-chat one without `no_reply_reason`, since a visitor has
 * no business learning that the workspace ran out of credits or its model has no key.
 */
export class VisitorMessage extends Schema.Class<VisitorMessage>("VisitorMessage")(
  Struct.omit(HistoryMessage.fields, "no_reply_reason")
) {}

export const HistoryQuery = Schema.Struct({
  conversation_id: Schema.optional(Schema.compose(IntFromQuery, ConversationId)),
  contact_id: Schema.optional(ContactKey),
  per_page: Schema.optionalWith(PerPage, { default: () => 10 }),
  page: Schema.optionalWith(PageNumber, { default: () => 1 })
}).pipe(
  Schema.filter((q) =>
    q.conversation_id === undefined && q.contact_id === undefined
      ? [
        { path: ["conversation_id"], message: "is required when contact_id is not present" },
        { path: ["contact_id"], message: "is required when conversation_id is not present" }
      ]
      : undefined
  )
).annotations(all)
export type HistoryQuery = typeof HistoryQuery.Type

/** The receiver's inbound message (SPEC.md 4.4); `files` arrive as multipart parts, or as stored paths in JSON. */
export const InboundJsonFile = Schema.Struct({
  path: Schema.String.pipe(maxChars(1024)),
  name: Schema.optional(Schema.String.pipe(maxChars(255)))
})

export const InboundMessage = Schema.Struct({
  contact_id: ContactKey,
  message: Schema.String.pipe(maxChars(10_000, { message: () => "may not be greater than 10000 characters" })),
  attachments: Schema.optional(Schema.Array(Attachment)),
  files: Schema.optional(Schema.Array(InboundJsonFile))
}).annotations({ ...all, identifier: "InboundMessage" })
export type InboundMessage = typeof InboundMessage.Type

/** The receiver's answer (SPEC.md 4.4): `{status, message, data}`, with the stored message's id on success. */
export const ReceiverAnswer = Schema.Struct({
  status: Schema.Boolean,
  message: Schema.String,
  data: Schema.NullOr(Schema.Struct({ message_id: Schema.String }))
})
export type ReceiverAnswer = typeof ReceiverAnswer.Type

/**
 * The receiver's refusal (SPEC.md 4.4), its 4xx: `{status: false, message, data}`, `data` naming the refused
 * fields when the refusal is about them (a 400 of validation), null otherwise.
 */
export const ReceiverRefusal = Schema.Struct({
  status: Schema.Literal(false),
  message: Schema.String,
  data: Schema.NullOr(Schema.Struct({ validation: Schema.Array(ValidationIssue) }))
})
export type ReceiverRefusal = typeof ReceiverRefusal.Type

export { ChannelId }
