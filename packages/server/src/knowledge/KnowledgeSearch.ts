/**
 * Search of a knowledge table: pure vector (HNSW, cosine) or hybrid (vector plus a bounded keyword side,
 * fused by reciprocal rank, so a keyword-only match is kept). Scoping is the caller's: `Knowledge.search`
 * checks the table is the caller's, `retrieve` takes the tables of the pipeline that runs.
 */
import { SqlClient } from "@effect/sql"
import { Config, Effect, Option } from "effect"
import { toVector } from "./Embedder.js"
import { type Filters, type HitRow, SearchRepo, type TableModelRow } from "./SearchRepo.js"
import { KnowledgeStatistics } from "./Statistics.js"
import { TableEmbedders } from "./TableEmbedders.js"

/** Reciprocal rank fusion constant (the usual 60). */
const RRF_K = 60
/**
 * HNSW candidate list sizes (`hnsw.ef_search`): recall against exact search rises with them, and so does
 * latency. Pure vector search is a nearest-neighbour query and gets the longest list pgvector allows
 * (recall@5 about 0.95 over the bench's queries, 0.96 on its natural-language ones, at 100,000 rows of the
 * local hashing embedding on the graph of migration 0015; about 40 ms p95 served); in hybrid search the
 * vector list is one of two fused by rank and the keyword side finds the lexical matches, so a shorter
 * list keeps it under 30 ms p95. Figures: docs/benchmarks.md.
 */
export const DEFAULT_EF_SEARCH = { vector: 1000, hybrid: 128 } as const
const efSearch = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: "Expected an integer from 10 to 1000", validation: (n) => n >= 10 && n <= 1000 }),
    Config.withDefault(fallback)
  )

const STOP = new Set(
  ("a an and are as at be but by can could do does for from has have how i if in is it its me my of on or our so " +
    "that the their them then there these they this to us was we were what when where which who why will with would " +
    "you your please").split(" ")
)

/** Query terms for the keyword side: whitespace tokens without stopwords, at most 12. */
export const keywordTerms = (query: string) =>
  [
    ...new Set(
      query.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, " ").split(/\s+/).filter((t) => t.length > 0 && !STOP.has(t))
    )
  ].slice(0, 12)

/** Each term as a tsquery operand (a term with inner punctuation, "sku-012345-b", is its parts in a row). */
export const termQueries = (terms: ReadonlyArray<string>) =>
  terms.map((t) => t.replace(/[^\p{L}\p{N}]+/gu, " ").trim().split(" ").filter(Boolean).join(" & ")).filter((t) =>
    t !== ""
  ).map((t) => `(${t})`)

/** `model`: the table's embedding model as the caller just read it (saves reading it again). */
export interface SearchOptions {
  readonly limit: number
  readonly hybrid: boolean
  readonly filters: Filters
  readonly model?: TableModelRow
}

export interface Hit extends HitRow {
  readonly score: number
}

/** Fused by reciprocal rank; keyword hits enter first, see below. */
const fuse = (keywordHits: ReadonlyArray<{ id: string }>, vectorHits: ReadonlyArray<{ id: string }>) => {
  const fused = new Map<string, number>()
  // on equal fused scores (a code found only by keyword, at the top of its list, against the vector list's
  // top) the sort, which is stable, keeps the exact match ahead
  keywordHits.forEach((h, i) => fused.set(h.id, (fused.get(h.id) ?? 0) + 1 / (RRF_K + i + 1)))
  vectorHits.forEach((h, i) => fused.set(h.id, (fused.get(h.id) ?? 0) + 1 / (RRF_K + i + 1)))
  return [...fused.entries()].map(([id, score]) => ({ id, score })).sort((a, b) => b.score - a.score)
}

export class KnowledgeSearch extends Effect.Service<KnowledgeSearch>()("@parley/server/KnowledgeSearch", {
  dependencies: [TableEmbedders.Default, SearchRepo.Default, KnowledgeStatistics.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const embedders = yield* TableEmbedders
    const repo = yield* SearchRepo
    const statistics = yield* KnowledgeStatistics
    const ef = {
      vector: yield* efSearch("KNOWLEDGE_EF_SEARCH", DEFAULT_EF_SEARCH.vector),
      hybrid: yield* efSearch("KNOWLEDGE_HYBRID_EF_SEARCH", DEFAULT_EF_SEARCH.hybrid)
    }

    /** Ranked hits of one table, at most `limit`. */
    const searchTable: (
      tableId: number,
      query: string,
      options: SearchOptions,
      again?: boolean
    ) => Effect.Effect<Array<Hit>> = Effect.fn("KnowledgeSearch.searchTable")(function*(
      tableId: number,
      query: string,
      options: SearchOptions,
      again = true
    ) {
      // the table's current model: while it moves to another, its old vectors are the ones searched
      const table = again && options.model !== undefined ? Option.some(options.model) : yield* repo.tableModel(tableId)
      const modelId = Option.match(table, { onNone: () => null, onSome: (t) => t.embedding_model_id })
      const dimensions = Option.match(table, { onNone: () => null, onSome: (t) => t.embedding_dimensions })
      // a provider that fails leaves the keyword side (hybrid) rather than failing the search
      const embedded = yield* embedders.of(modelId).pipe(
        Effect.flatMap((model) => embedders.queryVector(model, query)),
        Effect.map(Option.some),
        Effect.catchTag("EmbeddingFailed", (e) =>
          Effect.as(
            Effect.logWarning("A knowledge query could not be embedded").pipe(
              Effect.annotateLogs({ knowledge_table_id: tableId, problem: e.message })
            ),
            Option.none()
          ))
      )
      const vector = Option.map(embedded, toVector)
      const candidates = Math.max(options.limit * 4, 40)
      // outside the transaction: a cached lookup runs on a fiber of its own, which would wait for the
      // embedded database's lock that the transaction holds
      const terms = options.hybrid ? yield* statistics.selective(keywordTerms(query)) : []
      // one transaction for both sides, for the settings of the HNSW walk (SearchRepo.settings)
      const { keywordHits, walked } = yield* sql.withTransaction(Effect.gen(function*() {
        yield* repo.settings(options.hybrid ? ef.hybrid : ef.vector)
        const walked = Option.isNone(vector)
          ? []
          : modelId === null
          ? yield* repo.vectorHits(tableId, vector.value, options.filters, candidates)
          : dimensions === null || Option.getOrThrow(embedded).length !== dimensions
          ? []
          : yield* repo.modelVectorHits(tableId, vector.value, dimensions, options.filters, candidates)
        const parts = termQueries(terms)
        const keywordHits = parts.length === 0 ? [] : yield* repo.keywordHits(tableId, terms, parts, options.filters)
        return { keywordHits, walked }
      })).pipe(Effect.orDie)
      // the table's vectors were swapped for another model's between reading its model and walking: once more
      if (again && walked.length === 0 && Option.isSome(vector)) {
        const now = yield* repo.tableModel(tableId)
        if (Option.isSome(now) && now.value.embedding_model_id !== modelId) {
          return yield* searchTable(tableId, query, options, false)
        }
      }
      const vectorHits = [...walked].sort((a, b) => a.distance - b.distance)
      const ranked = options.hybrid
        ? fuse(keywordHits, vectorHits)
        : vectorHits.map((h) => ({ id: h.id, score: 1 - h.distance }))
      const top = ranked.slice(0, options.limit)
      if (top.length === 0) return [] as Array<Hit>
      const byId = new Map((yield* repo.hitRows(top.map((t) => t.id))).map((r) => [r.id, r]))
      return top.flatMap((t): Array<Hit> => {
        const r = byId.get(t.id)
        return r ? [{ ...r, score: t.score }] : []
      })
    })

    /**
     * For the agent: the best rows of the tables attached to the pipeline as it runs (the turn's snapshot
     * names them; no actor: the pipeline is the scope).
     */
    const retrieve = Effect.fn("KnowledgeSearch.retrieve")(function*(
      tableIds: ReadonlyArray<number>,
      query: string,
      mode: "vector" | "hybrid",
      limit: number
    ) {
      if (tableIds.length === 0 || query.trim() === "") return [] as Array<Hit>
      const all = yield* Effect.forEach(
        tableIds,
        (id) => searchTable(Number(id), query, { limit, hybrid: mode === "hybrid", filters: [] })
      )
      return all.flat().sort((a, b) => b.score - a.score).slice(0, limit)
    })

    return { searchTable, retrieve }
  })
}) {}
