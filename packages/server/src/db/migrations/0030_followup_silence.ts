import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Followups count silence from the last message sent to the contact (docs/agent.md, "Followups"): the anchor moves
 * to each message sent, and a contact's message pauses the sequence until the next one. A paused sequence's
 * workflow waits on a durable deferred whose name is kept here; the sweep completes it once a message has been sent
 * to the contact again.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table followup_sequences add column resume_deferred text;
    create index followup_sequences_paused on followup_sequences (conversation_id)
      where status = 'running' and resume_deferred is not null;
  `))
