/**
 * SQL of knowledge tables, their columns and points, and of which pipelines they are attached to: the only
 * writer of `knowledge_tables`, `knowledge_columns`, `knowledge_points` and `pipeline_knowledge_tables`.
 * Reads that take `workspaceIds` see only those workspaces' tables. The search's own statements are in
 * SearchRepo.ts. Database failures are defects here.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { KnowledgeColumn, KnowledgePoint, KnowledgeTableId, KnowledgeTableWithColumns } from "@parley/domain"
import { Effect, Schema } from "effect"
import { type ChunkOptions, DEFAULT_CHUNK_OPTIONS } from "./Chunker.js"

const Ids = Schema.Array(Schema.Number)
const Data = Schema.Record({ key: Schema.String, value: Schema.Unknown })
const In = Schema.Struct({ id: Schema.Number, workspaceIds: Ids })

/**
 * A table's workspace and columns, and the embedding models of its vectors (the current one, and the one a
 * re-embedding moves to): what validating a write or a search needs.
 */
export const TableColumns = Schema.Struct({
  workspace_id: Schema.Number,
  columns: Schema.Array(KnowledgeColumn),
  embedding_model_id: Schema.NullOr(Schema.Number),
  embedding_dimensions: Schema.NullOr(Schema.Number),
  reembedding: Schema.Boolean,
  reembed_model_id: Schema.NullOr(Schema.Number)
})
export type TableColumns = typeof TableColumns.Type

/** A point as an upsert finds it before writing: what it had, and the key of the text it was embedded from. */
export const StoredPoint = Schema.Struct({
  default_id: Schema.String,
  data: Data,
  embedding_key: Schema.NullOr(Schema.String)
})

/**
 * A point as an upsert writes it; `embedding` (the server's embedder) in millionths (Embedder.toMillionths),
 * `model_embedding` (a provider model's, any dimension) and `next_embedding` (the model a re-embedding moves to)
 * as vector literals; null keeps the stored one (`next_embedding` only while the searchable text is unchanged).
 */
export interface PointWrite {
  readonly default_id: string
  readonly data: Record<string, unknown>
  readonly text: string
  readonly search_text: string
  readonly embedding: ReadonlyArray<number> | null
  readonly model_embedding: string | null
  readonly embedding_key: string
  readonly next_embedding: string | null
  readonly next_embedding_key: string | null
}

/** The fields of a table's embedding model in its answer; `done` counts the points the new model embedded. */
const embeddingFields = (sql: SqlClient.SqlClient) =>
  sql`t.embedding_model_id::int as embedding_model_id,
      case when t.embedding_model_id is null then 256 else t.embedding_dimensions end as embedding_dimensions,
      case when t.reembedding then json_build_object(
        'model_id', t.reembed_model_id::int,
        'done', (select count(*) from knowledge_points p where p.knowledge_table_id = t.id and p.next_embedding is not null),
        'total', (select count(*) from knowledge_points p where p.knowledge_table_id = t.id),
        'last_error', t.reembed_error) end as reembedding`

export class KnowledgeRepo extends Effect.Service<KnowledgeRepo>()("@parley/server/KnowledgeRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** The columns of table `t` as a JSON array, in column order. */
    const columnsJson = sql`coalesce((select json_agg(json_build_object(
        'id', c.id, 'name', c.name, 'data_type', c.data_type, 'order', c.sort_order, 'is_searchable', c.is_searchable,
        'is_retrievable', c.is_retrievable, 'is_filterable', c.is_filterable, 'is_unique', c.is_unique,
        'knowledge_table_id', c.knowledge_table_id,
        'created_at', to_char(c.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'updated_at', to_char(c.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
        order by c.sort_order, c.id) from knowledge_columns c where c.knowledge_table_id = t.id), '[]')`

    const selectTables = sql`
      select t.id, t.workspace_id, t.name, t.description, t.created_at, t.updated_at, t.chunk_size, t.chunk_overlap,
             (select count(*) from knowledge_columns c where c.knowledge_table_id = t.id)::int as columns_count,
             (select count(*) from knowledge_points p where p.knowledge_table_id = t.id)::int as points_count,
             coalesce((select json_agg(pk.pipeline_id order by pk.pipeline_id) from pipeline_knowledge_tables pk
                       where pk.knowledge_table_id = t.id), '[]') as pipeline_ids,
             ${columnsJson} as columns, ${embeddingFields(sql)}
      from knowledge_tables t`

    const tables = SqlSchema.findAll({
      Request: Ids,
      Result: KnowledgeTableWithColumns,
      execute: (workspaceIds) => sql`${selectTables} where t.workspace_id in ${sql.in(workspaceIds)} order by t.id`
    })

    const table = SqlSchema.findOne({
      Request: In,
      Result: KnowledgeTableWithColumns,
      execute: ({ id, workspaceIds }) =>
        sql`${selectTables} where t.id = ${id} and t.workspace_id in ${sql.in(workspaceIds)}`
    })

    /** Workspace and columns in one statement (search and upsert run this on every call). */
    const columns = SqlSchema.findOne({
      Request: In,
      Result: TableColumns,
      execute: ({ id, workspaceIds }) =>
        sql`select t.workspace_id, ${columnsJson} as columns, t.embedding_model_id::int as embedding_model_id,
                   t.embedding_dimensions, t.reembedding, t.reembed_model_id::int as reembed_model_id
            from knowledge_tables t where t.id = ${id} and t.workspace_id in ${sql.in(workspaceIds)}`
    })

    const insertTable = SqlSchema.single({
      Request: Schema.Struct({
        workspaceId: Schema.Number,
        name: Schema.String,
        description: Schema.NullOr(Schema.String),
        embeddingModelId: Schema.NullOr(Schema.Number),
        chunkSize: Schema.NullOr(Schema.Number),
        chunkOverlap: Schema.NullOr(Schema.Number)
      }),
      Result: Schema.Struct({ id: KnowledgeTableId }),
      execute: ({ chunkOverlap, chunkSize, description, embeddingModelId, name, workspaceId }) =>
        sql`insert into knowledge_tables (workspace_id, name, description, embedding_model_id, embedding_dimensions,
                                          chunk_size, chunk_overlap)
            values (${workspaceId}, ${name}, ${description}, ${embeddingModelId}, ${
          embeddingModelId === null ? 256 : null
        }, ${chunkSize ?? DEFAULT_CHUNK_OPTIONS.size}, ${chunkOverlap ?? DEFAULT_CHUNK_OPTIONS.overlap})
            returning id`
    })

    /** How the table's sources are cut into chunks (a table that is gone: the defaults, its sync ends anyway). */
    const chunkOptions = SqlSchema.findAll({
      Request: Schema.Number,
      Result: Schema.Struct({ size: Schema.Number, overlap: Schema.Number }),
      execute: (tableId) =>
        sql`select chunk_size as size, chunk_overlap as overlap from knowledge_tables where id = ${tableId}`
    })

    /** One page in point-id order, from after the point `after` (a uuid) when given. */
    const points = SqlSchema.findAll({
      Request: Schema.Struct({ tableId: Schema.Number, after: Schema.NullOr(Schema.String), limit: Schema.Number }),
      Result: KnowledgePoint,
      execute: ({ after, limit, tableId }) =>
        sql`
          select p.id::text as point_id, p.default_id, p.knowledge_table_id as source_id, t.name as source_name, p.text, p.data,
                 json_build_object('used_count', p.used_count + u.n, 'latest_time_used',
                   to_char(greatest(p.latest_time_used, u.at) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
                   as usage_data,
                 p.updated_at as modified_date
          from knowledge_points p join knowledge_tables t on t.id = p.knowledge_table_id
          -- the uses not folded into the counter yet (knowledge/UsageFold.ts)
          left join lateral (
            select count(*)::int as n, max(used_at) as at from knowledge_point_uses where point_id = p.id
          ) u on true
          where p.knowledge_table_id = ${tableId} ${after === null ? sql`` : sql`and p.id > ${after}::uuid`}
          order by p.id limit ${limit}`
    })

    const stored = SqlSchema.findAll({
      Request: Schema.Struct({ tableId: Schema.Number, defaultIds: Schema.Array(Schema.String) }),
      Result: StoredPoint,
      execute: ({ defaultIds, tableId }) =>
        sql`select default_id, data, embedding_key from knowledge_points
            where knowledge_table_id = ${tableId} and default_id in ${sql.in(defaultIds)}`
    })

    /** Other points of the table holding one of `values` in the unique column `column`. */
    const clashes = SqlSchema.findAll({
      Request: Schema.Struct({
        tableId: Schema.Number,
        column: Schema.String,
        values: Schema.Array(Schema.String),
        except: Schema.Array(Schema.String)
      }),
      Result: Schema.Struct({ default_id: Schema.String, value: Schema.String }),
      execute: ({ column, except, tableId, values }) =>
        sql`
          select default_id, data -> ${column} #>> '{}' as value from knowledge_points
          where knowledge_table_id = ${tableId} and data -> ${column} is not null
            and data -> ${column} #>> '{}' in ${sql.in(values)}
            and default_id not in ${sql.in(except)}`
    })

    const workspaceTables = SqlSchema.findAll({
      Request: Schema.Struct({ workspaceId: Schema.Number, ids: Ids }),
      Result: Schema.Struct({ id: Schema.Number }),
      execute: ({ ids, workspaceId }) =>
        sql`select id from knowledge_tables where workspace_id = ${workspaceId} and id in ${sql.in(ids)}`
    })

    return {
      tables: (workspaceIds: ReadonlyArray<number>) => tables(workspaceIds).pipe(Effect.orDie),
      table: (id: number, workspaceIds: ReadonlyArray<number>) => table({ id, workspaceIds }).pipe(Effect.orDie),
      columns: (id: number, workspaceIds: ReadonlyArray<number>) => columns({ id, workspaceIds }).pipe(Effect.orDie),

      /** The table's chunk size and overlap, for its sources' ingest (knowledge/Chunker.ts). */
      chunkOptions: (tableId: number): Effect.Effect<ChunkOptions> =>
        chunkOptions(tableId).pipe(
          Effect.map((rows) => rows[0] ?? DEFAULT_CHUNK_OPTIONS),
          Effect.orDie
        ),

      nameTaken: (workspaceId: number, name: string) =>
        sql`select 1 from knowledge_tables where workspace_id = ${workspaceId} and lower(name) = lower(${name})`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),

      insertTable: (
        workspaceId: number,
        name: string,
        description: string | null,
        embeddingModelId: number | null,
        chunk: { readonly size?: number | undefined; readonly overlap?: number | undefined } = {}
      ) =>
        insertTable({
          workspaceId,
          name,
          description,
          embeddingModelId,
          chunkSize: chunk.size ?? null,
          chunkOverlap: chunk.overlap ?? null
        }).pipe(
          Effect.map((row) => row.id),
          Effect.orDie
        ),

      /** Name, description and chunking; only the ones given change. */
      updateTable: (id: number, fields: {
        readonly name?: string
        readonly description?: string | null
        readonly chunkSize?: number | undefined
        readonly chunkOverlap?: number | undefined
      }) => {
        const sets = [
          ...(fields.name === undefined ? [] : [sql`name = ${fields.name}`]),
          ...(fields.description === undefined ? [] : [sql`description = ${fields.description}`]),
          ...(fields.chunkSize === undefined ? [] : [sql`chunk_size = ${fields.chunkSize}`]),
          ...(fields.chunkOverlap === undefined ? [] : [sql`chunk_overlap = ${fields.chunkOverlap}`]),
          sql`updated_at = now()`
        ]
        return sql`update knowledge_tables set ${sql.csv(sets)} where id = ${id}`.pipe(Effect.asVoid, Effect.orDie)
      },

      /** The table's name is another table's of the workspace (case-insensitive). */
      nameTakenByOther: (workspaceId: number, name: string, id: number) =>
        sql`select 1 from knowledge_tables where workspace_id = ${workspaceId} and lower(name) = lower(${name})
            and id <> ${id}`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),

      insertColumn: (workspaceId: number, tableId: number, c: {
        readonly name: string
        readonly data_type: string
        readonly order: number
        readonly is_searchable: boolean
        readonly is_retrievable: boolean
        readonly is_filterable: boolean
        readonly is_unique: boolean
      }) =>
        sql`
          insert into knowledge_columns (workspace_id, knowledge_table_id, name, data_type, sort_order, is_searchable, is_retrievable,
                                         is_filterable, is_unique)
          values (${workspaceId}, ${tableId}, ${c.name}, ${c.data_type}, ${c.order}, ${c.is_searchable}, ${c.is_retrievable},
                  ${c.is_filterable}, ${c.is_unique})`.pipe(Effect.asVoid, Effect.orDie),

      points: (tableId: number, after: string | null, limit: number) =>
        points({ tableId, after, limit }).pipe(Effect.orDie),
      stored: (tableId: number, defaultIds: ReadonlyArray<string>) =>
        stored({ tableId, defaultIds }).pipe(Effect.orDie),
      clashes: (tableId: number, column: string, values: ReadonlyArray<string>, except: ReadonlyArray<string>) =>
        clashes({ tableId, column, values, except }).pipe(Effect.orDie),

      /** Inserts or updates one chunk of points, as one JSON parameter (vectors as integers: see toMillionths). */
      upsertPoints: (workspaceId: number, tableId: number, embeddingModel: string, chunk: ReadonlyArray<PointWrite>) =>
        sql`
          insert into knowledge_points (workspace_id, knowledge_table_id, default_id, data, text, search_text, embedding, embedding_key,
                                        embedding_model, model_embedding, next_embedding, next_embedding_key)
          select ${workspaceId}, ${tableId}, u.default_id, u.data, u.text, u.search_text, l2_normalize(u.embedding::vector),
                 u.embedding_key, ${embeddingModel}, u.model_embedding::vector, u.next_embedding::vector, u.next_embedding_key
          from json_to_recordset(${JSON.stringify(chunk)}::json)
            as u (default_id text, data jsonb, text text, search_text text, embedding int[], embedding_key text,
                  model_embedding text, next_embedding text, next_embedding_key text)
          on conflict (knowledge_table_id, default_id) do update set
            data = excluded.data, text = excluded.text, search_text = excluded.search_text,
            embedding = coalesce(excluded.embedding, knowledge_points.embedding), embedding_key = excluded.embedding_key,
            model_embedding = coalesce(excluded.model_embedding, knowledge_points.model_embedding),
            -- the new model's vector of the old text is kept only while the text is the same
            next_embedding = case when excluded.next_embedding is not null then excluded.next_embedding
              when knowledge_points.search_text = excluded.search_text then knowledge_points.next_embedding end,
            next_embedding_key = case when excluded.next_embedding is not null then excluded.next_embedding_key
              when knowledge_points.search_text = excluded.search_text then knowledge_points.next_embedding_key end,
            embedding_model = excluded.embedding_model, updated_at = now()`.pipe(Effect.asVoid, Effect.orDie),

      /** A provider model's dimension, from its first vectors. */
      recordDimensions: (tableId: number, dimensions: number) =>
        sql`update knowledge_tables set embedding_dimensions = ${dimensions}
            where id = ${tableId} and embedding_dimensions is null`.pipe(Effect.asVoid, Effect.orDie),

      /** Deletes points by default_id; the number deleted. */
      deletePoints: (tableId: number, defaultIds: ReadonlyArray<string>) =>
        sql`delete from knowledge_points where knowledge_table_id = ${tableId} and default_id in ${
          sql.in(defaultIds)
        } returning 1`.pipe(
          Effect.map((rows) => rows.length),
          Effect.orDie
        ),

      /** Counts the rows a reply used: one use each, appended (no row is locked; the fold adds them up). */
      recordUsage: (pointIds: ReadonlyArray<string>) =>
        sql`insert into knowledge_point_uses (point_id) select unnest(${pointIds}::uuid[])`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),

      /**
       * Folds up to `batch` of the oldest uses into their rows' `used_count` and `latest_time_used` (uses of rows
       * deleted meanwhile are dropped): how many uses it took.
       */
      foldUsage: (batch: number) =>
        sql<{ n: number }>`
          with taken as (
            delete from knowledge_point_uses
            where id in (select id from knowledge_point_uses order by id limit ${batch} for update skip locked)
            returning point_id, used_at
          ), counted as (
            select point_id, count(*)::int as n, max(used_at) as at from taken group by point_id
          ), folded as (
            update knowledge_points p set used_count = p.used_count + c.n,
              latest_time_used = greatest(p.latest_time_used, c.at)
            from counted c where p.id = c.point_id
          )
          select count(*)::int as n from taken`.pipe(Effect.map((rows) => rows[0]?.n ?? 0)),

      /** Which of `ids` are tables of the workspace. */
      workspaceTables: (workspaceId: number, ids: ReadonlyArray<number>) =>
        workspaceTables({ workspaceId, ids }).pipe(Effect.map((rows) => new Set(rows.map((r) => r.id))), Effect.orDie),

      attach: (pipelineId: number, tableId: number) =>
        sql`insert into pipeline_knowledge_tables (pipeline_id, knowledge_table_id) values (${pipelineId}, ${tableId})
            on conflict do nothing`.pipe(Effect.asVoid, Effect.orDie),

      detach: (pipelineId: number, tableIds: ReadonlyArray<number>) =>
        sql`delete from pipeline_knowledge_tables where pipeline_id = ${pipelineId} and knowledge_table_id in ${
          sql.in(tableIds)
        }`.pipe(
          Effect.asVoid,
          Effect.orDie
        )
    }
  })
}) {}
