/**
 * The one writer of `messages`: every statement that stores a message or changes one is built here, whichever
 * repository runs it (docs/architecture.md, "Who writes each table").
 */
import type {
  ChannelId,
  ContactId,
  ConversationId,
  FileEntry,
  OpportunityId,
  PipelineId,
  StageId,
  WorkspaceId
} from "@parley/domain"
import { insertInto, updateOf } from "./TableWrites.js"

/** A message's place on its thread, as an inbound path stores it: what the web chat's and a provider's share. */
export interface ThreadMessage {
  readonly id: string
  readonly workspace_id: WorkspaceId
  readonly conversation_id: ConversationId
  readonly opportunity_id: OpportunityId | null
  readonly contact_id: ContactId
  readonly channel_id: ChannelId
  readonly stage_id: StageId | null
  readonly pipeline_id: PipelineId | null
  readonly files: ReadonlyArray<FileEntry>
  readonly attachments: ReadonlyArray<unknown>
  readonly external_chat_id: string
  readonly call_type: string
}

export type MessageColumn =
  | "id"
  | "workspace_id"
  | "conversation_id"
  | "opportunity_id"
  | "contact_id"
  | "channel_id"
  | "stage_id"
  | "pipeline_id"
  | "role"
  | "status"
  | "message"
  | "files"
  | "attachments"
  | "external_chat_id"
  | "external_message_id"
  | "call_type"
  | "is_manual"
  | "sender_id"
  | "cost_for_user"
  | "ai_model_id"
  | "model"
  | "input_tokens"
  | "output_tokens"
  | "in_reply_to"
  | "error"
  | "followup_sequence_id"
  | "followup_step"
  | "handoff_event_id"
  | "handled_at"
  | "handled_reason"
  | "updated_at"
  | "delivery_status"
  | "sent_at"
  | "delivered_at"
  | "read_at"
  | "failed_at"
  | "provider_sent_at"
  | "template"
  | "provider_parts_sent"
  | "citations"

/** `insert into messages (...) select ...`: the caller's statement adds `from`, `where`, `on conflict`, `returning`. */
export const insert = insertInto<MessageColumn>("messages")

/** `update messages set ...` and the caller's `where`. */
export const update = updateOf<MessageColumn>("messages")
