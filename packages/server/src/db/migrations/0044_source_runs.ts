import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A knowledge source's sync as a durable workflow (issue 41): `sync_run` numbers the runs (the workflow's key is the
 * source and its run, so two runs of one source never overlap), `run_requested_at` is the request a run serves (one
 * asked for meanwhile runs again after it) and `dispatches` counts how often a stalled run was handed to the engine
 * again. `knowledge_source_pages` is a run's frontier: each page to read with its depth, then what came of it (the
 * points it made, or why it failed), so a run cut short resumes at the first page not yet read. `pages` is what a row counts for in the source's `pages`: one web page, or a file's pages.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table knowledge_sources add column sync_run integer not null default 0;
    alter table knowledge_sources add column run_requested_at timestamptz;
    alter table knowledge_sources add column dispatches integer not null default 0;
    create table knowledge_source_pages (
      source_id bigint not null references knowledge_sources (id) on delete cascade,
      run integer not null,
      seq integer not null,
      url text not null,
      depth integer not null,
      state text not null default 'queued' check (state in ('queued', 'done', 'failed')),
      fetched boolean not null default false,
      final_url text,
      point_ids text[] not null default '{}',
      pages integer not null default 1,
      error text,
      primary key (source_id, run, url)
    );
    create index knowledge_source_pages_next_idx on knowledge_source_pages (source_id, run, seq) where state = 'queued';
  `))
