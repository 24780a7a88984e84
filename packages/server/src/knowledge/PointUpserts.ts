/**
 * Upserting knowledge points (SPEC.md 4.3): validated against the table's columns and `is_unique`, embedded once per
 * change by the table's model (and, while it moves to another, by that one too: TableReembed.ts), charged one
 * training credit per point embedded, written in chunks in one transaction.
 */
import { SqlClient } from "@effect/sql"
import {
  CurrentActor,
  type KnowledgeColumn,
  type KnowledgeTableId,
  KnowledgeTableNotFound,
  Unprocessable
} from "@parley/domain"
import { Data, Effect, Option } from "effect"
import { IdentityRepo } from "../identity/IdentityRepo.js"
import { someOrFail } from "../util/Effects.js"
import { Embedder, toMillionths, toVector } from "./Embedder.js"
import { KnowledgeGraph } from "./Graph.js"
import { KnowledgeRepo, type PointWrite } from "./KnowledgeRepo.js"
import { type Problem, readPoints, render, uniqueWithin } from "./PointInput.js"
import { KnowledgeStatistics } from "./Statistics.js"
import { TableEmbedders } from "./TableEmbedders.js"
import { sameState, TableReembed } from "./TableReembed.js"

/** Rows per insert statement of an upsert. */
const INSERT_CHUNK = 500

/** The table's embedding models changed between reading them and writing (a switch, a swap): the upsert runs again. */
class TableStateChanged extends Data.TaggedError("TableStateChanged") {}

export class PointUpserts extends Effect.Service<PointUpserts>()("@parley/server/PointUpserts", {
  dependencies: [
    TableEmbedders.Default,
    TableReembed.Default,
    KnowledgeGraph.Default,
    KnowledgeRepo.Default,
    KnowledgeStatistics.Default,
    IdentityRepo.Default
  ],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const embedders = yield* TableEmbedders
    const reembed = yield* TableReembed
    const graph = yield* KnowledgeGraph
    const repo = yield* KnowledgeRepo
    const statistics = yield* KnowledgeStatistics
    const identity = yield* IdentityRepo

    /** Workspace, columns and models of a table the caller reaches; 404 otherwise. */
    const ownColumns = (id: KnowledgeTableId) =>
      Effect.flatMap(CurrentActor, (actor) => repo.columns(id, actor.workspaceIds)).pipe(
        someOrFail(() => new KnowledgeTableNotFound())
      )

    /**
     * Points are embedded by the table's model; while it moves to another (TableReembed.ts) by that one too, so no
     * point misses its new vector (the new model failing leaves it to the re-embedding).
     */
    const upsertOnce = (id: KnowledgeTableId, input: ReadonlyArray<Record<string, unknown>>) =>
      Effect.gen(function*() {
        const table = yield* ownColumns(id)
        const cols = table.columns
        const { points, problems } = readPoints(cols, input)
        if (problems.length > 0) return yield* Unprocessable.of(problems)
        const unembeddable = (e: { readonly message: string }) =>
          Unprocessable.of([{ field: "points", message: `could not be embedded: ${e.message}` }])
        const current = yield* embedders.of(table.embedding_model_id).pipe(Effect.catchAll(unembeddable))
        const next = table.reembedding ? yield* Effect.option(embedders.of(table.reembed_model_id)) : Option.none()

        const before = new Map((yield* repo.stored(id, points.map((p) => p.defaultId))).map((r) => [r.default_id, r]))
        const rows = points.map((p) => {
          // an update keeps the columns it does not mention
          const data = { ...(before.get(p.defaultId)?.data ?? {}), ...p.data }
          const searchText = render(cols, data, (c) => c.is_searchable)
          const key = Embedder.keyOf(current.key, searchText)
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
        const texts = toEmbed.map((r) => r.searchText)
        const vectors = texts.length === 0 ? [] : yield* current.embed(texts).pipe(Effect.catchAll(unembeddable))
        const nextVectors = Option.isNone(next) || texts.length === 0
          ? []
          : yield* next.value.embed(texts).pipe(Effect.orElseSucceed(() => []))
        const vectorOf = new Map(toEmbed.map((r, i) => [r.defaultId, i]))
        const writes = rows.map((r): PointWrite => {
          const i = vectorOf.get(r.defaultId)
          const vector = i === undefined ? undefined : vectors[i]
          const nextVector = i === undefined ? undefined : nextVectors[i]
          return {
            default_id: r.defaultId,
            data: r.data,
            text: r.text,
            search_text: r.searchText,
            embedding: vector && current.modelId === null ? toMillionths(vector) : null,
            model_embedding: vector && current.modelId !== null ? toVector(vector) : null,
            embedding_key: r.key,
            next_embedding: nextVector && Option.isSome(next) ? toVector(nextVector) : null,
            next_embedding_key: nextVector && Option.isSome(next) ? Embedder.keyOf(next.value.key, r.searchText) : null
          }
        })

        // a large load runs without the HNSW graph, built again after it (knowledge/Graph.ts)
        const { graph: intoGraph } = yield* graph.beforeWrite(rows.length)
        yield* sql.withTransaction(Effect.gen(function*() {
          // the vectors are for the models read above: a switch or a swap since then means embedding again
          const now = yield* reembed.lockState(id, "share")
          if (Option.isNone(now) || !sameState(now.value, table)) return yield* new TableStateChanged()
          for (let i = 0; i < writes.length; i += INSERT_CHUNK) {
            yield* repo.upsertPoints(table.workspace_id, id, current.key, writes.slice(i, i + INSERT_CHUNK))
          }
          if (current.modelId !== null && vectors.length > 0) yield* repo.recordDimensions(id, vectors[0]!.length)
          yield* graph.wrote
          if (toEmbed.length > 0) yield* identity.spendTrainingCredits(table.workspace_id, toEmbed.length)
        })).pipe(Effect.catchTag("SqlError", Effect.die))
        if (intoGraph) yield* statistics.changedRows(rows.length)
        return { upserted: rows.length }
      })

    const upsert = Effect.fn("PointUpserts.upsert")(
      function*(id: KnowledgeTableId, input: ReadonlyArray<Record<string, unknown>>) {
        return yield* upsertOnce(id, input).pipe(
          Effect.retry({ while: (e) => e._tag === "TableStateChanged", times: 3 }),
          Effect.catchTag("TableStateChanged", Effect.die)
        )
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

    return { upsert }
  })
}) {}
