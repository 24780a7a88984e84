import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Every reply-webhook attempt (when, where, what came back, how long it took), and the table through
 * which @socket.io/postgres-adapter passes payloads larger than NOTIFY's 8000 bytes between api nodes.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create table webhook_deliveries (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      channel_id bigint not null references channels (id) on delete cascade,
      message_id text not null references messages (id) on delete cascade,
      run integer not null default 0,
      attempt integer not null,
      url text not null,
      status_code integer,
      duration_ms integer not null,
      error text,
      response_excerpt text,
      created_at timestamptz not null default now()
    );
    create index webhook_deliveries_channel_idx on webhook_deliveries (channel_id, created_at desc, id desc);
    create index webhook_deliveries_message_idx on webhook_deliveries (message_id);

    create table socket_io_attachments (
      id bigserial unique,
      created_at timestamptz default now(),
      payload bytea
    );
  `))
