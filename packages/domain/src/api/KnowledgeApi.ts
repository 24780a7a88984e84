import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Ok, UploadRejectedResponse, UploadTooLargeResponse } from "../Envelope.js"
import { KnowledgeTableNotFoundResponse, UnprocessableResponse } from "../Errors.js"
import { KnowledgeTableIdFromString } from "../Ids.js"
import {
  CreateKnowledgeTableRequest,
  DeletePoints,
  KnowledgeColumn,
  KnowledgeTableWithColumns,
  PointsPage,
  PointsQuery,
  SearchKnowledge,
  SearchResults,
  UpdateKnowledgeTable,
  UpsertPoints
} from "../Knowledge.js"
import {
  CreateSource,
  KnowledgeSource,
  KnowledgeSourceIdFromString,
  KnowledgeSourceNotFoundResponse
} from "../KnowledgeSources.js"
import { Authorized } from "./Auth.js"

const tablePath = Schema.Struct({ knowledgeTable: KnowledgeTableIdFromString })
const sourcePath = Schema.Struct({ knowledgeTable: KnowledgeTableIdFromString, source: KnowledgeSourceIdFromString })
const SOURCES = "/api/user/knowledge-tables/:knowledgeTable/sources"

export const PointsUpserted = Schema.Struct({ upserted: Schema.Int }).annotations({ identifier: "PointsUpserted" })
export const PointsDeleted = Schema.Struct({ deleted: Schema.Int }).annotations({ identifier: "PointsDeleted" })

/** Knowledge tables, their columns and points, and search (SPEC.md 2.6, 2.7, 4.3). */
export class KnowledgeApi extends HttpApiGroup.make("knowledge")
  .add(
    HttpApiEndpoint.get("list", "/api/user/knowledge-tables")
      .addSuccess(Ok(Schema.Array(KnowledgeTableWithColumns)))
      .middleware(Authorized["knowledge:read"])
      .annotate(OpenApi.Summary, "List knowledge tables with their columns")
      .annotate(
        OpenApi.Description,
        "Every table of the caller's workspaces, with `pipeline_ids` it is attached to. Scope `knowledge:read`."
      )
  )
  .add(
    HttpApiEndpoint.post("create", "/api/user/knowledge-tables")
      .setPayload(CreateKnowledgeTableRequest)
      .addSuccess(Ok(KnowledgeTableWithColumns, { message: "Knowledge table created successfully." }))
      .addError(UnprocessableResponse)
      .middleware(Authorized["knowledge:write"])
      .annotate(OpenApi.Summary, "Create a knowledge table with its columns")
      .annotate(
        OpenApi.Description,
        "At least one column must be `is_searchable`; names are unique per workspace (case-insensitive). Scope `knowledge:write`."
      )
  )
  .add(
    HttpApiEndpoint.get("get", "/api/user/knowledge-tables/:knowledgeTable")
      .setPath(tablePath)
      .addSuccess(Ok(KnowledgeTableWithColumns))
      .addError(KnowledgeTableNotFoundResponse)
      .middleware(Authorized["knowledge:read"])
      .annotate(OpenApi.Summary, "A knowledge table with its columns and embedding model")
      .annotate(
        OpenApi.Description,
        "`reembedding` shows the progress while its points are embedded again for a new model. Scope `knowledge:read`."
      )
  )
  .add(
    HttpApiEndpoint.put("update", "/api/user/knowledge-tables/:knowledgeTable")
      .setPath(tablePath)
      .setPayload(UpdateKnowledgeTable)
      .addSuccess(Ok(KnowledgeTableWithColumns, { message: "Knowledge table updated successfully." }))
      .addError(KnowledgeTableNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["knowledge:write"])
      .annotate(OpenApi.Summary, "Rename a knowledge table or change its embedding model")
      .annotate(
        OpenApi.Description,
        "Only the fields sent change. A new `embedding_model_id` (a model with the `embeddings` capability, server-wide or the table's workspace's) embeds every point again in the background, free of charge; search uses the old vectors until all are done. Scope `knowledge:write`."
      )
  )
  .add(
    HttpApiEndpoint.get("columns", "/api/user/knowledge-tables/:knowledgeTable/columns")
      .setPath(tablePath)
      .addSuccess(Ok(Schema.Array(KnowledgeColumn)))
      .addError(KnowledgeTableNotFoundResponse)
      .middleware(Authorized["knowledge:read"])
      .annotate(OpenApi.Summary, "A table's columns (call before upserting to learn the expected fields)")
  )
  .add(
    HttpApiEndpoint.get("points", "/api/user/knowledge-tables/:knowledgeTable/points")
      .setPath(tablePath)
      .setUrlParams(PointsQuery)
      .addSuccess(Ok(PointsPage))
      .addError(KnowledgeTableNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["knowledge:read"])
      .annotate(OpenApi.Summary, "A page of points")
      .annotate(
        OpenApi.Description,
        "Repeat with the returned `next_page_offset` until it is null. Scope `knowledge:read`."
      )
  )
  .add(
    HttpApiEndpoint.put("upsert", "/api/user/knowledge-tables/:knowledgeTable/points")
      .setPath(tablePath)
      .setPayload(UpsertPoints)
      .addSuccess(Ok(PointsUpserted, { message: "Points upserted successfully.", withoutValidation: true }))
      .addError(KnowledgeTableNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["knowledge:write"])
      .annotate(OpenApi.Summary, "Create or update points by `default_id`")
      .annotate(
        OpenApi.Description,
        "Each point has `default_id` (string or integer) plus values for the table's columns; an existing `default_id` is updated in place (columns not sent are kept). Values are checked against the column types and `is_unique`. Each point whose searchable text changed is embedded and costs one training credit. The envelope has no `validation` key. Scope `knowledge:write`."
      )
  )
  .add(
    HttpApiEndpoint.del("remove", "/api/user/knowledge-tables/:knowledgeTable/points")
      .setPath(tablePath)
      .setPayload(DeletePoints)
      .addSuccess(Ok(PointsDeleted, { message: "Points deleted successfully.", withoutValidation: true }))
      .addError(KnowledgeTableNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["knowledge:write"])
      .annotate(OpenApi.Summary, "Delete points by `default_id`")
      .annotate(
        OpenApi.Description,
        "JSON body `ids`: the `default_id` values to delete. The envelope has no `validation` key. Scope `knowledge:write`."
      )
  )
  .add(
    HttpApiEndpoint.post("search", "/api/user/knowledge-tables/:knowledgeTable/search")
      .setPath(tablePath)
      .setPayload(SearchKnowledge)
      .addSuccess(Ok(SearchResults))
      .addError(KnowledgeTableNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["knowledge:read"])
      .annotate(OpenApi.Summary, "Search a table")
      .annotate(
        OpenApi.Description,
        "`use_hybrid` (default true) fuses vector and keyword matches by reciprocal rank; false is pure vector search with cosine similarity scores. `filters` match `is_filterable` columns exactly. Scope `knowledge:read`."
      )
  )
  .add(
    HttpApiEndpoint.post("addSource", SOURCES)
      .setPath(tablePath)
      .setPayload(CreateSource)
      .addSuccess(Ok(KnowledgeSource, { message: "Knowledge source added." }))
      .addError(KnowledgeTableNotFoundResponse)
      .addError(UnprocessableResponse)
      .addError(UploadRejectedResponse)
      .addError(UploadTooLargeResponse)
      .middleware(Authorized["knowledge:write"])
      .annotate(OpenApi.Summary, "Add a source to a table: a file (multipart `file`) or a URL, sitemap or crawl (JSON)")
      .annotate(
        OpenApi.Description,
        "A file up to 50 MB (413 over it): PDF, DOCX, HTML, Markdown, text, CSV. Or JSON `{kind: \"url\" | \"sitemap\" | \"crawl\", url, max_pages?, max_depth?, include?, exclude?}`. The source is `pending` and synced in the background; its chunks become points with `default_id` `src{id}-{hash}`. The table needs the document columns `text` (string, searchable), `title`, `section`, `source` (strings) and `page` (number): a table without them is a 422 naming them. Scope `knowledge:write`."
      )
  )
  .add(
    HttpApiEndpoint.get("sources", SOURCES)
      .setPath(tablePath)
      .addSuccess(Ok(Schema.Array(KnowledgeSource)))
      .addError(KnowledgeTableNotFoundResponse)
      .middleware(Authorized["knowledge:read"])
      .annotate(OpenApi.Summary, "A table's sources with their status and counts")
  )
  .add(
    HttpApiEndpoint.get("source", `${SOURCES}/:source`)
      .setPath(sourcePath)
      .addSuccess(Ok(KnowledgeSource))
      .addError(KnowledgeTableNotFoundResponse)
      .addError(KnowledgeSourceNotFoundResponse)
      .middleware(Authorized["knowledge:read"])
      .annotate(OpenApi.Summary, "A source with its progress (`{done, total}` pages while it syncs)")
  )
  .add(
    HttpApiEndpoint.post("syncSource", `${SOURCES}/:source/sync`)
      .setPath(sourcePath)
      .addSuccess(Ok(KnowledgeSource, { message: "Sync requested." }))
      .addError(KnowledgeTableNotFoundResponse)
      .addError(KnowledgeSourceNotFoundResponse)
      .middleware(Authorized["knowledge:write"])
      .annotate(OpenApi.Summary, "Sync a source again")
      .annotate(
        OpenApi.Description,
        "Changed chunks are updated (and embedded), vanished ones deleted, unchanged ones kept as they are. A sync that fails keeps the last good points. Scope `knowledge:write`."
      )
  )
  .add(
    HttpApiEndpoint.del("removeSource", `${SOURCES}/:source`)
      .setPath(sourcePath)
      .addSuccess(Ok(PointsDeleted, { message: "Knowledge source deleted." }))
      .addError(KnowledgeTableNotFoundResponse)
      .addError(KnowledgeSourceNotFoundResponse)
      .middleware(Authorized["knowledge:write"])
      .annotate(OpenApi.Summary, "Delete a source and its points")
  )
  .annotate(OpenApi.Title, "Knowledge tables")
{}
