import { HttpApiSchema, Multipart } from "@effect/platform"
import { Schema } from "effect"
import { FileEntryWithUrl } from "./Files.js"
import { ChannelId, PipelineId, StageId } from "./Ids.js"
import { ContactId, ConversationId, OpportunityId } from "./Opportunities.js"
import { all, Timestamp } from "./Schemas.js"

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

const Text = Schema.String.pipe(Schema.maxLength(10_000, { message: () => "may not be greater than 10000 characters" }))

/** Text only, as JSON. */
export const SendJson = Schema.Struct({
  message: Schema.optional(Schema.NullOr(Text)),
  files: Schema.optional(Schema.Null.annotations({ description: "Files need multipart/form-data" }))
}).annotations({ ...all, identifier: "SendMessage" })

/** Files (one `files[]` field per file) and an optional `message` field. */
export const SendMultipart = HttpApiSchema.Multipart(
  Schema.Struct({
    message: Schema.optional(Text),
    "files[]": Schema.optional(Multipart.FilesSchema),
    files: Schema.optional(Multipart.FilesSchema)
  }).annotations({ ...all, identifier: "SendMessageWithFiles" })
)

export const SendPayload = Schema.Union(SendMultipart, SendJson)
export type SendPayload = typeof SendPayload.Type
