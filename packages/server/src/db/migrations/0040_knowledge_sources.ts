import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Knowledge sources (issue 41): a file, a URL, a sitemap or a crawl whose chunks are points of a knowledge table.
 * The row is the durable state of its sync: `pending` until a runner claims it (`lease_until` lets another runner
 * take it again after a crash), `processing` with its `progress`, then `ready` or `failed` (the last good points
 * are kept). Its points are the table's with `default_id` `src{id}-{hash}`: no foreign key, deleted with the row
 * by the service (knowledge/Sources.ts) and with the table by its cascade.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create table knowledge_sources (
      id bigserial primary key,
      knowledge_table_id bigint not null references knowledge_tables (id) on delete cascade,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      kind text not null check (kind in ('file', 'url', 'sitemap', 'crawl')),
      name text not null,
      url text,
      file_path text,
      mimetype text,
      settings jsonb not null default '{}',
      status text not null default 'pending' check (status in ('pending', 'processing', 'ready', 'failed')),
      error text,
      points integer not null default 0,
      pages integer not null default 0,
      progress jsonb,
      sync_requested_at timestamptz,
      last_synced_at timestamptz,
      lease_until timestamptz,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create index knowledge_sources_table_idx on knowledge_sources (knowledge_table_id, id);
    create index knowledge_sources_due_idx on knowledge_sources (sync_requested_at)
      where status in ('pending', 'processing');
  `))
