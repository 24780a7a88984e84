/** Knowledge tables, columns and points (SPEC.md 2.6, 2.7, 4.3, and the knowledge tools of 4.5). */
import { Schema } from "effect"
import { AiModelId, KnowledgeTableId, PipelineId, UserId, WorkspaceId } from "./Ids.js"
import { all, FiniteNumber, IntBetween, IntFromQuery, maxChars, NonEmptyString, Text, Timestamp } from "./Schemas.js"

export const ColumnDataType = Schema.Literal("string", "number", "boolean", "date")
export type ColumnDataType = typeof ColumnDataType.Type

/** SPEC.md 2.7. */
export class KnowledgeColumn extends Schema.Class<KnowledgeColumn>("KnowledgeColumn")({
  id: Schema.Int,
  name: Schema.String,
  data_type: ColumnDataType,
  order: Schema.Int,
  is_searchable: Schema.Boolean,
  is_retrievable: Schema.Boolean,
  is_filterable: Schema.Boolean,
  is_unique: Schema.Boolean,
  knowledge_table_id: KnowledgeTableId,
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

/** The progress of a change of embedding model: `done` of `total` points embedded by `model_id`. */
export class Reembedding extends Schema.Class<Reembedding>("Reembedding")({
  model_id: Schema.NullOr(AiModelId).annotations({ description: "The model being moved to; null: the server's" }),
  done: Schema.Int,
  total: Schema.Int,
  last_error: Schema.NullOr(Schema.String).annotations({
    description: "Why the last batch failed (it is retried later), null when it did not"
  })
}) {}

export class KnowledgeTable extends Schema.Class<KnowledgeTable>("KnowledgeTable")({
  id: KnowledgeTableId,
  workspace_id: WorkspaceId,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  columns_count: Schema.Int,
  points_count: Schema.Int,
  pipeline_ids: Schema.Array(PipelineId).annotations({ description: "Pipelines this table is attached to" }),
  created_at: Timestamp,
  updated_at: Timestamp,
  embedding_model_id: Schema.NullOr(AiModelId).annotations({
    description: "The model its points and queries are embedded with; null: the server's embedder"
  }),
  embedding_dimensions: Schema.NullOr(Schema.Int).annotations({
    description: "Of its vectors; null until a provider model first answered"
  }),
  reembedding: Schema.NullOr(Reembedding).annotations({
    description: "While its points are embedded again for a new model (search uses the old vectors meanwhile)"
  }),
  chunk_size: Schema.Int.annotations({ description: "Max characters per source chunk" }),
  chunk_overlap: Schema.Int.annotations({ description: "Characters repeated between chunks" })
}) {}

export class KnowledgeTableWithColumns
  extends KnowledgeTable.extend<KnowledgeTableWithColumns>("KnowledgeTableWithColumns")({
    columns: Schema.Array(KnowledgeColumn)
  })
{}

const ColumnName = NonEmptyString(64).pipe(
  Schema.pattern(/^[A-Za-z_][A-Za-z0-9_ -]*$/, {
    message: () => "must start with a letter or underscore and hold only letters, digits, spaces, - and _"
  }),
  Schema.filter((n) => n !== "default_id" || "default_id is reserved for the point's id")
)

const flag = (value: boolean, description: string) =>
  Schema.optionalWith(Schema.Boolean, { default: () => value }).annotations({ description, default: value })

export const CreateKnowledgeColumn = Schema.Struct({
  name: Schema.propertySignature(ColumnName).annotations({
    description: "Unique in the table; a point's key for its value"
  }),
  data_type: Schema.propertySignature(ColumnDataType).annotations({ description: "The values' type" }),
  order: Schema.propertySignature(IntBetween(1, 1000)).annotations({ description: "Display position, 1 = first" }),
  is_searchable: flag(false, "Matched against queries (embedded)"),
  is_retrievable: flag(true, "Returned in search results"),
  is_filterable: flag(false, "Usable as a search filter"),
  is_unique: flag(false, "Values must differ across points")
})

/** Chunking of a table's sources (knowledge/Chunker.ts): its defaults and bounds; the overlap is at most half the size. */
export const CHUNK_SIZE = { default: 1200, min: 200, max: 8000 } as const
export const CHUNK_OVERLAP = { default: 150, min: 0, max: CHUNK_SIZE.max / 2 } as const

const chunkFields = {
  chunk_size: Schema.optional(IntBetween(CHUNK_SIZE.min, CHUNK_SIZE.max)).annotations({
    description: `Max characters per source chunk (${CHUNK_SIZE.default})`
  }),
  chunk_overlap: Schema.optional(IntBetween(CHUNK_OVERLAP.min, CHUNK_OVERLAP.max)).annotations({
    description: `Characters repeated between chunks, at most half chunk_size (${CHUNK_OVERLAP.default})`
  })
}

/** A new table's columns: at least one, at most 100, names unique (case aside), at least one searchable. */
const TableColumns = Schema.Array(CreateKnowledgeColumn).pipe(
  Schema.minItems(1, { message: () => "must have at least 1 items" }),
  Schema.maxItems(100, { message: () => "may not have more than 100 items" }),
  Schema.filter((cols) => {
    const seen = new Set<string>()
    for (const [i, c] of cols.entries()) {
      const key = c.name.toLowerCase()
      if (seen.has(key)) return { path: [i, "name"], message: "has a duplicate value" }
      seen.add(key)
    }
    return cols.some((c) => c.is_searchable) || "must have at least one searchable column (is_searchable)"
  })
)

export const CreateKnowledgeTable = Schema.Struct({
  workspace_id: Schema.optional(WorkspaceId).annotations({
    description: "Workspace to create in; defaults to the caller's own"
  }),
  name: Schema.propertySignature(NonEmptyString(255)).annotations({ description: "Unique in the workspace" }),
  description: Schema.optional(Schema.NullOr(Text(5000))).annotations({ description: "What the table holds" }),
  embedding_model_id: Schema.optional(Schema.NullOr(AiModelId)).annotations({
    description: "A model with the `embeddings` capability the workspace may use; null or absent: the server's embedder"
  }),
  columns: Schema.propertySignature(TableColumns).annotations({
    description: "Its typed columns, at least one searchable"
  }),
  ...chunkFields
}).annotations({ ...all, identifier: "CreateKnowledgeTable" })
export type CreateKnowledgeTable = typeof CreateKnowledgeTable.Type

/**
 * REST's create (docs/api.md): `columns` may be left out for a table of documents, which then gets the document
 * columns its sources need (DOCUMENT_COLUMNS). SPEC.md's MCP tool `create_knowledge_table` keeps them required.
 */
export const CreateKnowledgeTableRequest = Schema.Struct({
  ...CreateKnowledgeTable.fields,
  columns: Schema.optional(TableColumns).annotations({
    description:
      "Its typed columns, at least one searchable; absent: the document columns (text, title, section, source, page)"
  })
}).annotations({ ...all, identifier: "CreateKnowledgeTableRequest" })
export type CreateKnowledgeTableRequest = typeof CreateKnowledgeTableRequest.Type

/** Only the fields sent change; a new `embedding_model_id` embeds the points again in the background. */
export const UpdateKnowledgeTable = Schema.Struct({
  name: Schema.optional(NonEmptyString(255)).annotations({ description: "Unique in the workspace" }),
  description: Schema.optional(Schema.NullOr(Text(5000))).annotations({ description: "What the table holds" }),
  embedding_model_id: Schema.optional(Schema.NullOr(AiModelId)).annotations({
    description: "A model with the `embeddings` capability the workspace may use; null: the server's embedder"
  }),
  ...chunkFields
}).annotations({ ...all, identifier: "UpdateKnowledgeTable" })
export type UpdateKnowledgeTable = typeof UpdateKnowledgeTable.Type

/** SPEC.md 2.6. */
export class KnowledgePoint extends Schema.Class<KnowledgePoint>("KnowledgePoint")({
  point_id: Schema.String,
  default_id: Schema.String,
  source_id: KnowledgeTableId,
  source_name: Schema.String,
  text: Schema.String,
  data: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  usage_data: Schema.Struct({ used_count: Schema.Int, latest_time_used: Schema.NullOr(Timestamp) }),
  modified_date: Timestamp
}) {}

export class PointsPage extends Schema.Class<PointsPage>("PointsPage")({
  user_id: UserId,
  source_id: KnowledgeTableId,
  records: Schema.Array(KnowledgePoint),
  count: Schema.Int,
  next_page_offset: Schema.NullOr(Schema.String)
}) {}

export const PointsQuery = Schema.Struct({
  per_page: Schema.optionalWith(IntFromQuery.pipe(Schema.compose(IntBetween(1, 100))), { default: () => 20 }),
  next_page_offset: Schema.optional(Schema.String)
}).annotations(all)

/** An integer `default_id` is kept as text; beyond 2^53 a JSON number no longer holds it exactly. */
const IntegerDefaultId = Schema.Int.pipe(Schema.between(-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)).annotations(
  {
    jsonSchema: { type: "integer", minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER }
  }
)

export const DefaultId = Schema.Union(Schema.String.pipe(Schema.minLength(1), maxChars(255)), IntegerDefaultId)
  .annotations({
    message: () => "must be a string or an integer"
  })

/**
 * Each point: `default_id` plus a value per column (validated against the table's columns by the service,
 * which refuses a point without `default_id`: JSON Schema says so).
 */
export const UpsertPoints = Schema.Struct({
  points: Schema.propertySignature(
    Schema.Array(
      Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
        jsonSchema: {
          type: "object",
          required: ["default_id"],
          properties: {
            default_id: {
              anyOf: [{ type: "string", minLength: 1, maxLength: 255 }, {
                type: "integer",
                minimum: -Number.MAX_SAFE_INTEGER,
                maximum: Number.MAX_SAFE_INTEGER
              }],
              description: "The point's stable id; a match updates that point"
            }
          }
        }
      })
    ).pipe(
      Schema.minItems(1, { message: () => "must have at least 1 items" }),
      Schema.maxItems(1000, { message: () => "may not have more than 1000 items" })
    )
  ).annotations({ description: "Each a default_id and a value per column, keyed by column name" })
}).annotations({ ...all, identifier: "UpsertPoints" })

export const DeletePoints = Schema.Struct({
  ids: Schema.Array(DefaultId).pipe(
    Schema.minItems(1, { message: () => "must have at least 1 items" }),
    Schema.maxItems(1000, { message: () => "may not have more than 1000 items" })
  )
}).annotations({ ...all, identifier: "DeletePoints" })

export const SearchKnowledge = Schema.Struct({
  query: NonEmptyString(2000),
  limit: Schema.optionalWith(IntBetween(1, 20), { default: () => 5 }),
  use_hybrid: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  filters: Schema.optional(
    Schema.Record({ key: Schema.String, value: Schema.Union(Schema.String, FiniteNumber, Schema.Boolean) })
  )
}).annotations({ ...all, identifier: "SearchKnowledge" })
export type SearchKnowledge = typeof SearchKnowledge.Type

export class SearchHit extends Schema.Class<SearchHit>("SearchHit")({
  point_id: Schema.String,
  default_id: Schema.String,
  score: Schema.Number.annotations({
    description: "Reciprocal-rank fusion score (hybrid) or cosine similarity (vector)"
  }),
  data: Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
    description: "The retrievable columns"
  })
}) {}

export class SearchResults extends Schema.Class<SearchResults>("SearchResults")({
  query: Schema.String,
  mode: Schema.Literal("hybrid", "vector"),
  point_ids: Schema.Array(Schema.String),
  results: Schema.Array(SearchHit)
}) {}
