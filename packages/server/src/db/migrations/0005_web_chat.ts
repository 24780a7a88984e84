import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Stored files and the receiver's idempotency keys. */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create table files (
      key text primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      channel_id bigint references channels (id) on delete set null,
      name text not null,
      mimetype text not null,
      size bigint not null,
      created_at timestamptz not null default now()
    );
    create index files_workspace_idx on files (workspace_id);

    create table idempotency_keys (
      channel_id bigint not null references channels (id) on delete cascade,
      key text not null,
      message_id text not null,
      created_at timestamptz not null default now(),
      primary key (channel_id, key)
    );
    -- a channel-specific id (web-chat contact_id) names one contact per workspace
    create unique index contacts_identifier_key on contacts (workspace_id, identifier) where identifier is not null;
    create index conversations_channel_chat_idx on conversations (channel_id, external_chat_id);
  `))
