import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * How a knowledge table's sources are cut into chunks (issue 41): at most `chunk_size` characters a chunk, the last
 * `chunk_overlap` of one repeated at the start of the next. The defaults are knowledge/Chunker.ts's
 * DEFAULT_CHUNK_OPTIONS; the bounds are the API's (domain Knowledge.ts), kept here too so no row holds a size the
 * Chunker would misread.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table knowledge_tables
      add column chunk_size integer not null default 1200 check (chunk_size between 200 and 8000),
      add column chunk_overlap integer not null default 150
        check (chunk_overlap >= 0 and chunk_overlap * 2 <= chunk_size);
  `))
