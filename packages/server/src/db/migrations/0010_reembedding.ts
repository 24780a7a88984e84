import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Which embedding model made each point's vector, and the model every point was last brought to: when
 * the configured model changes, a background job embeds the points again (knowledge/Reembed.ts).
 * Points from before this migration have no model recorded; the job recognises their embedding key.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table knowledge_points add column embedding_model text;
    create table knowledge_embedding_state (
      id boolean primary key default true check (id),
      model text not null,
      completed_at timestamptz not null default now()
    );
  `))
