import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The current knowledge load (knowledge/Graph.ts): the points upserted since writes last paused and when
 * the last were written. A large load drops the HNSW graph and the keeper builds it once writes pause;
 * a row shared by every process, so a load through one process and the keeper in another agree.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create table knowledge_graph_load (
      id boolean primary key default true check (id),
      rows bigint not null,
      last_write_at timestamptz not null
    );
  `))
