import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A reply that used knowledge rows appends one use per row here instead of updating the row's counter: a
 * popular row was a hot row every reply of a workspace waited on (its lock held until the reply's transaction
 * committed). knowledge/UsageFold.ts folds the uses into `knowledge_points.used_count` and `latest_time_used`
 * every few seconds; a listing adds the uses not folded yet, so what it shows is exact. No foreign key: a use
 * must never fail a reply whose row was deleted meanwhile; the fold drops uses of rows that are gone.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create table knowledge_point_uses (
      id bigserial primary key,
      point_id uuid not null,
      used_at timestamptz not null default now()
    );
    create index knowledge_point_uses_point on knowledge_point_uses (point_id);
  `))
