import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Channels behind provider adapters (docs/channels.md): a provider channel keeps its credentials encrypted as one
 * JSON document and is reached on the receiver at `/channels/{webhook_key}/webhook`; a revoked token disconnects
 * it until its credentials are replaced. Messages keep the provider's receipts (`delivery_status` and a timestamp
 * per step, never moving backwards) and, for a contact's message, when the provider says it was sent: a service
 * window counts from there. A provider's message id is stored once per channel, however often the webhook is
 * retried. What a provider posted that we could not use is recorded in `channel_events`. A simulated channel talks to
 * the provider simulator Parley ships (docs/channels.md, "Try it without an account").
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table channels
      add column credentials_ciphertext text,
      add column webhook_key text,
      add column status text not null default 'connected' check (status in ('connected', 'disconnected')),
      add column status_reason text,
      add column rate_per_second integer check (rate_per_second > 0),
      add column is_simulated boolean not null default false;
    create unique index channels_webhook_key on channels (webhook_key) where webhook_key is not null;

    alter table messages
      add column delivery_status text check (delivery_status in ('sent', 'delivered', 'read', 'failed')),
      add column sent_at timestamptz,
      add column delivered_at timestamptz,
      add column read_at timestamptz,
      add column failed_at timestamptz,
      add column provider_sent_at timestamptz;
    create unique index messages_provider_inbound on messages (channel_id, external_message_id)
      where role = 'user' and external_message_id is not null;
    create index messages_provider_outbound on messages (channel_id, external_message_id)
      where role = 'assistant' and external_message_id is not null;

    -- a channel's sending pace, shared by every process of a cluster: the next free slot (reserved in order) and
    -- when the last send went out (no two closer than the rate allows)
    create table channel_send_pace (
      channel_id bigint primary key references channels (id) on delete cascade,
      next_at timestamptz not null,
      last_sent_at timestamptz
    );

    create table channel_events (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      channel_id bigint not null references channels (id) on delete cascade,
      kind text not null,
      reason text not null,
      detail jsonb,
      created_at timestamptz not null default now()
    );
    create index channel_events_channel on channel_events (channel_id, created_at desc, id desc);
  `))
