import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A denser HNSW graph for knowledge points: 32 neighbours per node (pgvector's default 16) and a
 * candidate list of 128 while building (default 64). On 100,000 points of the knowledge bench, served
 * recall@5 against exact search was 0.769 (0.892 counting rows at the exact 5th distance) on the old graph
 * at ef_search 200, and is 0.929 (0.980) on this one at 250; a search step costs about twice as much and
 * an insert more (docs/benchmarks.md). The index over existing points is rebuilt here, once: about six
 * minutes per 100,000 points on the embedded database.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    set maintenance_work_mem = '256MB';
    drop index if exists knowledge_points_embedding_idx;
    create index knowledge_points_embedding_idx on knowledge_points using hnsw (embedding vector_cosine_ops)
      with (m = 32, ef_construction = 128);
    reset maintenance_work_mem;
  `))
