import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A web source may sync itself on a schedule (issue 41): `daily` or `weekly` after its last sync, `off` (the default)
 * only on demand. The runner makes a due source `pending` as a requested sync would (knowledge/SourcesRepo.ts).
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table knowledge_sources add column sync text not null default 'off' check (sync in ('off', 'daily', 'weekly'));
    create index knowledge_sources_scheduled_idx on knowledge_sources (last_synced_at) where sync <> 'off';
  `))
