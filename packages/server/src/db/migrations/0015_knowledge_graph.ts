import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The HNSW graph of knowledge points built with a longer candidate list (`ef_construction` 128;
 * pgvector's default 64), neighbours per node unchanged (`m` 16). On 100,000 points of the knowledge
 * bench, recall@5 against exact search at `ef_search` 1000 rises from 0.95 to 0.97 at the same search
 * latency; an insert costs about a quarter more (docs/benchmarks.md). The index over existing points is
 * rebuilt here, once: about four minutes per 100,000 points on the embedded database.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    set maintenance_work_mem = '256MB';
    drop index if exists knowledge_points_embedding_idx;
    create index knowledge_points_embedding_idx on knowledge_points using hnsw (embedding vector_cosine_ops)
      with (ef_construction = 128);
    reset maintenance_work_mem;
  `))
