import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The parts of a message a provider took as several messages (a text over its limit): each part's id at the provider
 * and its own receipt, so a receipt for any part counts, and the message is delivered or read once every part is,
 * and failed when one part failed (docs/channels.md, "Receipts"). A message sent as one has no rows here.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create table message_parts (
      channel_id bigint not null references channels (id) on delete cascade,
      provider_message_id text not null,
      message_id text not null references messages (id) on delete cascade,
      part integer not null,
      delivery_status text check (delivery_status in ('sent', 'delivered', 'read', 'failed')),
      primary key (channel_id, provider_message_id)
    );
    create index message_parts_message on message_parts (message_id);
  `))
