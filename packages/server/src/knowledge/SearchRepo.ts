/**
 * The statements of a knowledge search (KnowledgeSearch.ts ranks what they find): the HNSW walk, the
 * bounded keyword side and the rows of the hits. Database failures are defects here.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"

/** Rows each keyword term may contribute before ranking: a rare term (a product code) brings all its rows. */
const TERM_CANDIDATES = 50
const KEYWORD_TOP = 50

/** A filterable column's value, compared as text: `data ->> column = value`. */
export type Filters = ReadonlyArray<readonly [string, string]>

const Strings = Schema.Array(Schema.String)
const FiltersSchema = Schema.Array(Schema.Tuple(Schema.String, Schema.String))

export const HitRow = Schema.Struct({
  id: Schema.String,
  default_id: Schema.String,
  knowledge_table_id: Schema.Number,
  table_name: Schema.String,
  data: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  text: Schema.String
})
export type HitRow = typeof HitRow.Type

export const TableModelRow = Schema.Struct({
  embedding_model_id: Schema.NullOr(Schema.Number),
  embedding_dimensions: Schema.NullOr(Schema.Number)
})
export type TableModelRow = typeof TableModelRow.Type

export class SearchRepo extends Effect.Service<SearchRepo>()("@parley/server/SearchRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const where = (filters: Filters) =>
      filters.length === 0 ? sql`` : sql`and ${sql.and(filters.map(([k, v]) => sql`p.data ->> ${k} = ${v}`))}`

    /**
     * For the rest of the transaction: ef_search for the HNSW walk; iterative scans, so that when a filter
     * (the table, filterable columns) rejects most of what the walk finds it walks on instead of returning
     * too few rows (relaxed order: the caller sorts); and custom plans, because the client's prepared
     * statements would otherwise settle on a generic plan that sorts every row of the table by distance
     * (it cannot see the limit or the table's size).
     */
    const settings = (efSearch: number) =>
      sql`select set_config('hnsw.ef_search', ${String(efSearch)}, true),
                 set_config('hnsw.iterative_scan', 'relaxed_order', true),
                 set_config('plan_cache_mode', 'force_custom_plan', true)`.pipe(Effect.asVoid, Effect.orDie)

    /** HNSW nearest neighbours by cosine distance, in the walk's (relaxed) order. */
    const vectorHits = SqlSchema.findAll({
      Request: Schema.Struct({
        tableId: Schema.Number,
        vector: Schema.String,
        filters: FiltersSchema,
        limit: Schema.Number
      }),
      Result: Schema.Struct({ id: Schema.String, distance: Schema.Number }),
      execute: ({ filters, limit, tableId, vector }) =>
        sql`
          select p.id::text as id, p.embedding <=> ${vector}::vector as distance from knowledge_points p
          where p.knowledge_table_id = ${tableId} and p.embedding is not null ${where(filters)}
          order by p.embedding <=> ${vector}::vector limit ${limit}`
    })

    /**
     * Nearest neighbours by an exact scan of the table's vectors of a provider model (any dimension, so no HNSW
     * graph: migration 0039); a vector of another dimension (the model changed what it returns) is left out.
     */
    const modelVectorHits = SqlSchema.findAll({
      Request: Schema.Struct({
        tableId: Schema.Number,
        vector: Schema.String,
        dimensions: Schema.Number,
        filters: FiltersSchema,
        limit: Schema.Number
      }),
      Result: Schema.Struct({ id: Schema.String, distance: Schema.Number }),
      execute: ({ dimensions, filters, limit, tableId, vector }) =>
        sql`
          select p.id::text as id, p.model_embedding <=> ${vector}::vector as distance from knowledge_points p
          where p.knowledge_table_id = ${tableId} and p.model_embedding is not null
            and vector_dims(p.model_embedding) = ${dimensions} ${where(filters)}
          order by 2 limit ${limit}`
    })

    /** The table's embedding model and its dimension (null: the server's embedder). */
    const tableModel = SqlSchema.findOne({
      Request: Schema.Number,
      Result: TableModelRow,
      execute: (tableId) =>
        sql`select embedding_model_id::int as embedding_model_id, embedding_dimensions from knowledge_tables
            where id = ${tableId}`
    })

    /**
     * The keyword side, bounded on common words: up to TERM_CANDIDATES rows holding every term, or, when
     * none does, up to TERM_CANDIDATES rows per term (so a rare term, a product code, brings all of its
     * rows); ranked with ts_rank_cd and cut to KEYWORD_TOP. `parts` are the terms as tsquery operands.
     */
    const keywordHits = SqlSchema.findAll({
      Request: Schema.Struct({ tableId: Schema.Number, terms: Strings, parts: Strings, filters: FiltersSchema }),
      Result: Schema.Struct({ id: Schema.String }),
      execute: ({ filters, parts, tableId, terms }) =>
        sql`
            with every_term as (
              -- the rows with every term: what someone typing several words means, and where each word
              -- alone is in too many rows for its first ones to be the right ones, the only way to find them
              select p.id from knowledge_points p where p.knowledge_table_id = ${tableId}
              and p.tsv @@ to_tsquery('simple', ${parts.join(" & ")}) ${where(filters)} limit ${TERM_CANDIDATES}
            ),
            cand as (
              select id from every_term
              union
              -- none has them all (a typo, an extra word): each term brings its own rows (a one-time filter:
              -- not read at all otherwise)
              select c.id from unnest(${`{${
          terms.map((t) => `"${t.replace(/["\\]/g, "")}"`).join(",")
        }}`}::text[]) as term,
              lateral (select p.id from knowledge_points p where p.knowledge_table_id = ${tableId}
                       and p.tsv @@ plainto_tsquery('simple', term) ${where(filters)} limit ${TERM_CANDIDATES}) c
              where not exists (select 1 from every_term)
            )
            select p.id::text as id from knowledge_points p join cand using (id)
            order by ts_rank_cd(p.tsv, to_tsquery('simple', ${parts.join(" | ")})) desc
            limit ${KEYWORD_TOP}`
    })

    const hitRows = SqlSchema.findAll({
      Request: Strings,
      Result: HitRow,
      execute: (ids) =>
        sql`
          select p.id::text as id, p.default_id, p.knowledge_table_id, t.name as table_name, p.data, p.text
          from knowledge_points p join knowledge_tables t on t.id = p.knowledge_table_id
          where p.id in ${sql.in(ids)}`
    })

    return {
      settings,
      vectorHits: (tableId: number, vector: string, filters: Filters, limit: number) =>
        vectorHits({ tableId, vector, filters, limit }).pipe(Effect.orDie),
      modelVectorHits: (tableId: number, vector: string, dimensions: number, filters: Filters, limit: number) =>
        modelVectorHits({ tableId, vector, dimensions, filters, limit }).pipe(Effect.orDie),
      tableModel: (tableId: number) => tableModel(tableId).pipe(Effect.orDie),
      keywordHits: (tableId: number, terms: ReadonlyArray<string>, parts: ReadonlyArray<string>, filters: Filters) =>
        keywordHits({ tableId, terms, parts, filters }).pipe(Effect.orDie),
      /** The rows of the hits, in no order. */
      hitRows: (ids: ReadonlyArray<string>) => hitRows(ids).pipe(Effect.orDie)
    }
  })
}) {}
