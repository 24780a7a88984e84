/**
 * Knowledge tables (SPEC.md 2.6, 2.7, 4.3): tables with typed columns, points upserted by `default_id`
 * (validated against the column types and `is_unique`, embedded once per change, charged one training
 * credit per point embedded), cursor pages, deletes, and search (KnowledgeSearch.ts). Every method is
 * scoped to the caller's workspaces; another workspace's table is "not found".
 */
import { SqlClient } from "@effect/sql"
import {
  type CreateKnowledgeTable,
  CurrentActor,
  type KnowledgeColumn,
  type KnowledgeTableId,
  KnowledgeTableNotFound,
  PointsPage,
  SearchHit,
  type SearchKnowledge,
  SearchResults,
  Unprocessable,
  type WorkspaceId
} from "@parley/domain"
import { Effect, Option } from "effect"
import { IdentityRepo } from "../identity/IdentityRepo.js"
import { someOrFail } from "../util/Effects.js"
import { Embedder, toMillionths } from "./Embedder.js"
import { KnowledgeGraph } from "./Graph.js"
import { KnowledgeRepo, type PointWrite } from "./KnowledgeRepo.js"
import { KnowledgeSearch } from "./KnowledgeSearch.js"
import { type Problem, readPoints, render, uniqueWithin } from "./PointInput.js"
import { KnowledgeStatistics } from "./Statistics.js"

/** Rows per insert statement of an upsert. */
const INSERT_CHUNK = 500

export class Knowledge extends Effect.Service<Knowledge>()("@parley/server/Knowledge", {
  dependencies: [
    Embedder.Default,
    KnowledgeGraph.Default,
    KnowledgeRepo.Default,
    KnowledgeSearch.Default,
    KnowledgeStatistics.Default,
    IdentityRepo.Default
  ],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const embedder = yield* Embedder
    const graph = yield* KnowledgeGraph
    const repo = yield* KnowledgeRepo
    const finder = yield* KnowledgeSearch
    const statistics = yield* KnowledgeStatistics
    const identity = yield* IdentityRepo

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

    const create = Effect.fn("Knowledge.create")(function*(input: CreateKnowledgeTable) {
      const actor = yield* CurrentActor
      const workspaceId = input.workspace_id ?? actor.defaultWorkspaceId
      if (!actor.workspaceIds.includes(workspaceId)) {
        return yield* Unprocessable.of([{ field: "workspace_id", message: "The selected workspace id is invalid." }])
      }
      const id = yield* sql.withTransaction(Effect.gen(function*() {
        if (yield* repo.nameTaken(workspaceId, input.name)) return Option.none<KnowledgeTableId>()
        const tableId = yield* repo.insertTable(workspaceId, input.name, input.description ?? null)
        for (const c of input.columns) yield* repo.insertColumn(workspaceId, tableId, c)
        return Option.some(tableId)
      })).pipe(Effect.orDie)
      if (Option.isNone(id)) {
        return yield* Unprocessable.of([{ field: "name", message: "The name has already been taken." }])
      }
      return yield* ownTable(id.value).pipe(Effect.orDie)
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

    const upsert = Effect.fn("Knowledge.upsert")(
      function*(id: KnowledgeTableId, input: ReadonlyArray<Record<string, unknown>>) {
        const table = yield* ownColumns(id)
        const cols = table.columns
        const { points, problems } = readPoints(cols, input)
        if (problems.length > 0) return yield* Unprocessable.of(problems)

        const before = new Map((yield* repo.stored(id, points.map((p) => p.defaultId))).map((r) => [r.default_id, r]))
        const rows = points.map((p) => {
          // an update keeps the columns it does not mention
          const data = { ...(before.get(p.defaultId)?.data ?? {}), ...p.data }
          const searchText = render(cols, data, (c) => c.is_searchable)
          const key = Embedder.keyOf(embedder.key, searchText)
          return {
            ...p,
            data,
            text: render(cols, data),
            searchText,
            key,
            embed: before.get(p.defaultId)?.embedding_key !== key
          }
        })
        yield* checkUnique(id, cols.filter((c) => c.is_unique), rows)

        const toEmbed = rows.filter((r) => r.embed)
        const credits = yield* identity.trainingCredits(table.workspace_id)
        if (toEmbed.length > 0 && credits < toEmbed.length) {
          return yield* Unprocessable.of([{
            field: "points",
            message: `needs ${toEmbed.length} training credits (one per point embedded); the workspace has ${
              Math.max(0, credits)
            } left`
          }])
        }
        const vectors = toEmbed.length === 0
          ? []
          : yield* embedder.model.embedMany(toEmbed.map((r) => r.searchText)).pipe(Effect.orDie)
        const vectorOf = new Map(toEmbed.map((r, i) => [r.defaultId, vectors[i]!]))
        const writes = rows.map((r): PointWrite => {
          const vector = vectorOf.get(r.defaultId)
          return {
            default_id: r.defaultId,
            data: r.data,
            text: r.text,
            search_text: r.searchText,
            embedding: vector ? toMillionths(vector) : null,
            embedding_key: r.key
          }
        })

        // a large load runs without the HNSW graph, built again after it (knowledge/Graph.ts)
        const { graph: intoGraph } = yield* graph.beforeWrite(rows.length)
        yield* sql.withTransaction(Effect.gen(function*() {
          for (let i = 0; i < writes.length; i += INSERT_CHUNK) {
            yield* repo.upsertPoints(table.workspace_id, id, embedder.key, writes.slice(i, i + INSERT_CHUNK))
          }
          yield* graph.wrote
          if (toEmbed.length > 0) yield* identity.spendTrainingCredits(table.workspace_id, toEmbed.length)
        })).pipe(Effect.orDie)
        if (intoGraph) yield* statistics.changedRows(rows.length)
        return { upserted: rows.length }
      }
    )

    /** `is_unique` columns: against the other rows of the table and within this request. */
    const checkUnique = (
      id: KnowledgeTableId,
      unique: ReadonlyArray<KnowledgeColumn>,
      rows: ReadonlyArray<{ readonly defaultId: string; readonly data: Record<string, unknown> }>
    ) =>
      Effect.gen(function*() {
        const problems: Array<Problem> = []
        for (const column of unique) {
          const values = uniqueWithin(column, rows, problems)
          if (values.length === 0) continue
          const clashes = yield* repo.clashes(id, column.name, values.map(String), rows.map((r) => r.defaultId))
          for (const clash of clashes) {
            const i = rows.findIndex((r) => String(r.data[column.name]) === clash.value)
            if (i >= 0) {
              problems.push({
                field: `points.${i}.${column.name}`,
                message: `has already been taken (by default_id ${clash.default_id})`
              })
            }
          }
        }
        if (problems.length > 0) return yield* Unprocessable.of(problems)
      })

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
      const hits = yield* finder.searchTable(id, input.query, { limit: input.limit, hybrid: input.use_hybrid, filters })
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
      upsert,
      remove,
      search,
      retrieve: finder.retrieve,
      recordUsage,
      link,
      ownTable
    }
  })
}) {}
