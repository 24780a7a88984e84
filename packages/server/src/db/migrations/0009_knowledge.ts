import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Knowledge tables (SPEC.md 2.6, 2.7, 4.3): typed columns, points with their rendered text, a
 * pgvector embedding of the searchable columns (HNSW, cosine) and a full-text vector of the same text
 * (GIN), usage counters, and which pipelines a table is attached to.
 *
 * Embeddings have 256 dimensions: the local hashing model produces 256, and OpenAI's
 * text-embedding-3 models are asked for 256 (their `dimensions` parameter).
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create table knowledge_tables (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      name text not null,
      description text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create unique index knowledge_tables_workspace_name_key on knowledge_tables (workspace_id, lower(name));

    create table knowledge_columns (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      knowledge_table_id bigint not null references knowledge_tables (id) on delete cascade,
      name text not null,
      data_type text not null check (data_type in ('string', 'number', 'boolean', 'date')),
      sort_order integer not null,
      is_searchable boolean not null default false,
      is_retrievable boolean not null default true,
      is_filterable boolean not null default false,
      is_unique boolean not null default false,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      unique (knowledge_table_id, name)
    );

    create table pipeline_knowledge_tables (
      pipeline_id bigint not null references pipelines (id) on delete cascade,
      knowledge_table_id bigint not null references knowledge_tables (id) on delete cascade,
      created_at timestamptz not null default now(),
      primary key (pipeline_id, knowledge_table_id)
    );
    create index pipeline_knowledge_tables_table_idx on pipeline_knowledge_tables (knowledge_table_id);

    create table knowledge_points (
      id uuid primary key default gen_random_uuid(),
      workspace_id bigint not null references workspaces (id) on delete cascade,
      knowledge_table_id bigint not null references knowledge_tables (id) on delete cascade,
      default_id text not null,
      data jsonb not null,
      -- every column, rendered "name: value" per line (SPEC.md 2.6 text)
      text text not null,
      -- the searchable columns: what is embedded and matched by keyword
      search_text text not null,
      tsv tsvector generated always as (to_tsvector('simple', search_text)) stored,
      embedding vector(256),
      -- model and text the embedding was made from: an unchanged row is not embedded again
      embedding_key text,
      used_count integer not null default 0,
      latest_time_used timestamptz,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      unique (knowledge_table_id, default_id)
    );
    create index knowledge_points_page_idx on knowledge_points (knowledge_table_id, id);
    create index knowledge_points_tsv_idx on knowledge_points using gin (tsv);
    create index knowledge_points_embedding_idx on knowledge_points using hnsw (embedding vector_cosine_ops);
  `))
