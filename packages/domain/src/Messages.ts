import { HttpApiSchema, Multipart } from "@effect/platform"
import { Schema } from "effect"
import { FileEntryWithUrl } from "./Files.js"
import { ChannelId, PipelineId, StageId } from "./Ids.js"
import { NoReplyReasonField } from "./NoReply.js"
import { ContactId, ConversationId, OpportunityId } from "./Opportunities.js"
import { all, maxChars, Timestamp } from "./Schemas.js"
import { StorableString } from "./StorableText.js"
import { MessageTemplate } from "./Templates.js"

export const MAX_OPERATOR_FILES = 10
export const MAX_OPERATOR_FILE_BYTES = 25 * 1024 * 1024

/** SPEC.md 2.4: the record the send endpoint answers with. */
export class MessageRecord extends Schema.Class<MessageRecord>("MessageRecord")({
  _id: Schema.String,
  role: Schema.Literal("user", "assistant"),
  status: Schema.String.annotations({ description: "`sent_to_user`, `failed`, or transiently `created_manually`" }),
  message: Schema.NullOr(Schema.String),
  files: Schema.Array(FileEntryWithUrl),
  cost_for_user: Schema.Number,
  external_chat_id: Schema.NullOr(Schema.String),
  conversation_id: ConversationId,
  opportunity_id: Schema.NullOr(OpportunityId),
  contact_id: Schema.NullOr(ContactId),
  channel_id: Schema.NullOr(ChannelId),
  stage_id: Schema.NullOr(StageId),
  pipeline_id: Schema.NullOr(PipelineId),
  call_type: Schema.NullOr(Schema.String),
  sender_id: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String),
  external_message_id: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

const Text = StorableString.pipe(maxChars(10_000, { message: () => "may not be greater than 10000 characters" }))

/** Text only, as JSON. */
export const SendJson = Schema.Struct({
  message: Schema.optional(Schema.NullOr(Text)),
  template: Schema.optional(MessageTemplate).annotations({
    description:
      "An approved template instead of `message` (WhatsApp, required once the service window closed): name, language, body parameters"
  }),
  files: Schema.optional(Schema.Null.annotations({ description: "Files need multipart/form-data" }))
}).annotations({ ...all, identifier: "SendMessage" })

/** Files (one `files[]` field per file) and an optional `message` field. */
export const SendMultipart = HttpApiSchema.Multipart(
  Schema.Struct({
    message: Schema.optional(Text),
    "files[]": Schema.optional(Multipart.FilesSchema),
    files: Schema.optional(Multipart.FilesSchema),
    // a template is sent as JSON (SendJson): a JSON body with one must not match this member, which ignores extras
    template: Schema.optional(Schema.Undefined).annotations({ description: "Templates need application/json" })
  }).annotations({ ...all, identifier: "SendMessageWithFiles" })
)

export const SendPayload = Schema.Union(SendMultipart, SendJson)
export type SendPayload = typeof SendPayload.Type

/** One message as `list_messages` (SPEC.md 4.5) returns it, newest first. */
export class MessageEntry extends Schema.Class<MessageEntry>("MessageEntry")({
  id: Schema.String,
  conversation_id: ConversationId,
  opportunity_id: Schema.NullOr(OpportunityId),
  contact_id: Schema.NullOr(ContactId),
  pipeline_id: Schema.NullOr(PipelineId),
  stage_id: Schema.NullOr(StageId),
  channel_id: Schema.NullOr(ChannelId),
  role: Schema.Literal("user", "assistant"),
  message: Schema.NullOr(Schema.String),
  status: Schema.String,
  is_manual: Schema.Boolean,
  call_type: Schema.NullOr(Schema.String),
  cost_for_user: Schema.Number,
  external_message_id: Schema.NullOr(Schema.String).annotations({
    description: "The `message_id` the reply-webhook receiver answered for this reply (SPEC.md 6.2)"
  }),
  no_reply_reason: NoReplyReasonField,
  created_at: Timestamp
}) {}

export class MessagesPage extends Schema.Class<MessagesPage>("MessagesPage")({
  messages: Schema.Array(MessageEntry),
  next_cursor: Schema.NullOr(Schema.String).annotations({
    description: "Pass back as `cursor` for the next page; null on the last"
  })
}) {}

export interface MessagesFilter {
  readonly pipelineId?: number | undefined
  readonly contactId?: number | undefined
  readonly role?: "user" | "assistant" | undefined
  readonly start?: Date | undefined
  /** Exclusive when `endExclusive` (a bare end date covers its whole day). */
  readonly end?: Date | undefined
  readonly endExclusive?: boolean | undefined
  readonly cursor?: MessagesCursor | undefined
  readonly limit: number
}

/** Where a page of messages (newest first) ended: the last message's time and id. */
export interface MessagesCursor {
  readonly createdAt: string
  readonly id: string
}

/** Opaque to clients: base64url of `<created_at>|<id>`. */
export const encodeMessagesCursor = (c: MessagesCursor): string =>
  Buffer.from(`${c.createdAt}|${c.id}`, "utf8").toString("base64url")

export const decodeMessagesCursor = (s: string): MessagesCursor | undefined => {
  const text = Buffer.from(s, "base64url").toString("utf8")
  const bar = text.indexOf("|")
  if (bar <= 0) return undefined
  const createdAt = text.slice(0, bar)
  const id = text.slice(bar + 1)
  return Number.isNaN(Date.parse(createdAt)) || id.length === 0 ? undefined : { createdAt, id }
}
