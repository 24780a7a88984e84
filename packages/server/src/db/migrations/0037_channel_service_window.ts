import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A channel's own service window (docs/channels.md, "The channel layer"): how long after the contact's latest message
 * free-form messages may be sent, set from the adapter when the channel is connected, since it may depend on the
 * credentials (a Twilio WhatsApp sender has WhatsApp's 24 hours, an SMS number none). Null: no window.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table channels add column service_window_ms bigint;
    update channels set service_window_ms = 86400000 where kind in ('whatsapp', 'messenger', 'instagram');
  `))
