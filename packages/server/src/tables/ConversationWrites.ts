/**
 * The one writer of `conversations`: every statement that opens a conversation or changes one is built here,
 * whichever repository runs it (docs/architecture.md, "Who writes each table"). The counters and the cost are
 * kept by the messages trigger (migrations 0004, 0014).
 */
import { insertInto, updateOf } from "./TableWrites.js"

export type ConversationColumn =
  | "workspace_id"
  | "contact_id"
  | "channel_id"
  | "external_chat_id"
  | "is_test"
  | "is_eval"
  | "status"
  | "notes"
  | "handoff_state"
  | "handoff_assignee_id"
  | "handoff_taken_at"
  | "handoff_requested_at"
  | "handoff_requested_by"
  | "handoff_returned_at"
  | "handoff_reason"
  | "handoff_return_note"
  | "handoff_returned_upto"
  | "handoff_due_at"
  | "handoff_summary"
  | "updated_at"

/** `insert into conversations (...) select ...`: the caller's statement adds `returning`. */
export const insert = insertInto<ConversationColumn>("conversations")

/** `update conversations set ...` and the caller's `where`. */
export const update = updateOf<ConversationColumn>("conversations")
