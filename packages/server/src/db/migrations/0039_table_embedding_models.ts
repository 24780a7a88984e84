import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A knowledge table may embed with a provider's embedding model (docs/api.md, "Embedding models"). Its
 * points then keep their vector in `model_embedding`, an untyped `vector`: a provider's dimension is whatever its
 * model returns, and HNSW needs a fixed one, so these vectors are compared by an exact scan of the table's rows
 * (the table's own index narrows the scan to its rows; linear in them, fine at the sizes tables have here). The
 * server's embedder keeps `embedding vector(256)` and its HNSW graph.
 *
 * Changing a table's model is a durable background job: the target and its failures are in the table row, the
 * new vectors go to `next_embedding` (the shadow column) until every point has one, then one statement swaps
 * them in. `embedding_dimensions` is 256 for the server's embedder, the model's own once it answered.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table knowledge_tables
      add column embedding_model_id bigint references ai_models (id),
      add column embedding_dimensions integer,
      add column reembedding boolean not null default false,
      add column reembed_model_id bigint references ai_models (id),
      add column reembed_dimensions integer,
      add column reembed_failures integer not null default 0,
      add column reembed_error text,
      add column reembed_retry_at timestamptz;
    update knowledge_tables set embedding_dimensions = 256;
    create index knowledge_tables_reembedding_idx on knowledge_tables (id) where reembedding;
    alter table knowledge_points
      add column model_embedding vector,
      add column next_embedding vector,
      add column next_embedding_key text;
  `))
