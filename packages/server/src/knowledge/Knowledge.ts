/**
 * Knowledge tables (SPEC.md 2.6, 2.7, 4.3): tables with typed columns, points upserted by `default_id`
 * (validated against the column types and `is_unique`, embedded once per change, charged one training
 * credit per point embedded: PointUpserts.ts), cursor pages, deletes, search (KnowledgeSearch.ts), and
 * each table's embedding model (TableReembed.ts). Every method is scoped to the caller's workspaces;
 * another workspace's table is "not found".
 */
import { SqlClient } from "@effect/sql"
import {
  type CreateKnowledgeTableRequest,
  CurrentActor,
  DOCUMENT_COLUMNS,
  type KnowledgeTableId,
  KnowledgeTableNotFound,
  PointsPage,
  SearchHit,
  type SearchKnowledge,
  SearchResults,
  Unprocessable,
  type UpdateKnowledgeTable,
  type WorkspaceId
} from "@parley/domain"
import { Effect, Option } from "effect"
import { IdentityRepo } from "../identity/IdentityRepo.js"
import { someOrFail } from "../util/Effects.js"
import { DEFAULT_CHUNK_OPTIONS } from "./Chunker.js"
import { KnowledgeRepo } from "./KnowledgeRepo.js"
import { KnowledgeSearch } from "./KnowledgeSearch.js"
import type { Problem } from "./PointInput.js"
import { PointUpserts } from "./PointUpserts.js"
import { KnowledgeStatistics } from "./Statistics.js"
import { TableEmbedders } from "./TableEmbedders.js"
import { TableReembed } from "./TableReembed.js"

/** The columns of a table created without any (REST): those its sources' chunks fill (docs/knowledge.md). */
const documentColumns = DOCUMENT_COLUMNS.map((c, i) => ({
  name: c.name,
  data_type: c.data_type,
  order: i + 1,
  is_searchable: c.searchable,
  is_retrievable: true,
  is_filterable: c.name === "source",
  is_unique: false
}))

export class Knowledge extends Effect.Service<Knowledge>()("@parley/server/Knowledge", {
  dependencies: [
    TableEmbedders.Default,
    TableReembed.Default,
    PointUpserts.Default,
    KnowledgeRepo.Default,
    KnowledgeSearch.Default,
    KnowledgeStatistics.Default,
    IdentityRepo.Default
  ],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const embedders = yield* TableEmbedders
    const reembed = yield* TableReembed
    const upserts = yield* PointUpserts
    const repo = yield* KnowledgeRepo
    const finder = yield* KnowledgeSearch
    const statistics = yield* KnowledgeStatistics

    /** Workspace and columns of a table the caller reaches; 404 otherwise (another workspace's table included). */
    const ownColumns = (id: KnowledgeTableId) =>
      Effect.flatMap(CurrentActor, (actor) => repo.columns(id, actor.workspaceIds)).pipe(
        someOrFail(() => new KnowledgeTableNotFound())
      )

    /** The table if the caller reaches its workspace; 404 otherwise. */
    const ownTable = (id: KnowledgeTableId) =>
      Effect.flatMap(CurrentActor, (actor) => repo.table(id, actor.workspaceIds)).pipe(
        someOrFail(() => new KnowledgeTableNotFound())
      )

    const list = Effect.fn("Knowledge.list")(function*() {
      const actor = yield* CurrentActor
      return yield* repo.tables(actor.workspaceIds)
    })

    /** 422 on `embedding_model_id` unless the workspace may embed with that model. */
    const checkModel = (modelId: number | null | undefined, workspaceId: number) =>
      modelId === null || modelId === undefined ? Effect.void : Effect.flatMap(
        embedders.problem(modelId, workspaceId),
        Option.match({
          onNone: () => Effect.void,
          onSome: (message) => Unprocessable.of([{ field: "embedding_model_id", message }])
        })
      )

    /** 422 on `chunk_overlap` when it is more than half the chunk size (the one sent, else the table's). */
    const checkChunking = (size: number, overlap: number) =>
      overlap * 2 <= size ? Effect.void : Unprocessable.of([{
        field: "chunk_overlap",
        message: `must be at most half of chunk_size (${size}): at most ${Math.floor(size / 2)}`
      }])

    const create = Effect.fn("Knowledge.create")(function*(input: CreateKnowledgeTableRequest) {
      const actor = yield* CurrentActor
      const workspaceId = input.workspace_id ?? actor.defaultWorkspaceId
      if (!actor.workspaceIds.includes(workspaceId)) {
        return yield* Unprocessable.of([{ field: "workspace_id", message: "The selected workspace id is invalid." }])
      }
      yield* checkModel(input.embedding_model_id, workspaceId)
      const size = input.chunk_size ?? DEFAULT_CHUNK_OPTIONS.size
      // a size below twice the default overlap takes the largest overlap it allows
      const overlap = input.chunk_overlap ?? Math.min(DEFAULT_CHUNK_OPTIONS.overlap, Math.floor(size / 2))
      yield* checkChunking(size, overlap)
      const id = yield* sql.withTransaction(Effect.gen(function*() {
        if (yield* repo.nameTaken(workspaceId, input.name)) return Option.none<KnowledgeTableId>()
        const tableId = yield* repo.insertTable(
          workspaceId,
          input.name,
          input.description ?? null,
          input.embedding_model_id ?? null,
          { size, overlap }
        )
        for (const c of input.columns ?? documentColumns) yield* repo.insertColumn(workspaceId, tableId, c)
        return Option.some(tableId)
      })).pipe(Effect.orDie)
      if (Option.isNone(id)) {
        return yield* Unprocessable.of([{ field: "name", message: "The name has already been taken." }])
      }
      return yield* ownTable(id.value).pipe(Effect.orDie)
    })

    /** Name, description, and the embedding model: a new one is moved to in the background (TableReembed.ts). */
    const update = Effect.fn("Knowledge.update")(function*(id: KnowledgeTableId, input: UpdateKnowledgeTable) {
      const table = yield* ownColumns(id)
      yield* checkModel(input.embedding_model_id, table.workspace_id)
      if (input.chunk_size !== undefined || input.chunk_overlap !== undefined) {
        const stored = yield* repo.chunkOptions(id)
        yield* checkChunking(input.chunk_size ?? stored.size, input.chunk_overlap ?? stored.overlap)
      }
      if (input.name !== undefined && (yield* repo.nameTakenByOther(table.workspace_id, input.name, id))) {
        return yield* Unprocessable.of([{ field: "name", message: "The name has already been taken." }])
      }
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* repo.updateTable(id, {
          ...(input.name === undefined ? {} : { name: input.name }),
          ...(input.description === undefined ? {} : { description: input.description }),
          chunkSize: input.chunk_size,
          chunkOverlap: input.chunk_overlap
        })
        if (input.embedding_model_id !== undefined) yield* reembed.start(id, input.embedding_model_id)
      })).pipe(Effect.orDie)
      return yield* ownTable(id)
    })

    const columns = Effect.fn("Knowledge.columns")(function*(id: KnowledgeTableId) {
      return (yield* ownTable(id)).columns
    })

    /** One page in point-id order; the cursor is the last point id of the page. */
    const points = Effect.fn("Knowledge.points")(
      function*(id: KnowledgeTableId, perPage: number, cursor: string | undefined) {
        const actor = yield* CurrentActor
        yield* ownColumns(id)
        if (cursor !== undefined && !/^[0-9a-f-]{36}$/i.test(cursor)) {
          return yield* Unprocessable.of([{
            field: "next_page_offset",
            message: "is not a cursor from a previous page"
          }])
        }
        const rows = yield* repo.points(id, cursor ?? null, perPage + 1)
        const page = rows.slice(0, perPage)
        return new PointsPage({
          user_id: actor.userId,
          source_id: id,
          records: page,
          count: page.length,
          next_page_offset: rows.length > perPage ? page[page.length - 1]!.point_id : null
        })
      }
    )

    const remove = Effect.fn("Knowledge.remove")(function*(id: KnowledgeTableId, ids: ReadonlyArray<string | number>) {
      yield* ownColumns(id)
      const deleted = yield* repo.deletePoints(id, ids.map(String))
      yield* statistics.changedRows(deleted)
      return { deleted }
    })

    const search = Effect.fn("Knowledge.search")(function*(id: KnowledgeTableId, input: SearchKnowledge) {
      const table = yield* ownColumns(id)
      const filters: Array<readonly [string, string]> = []
      const problems: Array<Problem> = []
      for (const [key, value] of Object.entries(input.filters ?? {})) {
        const column = table.columns.find((c) => c.name === key)
        if (!column || !column.is_filterable) {
          problems.push({ field: `filters.${key}`, message: "is not a filterable column of this table" })
        } else filters.push([key, String(value)])
      }
      if (problems.length > 0) return yield* Unprocessable.of(problems)
      const hits = yield* finder.searchTable(id, input.query, {
        limit: input.limit,
        hybrid: input.use_hybrid,
        filters,
        model: { embedding_model_id: table.embedding_model_id, embedding_dimensions: table.embedding_dimensions }
      })
      const retrievable = new Set(table.columns.filter((c) => c.is_retrievable).map((c) => c.name))
      return new SearchResults({
        query: input.query,
        mode: input.use_hybrid ? "hybrid" : "vector",
        point_ids: hits.map((h) => h.id),
        results: hits.map((h) =>
          new SearchHit({
            point_id: h.id,
            default_id: h.default_id,
            score: h.score,
            data: Object.fromEntries(Object.entries(h.data).filter(([k]) => retrievable.has(k)))
          })
        )
      })
    })

    /** Counts the rows a reply used. */
    const recordUsage = (pointIds: ReadonlyArray<string>) =>
      pointIds.length === 0 ? Effect.void : repo.recordUsage(pointIds)

    /** attach (additive) and detach tables of the pipeline's workspace; unknown or foreign ids are 422. */
    const link = (
      workspaceId: WorkspaceId,
      pipelineId: number,
      attach: ReadonlyArray<number>,
      detach: ReadonlyArray<number>
    ) =>
      Effect.gen(function*() {
        const wanted = [...new Set([...attach, ...detach])]
        if (wanted.length === 0) return
        const ok = yield* repo.workspaceTables(workspaceId, wanted)
        const invalid = (field: string) => (id: number, i: number) =>
          ok.has(id) ? [] : [{ field: `${field}.${i}`, message: "The selected knowledge table id is invalid." }]
        const bad = [
          ...attach.flatMap(invalid("attach_knowledge_table_ids")),
          ...detach.flatMap(invalid("detach_knowledge_table_ids"))
        ]
        if (bad.length > 0) return yield* Unprocessable.of(bad)
        for (const tableId of attach) yield* repo.attach(pipelineId, tableId)
        if (detach.length > 0) yield* repo.detach(pipelineId, detach)
      })

    return {
      list,
      create,
      columns,
      points,
      update,
      upsert: upserts.upsert,
      remove,
      search,
      retrieve: finder.retrieve,
      recordUsage,
      link,
      ownTable
    }
  })
}) {}
