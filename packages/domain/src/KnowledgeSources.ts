/**
 * Knowledge sources (issue 41): files, pages, sitemaps and crawls whose chunks become points of a knowledge table,
 * synced on demand or on a schedule. A table takes them only when it has the document columns (DOCUMENT_COLUMNS),
 * which a table created over REST without `columns` gets (SPEC.md's MCP tool keeps `columns` required).
 */
import { HttpApiSchema, Multipart } from "@effect/platform"
import { Schema } from "effect"
import { FixedErrorResponse } from "./Envelope.js"
import { Id, IdFromString, KnowledgeTableId } from "./Ids.js"
import { all, IntBetween, Text, Timestamp } from "./Schemas.js"

export const KnowledgeSourceId = Id("KnowledgeSourceId")
export type KnowledgeSourceId = typeof KnowledgeSourceId.Type
export const KnowledgeSourceIdFromString = IdFromString(KnowledgeSourceId)

export const SourceKind = Schema.Literal("file", "url", "sitemap", "crawl")
export type SourceKind = typeof SourceKind.Type
export const SourceStatus = Schema.Literal("pending", "processing", "ready", "failed")
/** A web source's own re-sync: `off` (on demand only), or a day or a week after its last sync. */
export const SourceSync = Schema.Literal("off", "daily", "weekly")
export type SourceStatus = typeof SourceStatus.Type

/** The columns a table needs to take a source's chunks: name, type, and what its value is. */
export const DOCUMENT_COLUMNS = [
  { name: "text", data_type: "string", searchable: true, description: "the chunk's text (searchable, retrievable)" },
  { name: "title", data_type: "string", searchable: false, description: "the document's title" },
  { name: "section", data_type: "string", searchable: false, description: "the heading path, `Pricing > Annual`" },
  { name: "source", data_type: "string", searchable: false, description: "the file name or URL (filterable)" },
  { name: "page", data_type: "number", searchable: false, description: "a PDF's page number" }
] as const

/** Files of a source may be this large (issue 41); larger is a 413. */
export const MAX_SOURCE_FILE_BYTES = 50 * 1024 * 1024

export class KnowledgeSource extends Schema.Class<KnowledgeSource>("KnowledgeSource")({
  id: KnowledgeSourceId,
  knowledge_table_id: KnowledgeTableId,
  kind: SourceKind,
  name: Schema.String,
  url: Schema.NullOr(Schema.String),
  status: SourceStatus,
  error: Schema.NullOr(Schema.String),
  points: Schema.Int,
  pages: Schema.Int,
  progress: Schema.NullOr(Schema.Struct({ done: Schema.Int, total: Schema.NullOr(Schema.Int) })),
  sync: SourceSync,
  last_synced_at: Schema.NullOr(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

const Patterns = Schema.Array(Schema.String.pipe(Schema.maxLength(500))).pipe(Schema.maxItems(50))

/** A web source; a file is sent as multipart instead (CreateSourceFile). */
export const CreateWebSource = Schema.Struct({
  kind: Schema.Literal("url", "sitemap", "crawl"),
  url: Text(2000).annotations({ description: "http(s) URL to start from" }),
  max_pages: Schema.optional(IntBetween(1, 10_000)).annotations({ description: "Pages at most (default 100)" }),
  max_depth: Schema.optional(IntBetween(0, 20)).annotations({
    description: "Links deep from `url` (crawl, default 3)"
  }),
  include: Schema.optional(Patterns).annotations({ description: "Only URLs containing one of these (crawl)" }),
  exclude: Schema.optional(Patterns).annotations({ description: "No URL containing one of these (crawl)" }),
  sync: Schema.optional(SourceSync).annotations({
    description: "Sync again a day or a week after the last sync (default off: on demand only)"
  })
}).annotations({ ...all, identifier: "CreateWebSource" })
export type CreateWebSource = typeof CreateWebSource.Type

/** One `file` part, up to 50 MB. */
export const CreateSourceFile = HttpApiSchema.Multipart(
  Schema.Struct({ file: Multipart.SingleFileSchema }).annotations({ ...all, identifier: "CreateFileSource" })
)

export const CreateSource = Schema.Union(CreateSourceFile, CreateWebSource)
export type CreateSource = typeof CreateSource.Type

const fixedMessage = (message: string) => ({
  message: Schema.optionalWith(Schema.String, { default: () => message })
})
export class KnowledgeSourceNotFound extends Schema.TaggedError<KnowledgeSourceNotFound>()(
  "KnowledgeSourceNotFound",
  fixedMessage("Knowledge source not found.")
) {}
export const KnowledgeSourceNotFoundResponse = FixedErrorResponse(
  KnowledgeSourceNotFound,
  404,
  "KnowledgeSourceNotFound",
  "Knowledge source not found."
)
