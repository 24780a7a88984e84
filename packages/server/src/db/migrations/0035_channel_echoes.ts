import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Echoes (docs/channels.md, "Echoes"): a message a Messenger page or Instagram account sent from elsewhere is kept
 * once per provider id, even when Meta posts the same echo to two webhook deliveries at once.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create unique index messages_channel_echo on messages (channel_id, external_message_id)
      where call_type = 'echo';
  `))
