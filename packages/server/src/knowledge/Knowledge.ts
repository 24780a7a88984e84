/**
 * Knowledge tables (SPEC.md 2.6, 2.7, 4.3): tables with typed columns, points upserted by `default_id`
 * (validated against the column types and `is_unique`, embedded once per change, charged one training
 * credit per point embedded), cursor pages, deletes, and search: pure vector (HNSW, cosine) or hybrid
 * (vector plus a bounded keyword side, fused by reciprocal rank). Every query is scoped to the caller's
 * workspaces; another workspace's table is "not found".
 */
import { SqlClient, type Statement } from "@effect/sql"
import {
  type ColumnDataType,
  type CreateKnowledgeTable,
  CurrentActor,
  KnowledgeColumn,
  KnowledgePoint,
  type KnowledgeTableId,
  KnowledgeTableWithColumns,
  NotFound,
  PointsPage,
  SearchHit,
  type SearchKnowledge,
  SearchResults,
  Unprocessable,
  type WorkspaceId
} from "@parley/domain"
import { Config, Effect, Option, Schema } from "effect"
import { Embedder, toMillionths, toVector } from "./Embedder.js"
import { KnowledgeGraph } from "./Graph.js"
import { makeStatistics } from "./Statistics.js"

export const tableNotFound = new NotFound({ message: "Knowledge table not found." })

const decodeColumns = Schema.decodeUnknown(Schema.Array(KnowledgeColumn))
const decodeTables = Schema.decodeUnknown(Schema.Array(KnowledgeTableWithColumns))
const decodePoints = Schema.decodeUnknown(Schema.Array(KnowledgePoint))

/** Reciprocal rank fusion constant (the usual 60). */
const RRF_K = 60
/** Rows each keyword term may contribute before ranking: a rare term (a product code) brings all its rows. */
const TERM_CANDIDATES = 50
const KEYWORD_TOP = 50
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
/** Rows per insert statement of an upsert. */
const INSERT_CHUNK = 500

const STOP = new Set(
  ("a an and are as at be but by can could do does for from has have how i if in is it its me my of on or our so " +
    "that the their them then there these they this to us was we were what when where which who why will with would " +
    "you your please").split(" ")
)

/** Query terms for the keyword side: whitespace tokens without stopwords, at most 12. */
export const keywordTerms = (query: string) =>
  [...new Set(query.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, " ").split(/\s+/).filter((t) => t.length > 0 && !STOP.has(t)))].slice(0, 12)

/** Each term as a tsquery operand (a term with inner punctuation, "sku-012345-b", is its parts in a row). */
export const termQueries = (terms: ReadonlyArray<string>) =>
  terms.map((t) => t.replace(/[^\p{L}\p{N}]+/gu, " ").trim().split(" ").filter(Boolean).join(" & ")).filter((t) => t !== "").map((t) => `(${t})`)

const render = (columns: ReadonlyArray<KnowledgeColumn>, data: Record<string, unknown>, only?: (c: KnowledgeColumn) => boolean) =>
  columns
    .filter((c) => (only ? only(c) : true) && data[c.name] !== undefined && data[c.name] !== null && data[c.name] !== "")
    .map((c) => `${c.name}: ${String(data[c.name])}`)
    .join("\n")

const typeError = (type: ColumnDataType, value: unknown): string | null => {
  if (value === null) return null
  switch (type) {
    case "string":
      return typeof value === "string" ? (value.length > 20_000 ? "may not be greater than 20000 characters" : null) : "must be a string"
    case "number":
      return typeof value === "number" && Number.isFinite(value) ? null : "must be a number"
    case "boolean":
      return typeof value === "boolean" ? null : "must be true or false"
    case "date":
      return typeof value === "string" && /^\d{4}-\d{2}-\d{2}/.test(value) && !Number.isNaN(Date.parse(value)) ? null : "must be an ISO 8601 date"
  }
}

export interface Hit {
  readonly id: string
  readonly default_id: string
  readonly knowledge_table_id: number
  readonly table_name: string
  readonly data: Record<string, unknown>
  readonly text: string
  readonly score: number
}

export class Knowledge extends Effect.Service<Knowledge>()("@parley/server/Knowledge", {
  dependencies: [Embedder.Default, KnowledgeGraph.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const embedder = yield* Embedder
    const graph = yield* KnowledgeGraph
    const statistics = yield* makeStatistics
    const ef = {
      vector: yield* efSearch("KNOWLEDGE_EF_SEARCH", DEFAULT_EF_SEARCH.vector),
      hybrid: yield* efSearch("KNOWLEDGE_HYBRID_EF_SEARCH", DEFAULT_EF_SEARCH.hybrid)
    }

    /** The columns of table `t` as a JSON array, in column order. */
    const columnsJson = sql`coalesce((select json_agg(json_build_object(
        'id', c.id, 'name', c.name, 'data_type', c.data_type, 'order', c.sort_order, 'is_searchable', c.is_searchable,
        'is_retrievable', c.is_retrievable, 'is_filterable', c.is_filterable, 'is_unique', c.is_unique,
        'knowledge_table_id', c.knowledge_table_id,
        'created_at', to_char(c.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'updated_at', to_char(c.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
        order by c.sort_order, c.id) from knowledge_columns c where c.knowledge_table_id = t.id), '[]')`

    const selectTables = (where: Statement.Fragment) =>
      sql`
        select t.id, t.workspace_id, t.name, t.description, t.created_at, t.updated_at,
               (select count(*) from knowledge_columns c where c.knowledge_table_id = t.id)::int as columns_count,
               (select count(*) from knowledge_points p where p.knowledge_table_id = t.id)::int as points_count,
               coalesce((select array_agg(pk.pipeline_id order by pk.pipeline_id) from pipeline_knowledge_tables pk
                         where pk.knowledge_table_id = t.id), '{}') as pipeline_ids,
               ${columnsJson} as columns
        from knowledge_tables t where ${where} order by t.id`.pipe(
        Effect.map((rows) => rows.map((r: any) => ({ ...r, pipeline_ids: (r.pipeline_ids as Array<unknown>).map(Number) }))),
        Effect.flatMap(decodeTables),
        Effect.orDie
      )

    /** Workspace and columns of a table the caller reaches, in one statement (search and upsert run this on every call). */
    const ownColumns = (id: KnowledgeTableId) =>
      Effect.gen(function*() {
        const actor = yield* CurrentActor
        const rows = yield* sql<{ workspace_id: number; columns: ReadonlyArray<unknown> }>`
          select t.workspace_id, ${columnsJson} as columns
          from knowledge_tables t where t.id = ${id} and t.workspace_id in ${sql.in(actor.workspaceIds)}`.pipe(Effect.orDie)
        if (rows.length === 0) return yield* tableNotFound
        const columns = yield* decodeColumns(rows[0]!.columns).pipe(Effect.orDie)
        return { workspace_id: Number(rows[0]!.workspace_id), columns }
      })

    /** The table if the caller reaches its workspace; 404 otherwise (another workspace's table included). */
    const ownTable = (id: KnowledgeTableId) =>
      Effect.gen(function*() {
        const actor = yield* CurrentActor
        const rows = yield* selectTables(sql`t.id = ${id} and t.workspace_id in ${sql.in(actor.workspaceIds)}`)
        const table = rows[0]
        if (!table) return yield* tableNotFound
        return table
      })

    const list = Effect.fn("Knowledge.list")(function*() {
      const actor = yield* CurrentActor
      return yield* selectTables(sql`t.workspace_id in ${sql.in(actor.workspaceIds)}`)
    })

    const create = Effect.fn("Knowledge.create")(function*(input: CreateKnowledgeTable) {
      const actor = yield* CurrentActor
      const workspaceId = input.workspace_id ?? actor.defaultWorkspaceId
      if (!actor.workspaceIds.includes(workspaceId)) {
        return yield* Unprocessable.of([{ field: "workspace_id", message: "The selected workspace id is invalid." }])
      }
      const id = yield* sql.withTransaction(Effect.gen(function*() {
        const taken = yield* sql`select 1 from knowledge_tables where workspace_id = ${workspaceId} and lower(name) = lower(${input.name})`
        if (taken.length > 0) return Option.none<number>()
        const [row] = yield* sql<{ id: number }>`
          insert into knowledge_tables (workspace_id, name, description) values (${workspaceId}, ${input.name}, ${input.description ?? null})
          returning id`
        for (const c of input.columns) {
          yield* sql`
            insert into knowledge_columns (workspace_id, knowledge_table_id, name, data_type, sort_order, is_searchable, is_retrievable,
                                           is_filterable, is_unique)
            values (${workspaceId}, ${row!.id}, ${c.name}, ${c.data_type}, ${c.order}, ${c.is_searchable}, ${c.is_retrievable},
                    ${c.is_filterable}, ${c.is_unique})`
        }
        return Option.some(Number(row!.id))
      })).pipe(Effect.orDie)
      if (Option.isNone(id)) return yield* Unprocessable.of([{ field: "name", message: "The name has already been taken." }])
      return yield* ownTable(id.value as KnowledgeTableId)
    })

    const columns = Effect.fn("Knowledge.columns")(function*(id: KnowledgeTableId) {
      return (yield* ownTable(id)).columns
    })

    const pointRows = (where: Statement.Fragment, limit: number) =>
      sql`
        select p.id::text as point_id, p.default_id, p.knowledge_table_id as source_id, t.name as source_name, p.text, p.data,
               json_build_object('used_count', p.used_count, 'latest_time_used',
                 to_char(p.latest_time_used at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) as usage_data,
               p.updated_at as modified_date
        from knowledge_points p join knowledge_tables t on t.id = p.knowledge_table_id
        where ${where} order by p.id limit ${limit}`.pipe(Effect.flatMap(decodePoints), Effect.orDie)

    /** One page in point-id order; the cursor is the last point id of the page. */
    const points = Effect.fn("Knowledge.points")(function*(id: KnowledgeTableId, perPage: number, cursor: string | undefined) {
      const actor = yield* CurrentActor
      yield* ownColumns(id)
      if (cursor !== undefined && !/^[0-9a-f-]{36}$/i.test(cursor)) {
        return yield* Unprocessable.of([{ field: "next_page_offset", message: "is not a cursor from a previous page" }])
      }
      const rows = yield* pointRows(
        cursor === undefined ? sql`p.knowledge_table_id = ${id}` : sql`p.knowledge_table_id = ${id} and p.id > ${cursor}::uuid`,
        perPage + 1
      )
      const page = rows.slice(0, perPage)
      return new PointsPage({
        user_id: actor.userId,
        source_id: id,
        records: page,
        count: page.length,
        next_page_offset: rows.length > perPage ? page[page.length - 1]!.point_id : null
      })
    })

    const upsert = Effect.fn("Knowledge.upsert")(function*(id: KnowledgeTableId, input: ReadonlyArray<Record<string, unknown>>) {
      const table = yield* ownColumns(id)
      const cols = table.columns
      const byName = new Map(cols.map((c) => [c.name, c]))
      const problems: Array<{ field: string; message: string }> = []
      const points = input.map((p, i) => {
        const rawId = p.default_id
        if (rawId === undefined || rawId === null || rawId === "") problems.push({ field: `points.${i}.default_id`, message: "is required" })
        else if (!(typeof rawId === "string" || (typeof rawId === "number" && Number.isInteger(rawId)))) {
          problems.push({ field: `points.${i}.default_id`, message: "must be a string or an integer" })
        } else if (String(rawId).length > 255) problems.push({ field: `points.${i}.default_id`, message: "may not be greater than 255 characters" })
        const data: Record<string, unknown> = {}
        for (const [key, value] of Object.entries(p)) {
          if (key === "default_id") continue
          const column = byName.get(key)
          if (!column) {
            problems.push({ field: `points.${i}.${key}`, message: "is not a column of this table" })
            continue
          }
          const error = typeError(column.data_type, value)
          if (error) problems.push({ field: `points.${i}.${key}`, message: error })
          else data[key] = value
        }
        return { defaultId: String(rawId), data }
      })
      // a default_id twice in one request: the later one would silently win
      const firstIndex = new Map<string, number>()
      points.forEach((p, i) => {
        if (firstIndex.has(p.defaultId)) problems.push({ field: `points.${i}.default_id`, message: "appears more than once in points" })
        else firstIndex.set(p.defaultId, i)
      })
      if (problems.length > 0) return yield* Unprocessable.of(problems)

      const existing = yield* sql<{ default_id: string; data: Record<string, unknown>; embedding_key: string | null }>`
        select default_id, data, embedding_key from knowledge_points
        where knowledge_table_id = ${id} and default_id in ${sql.in(points.map((p) => p.defaultId))}`.pipe(Effect.orDie)
      const before = new Map(existing.map((r) => [r.default_id, r]))
      const rows = points.map((p) => {
        // an update keeps the columns it does not mention
        const data = { ...(before.get(p.defaultId)?.data ?? {}), ...p.data }
        const searchText = render(cols, data, (c) => c.is_searchable)
        const key = Embedder.keyOf(embedder.key, searchText)
        return { ...p, data, text: render(cols, data), searchText, key, embed: before.get(p.defaultId)?.embedding_key !== key }
      })

      // is_unique: against the other rows of the table and within this request
      for (const column of cols.filter((c) => c.is_unique)) {
        const seen = new Map<string, number>()
        for (const [i, r] of rows.entries()) {
          const value = r.data[column.name]
          if (value === undefined || value === null) continue
          const k = JSON.stringify(value)
          if (seen.has(k)) problems.push({ field: `points.${i}.${column.name}`, message: `has the same value as points.${seen.get(k)}` })
          else seen.set(k, i)
        }
        const values = [...seen.keys()].map((k) => JSON.parse(k) as unknown)
        if (values.length === 0) continue
        const clashes = yield* sql<{ default_id: string; value: string }>`
          select default_id, data -> ${column.name} #>> '{}' as value from knowledge_points
          where knowledge_table_id = ${id} and data -> ${column.name} is not null
            and data -> ${column.name} #>> '{}' in ${sql.in(values.map(String))}
            and default_id not in ${sql.in(rows.map((r) => r.defaultId))}`.pipe(Effect.orDie)
        for (const clash of clashes) {
          const i = rows.findIndex((r) => String(r.data[column.name]) === clash.value)
          if (i >= 0) problems.push({ field: `points.${i}.${column.name}`, message: `has already been taken (by default_id ${clash.default_id})` })
        }
      }
      if (problems.length > 0) return yield* Unprocessable.of(problems)

      const toEmbed = rows.filter((r) => r.embed)
      const [credits] = yield* sql<{ training_credits: number }>`
        select training_credits::float8 as training_credits from workspaces where id = ${table.workspace_id}`.pipe(Effect.orDie)
      if (toEmbed.length > 0 && credits!.training_credits < toEmbed.length) {
        return yield* Unprocessable.of([{
          field: "points",
          message: `needs ${toEmbed.length} training credits (one per point embedded); the workspace has ${Math.max(0, credits!.training_credits)} left`
        }])
      }
      const vectors = toEmbed.length === 0
        ? []
        : yield* embedder.model.embedMany(toEmbed.map((r) => r.searchText)).pipe(Effect.orDie)
      const vectorOf = new Map(toEmbed.map((r, i) => [r.defaultId, vectors[i]!]))

      // a large load runs without the HNSW graph, built again after it (knowledge/Graph.ts)
      const { graph: intoGraph } = yield* graph.beforeWrite(rows.length)
      yield* sql.withTransaction(Effect.gen(function*() {
        // one statement per chunk, its rows as one JSON parameter (vectors as integers: see toMillionths)
        for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
          const chunk = rows.slice(i, i + INSERT_CHUNK).map((r) => {
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
          yield* sql`
            insert into knowledge_points (workspace_id, knowledge_table_id, default_id, data, text, search_text, embedding, embedding_key,
                                          embedding_model)
            select ${table.workspace_id}, ${id}, u.default_id, u.data, u.text, u.search_text, l2_normalize(u.embedding::vector),
                   u.embedding_key, ${embedder.key}
            from json_to_recordset(${JSON.stringify(chunk)}::json)
              as u (default_id text, data jsonb, text text, search_text text, embedding int[], embedding_key text)
            on conflict (knowledge_table_id, default_id) do update set
              data = excluded.data, text = excluded.text, search_text = excluded.search_text,
              embedding = coalesce(excluded.embedding, knowledge_points.embedding), embedding_key = excluded.embedding_key,
              embedding_model = excluded.embedding_model, updated_at = now()`
        }
        yield* graph.wrote
        if (toEmbed.length > 0) {
          yield* sql`update workspaces set training_credits = training_credits - ${toEmbed.length}, updated_at = now()
                     where id = ${table.workspace_id}`
        }
      })).pipe(Effect.orDie)
      if (intoGraph) yield* statistics.changedRows(rows.length)
      return { upserted: rows.length }
    })

    const remove = Effect.fn("Knowledge.remove")(function*(id: KnowledgeTableId, ids: ReadonlyArray<string | number>) {
      yield* ownColumns(id)
      const deleted = yield* sql`
        delete from knowledge_points where knowledge_table_id = ${id} and default_id in ${sql.in(ids.map(String))} returning 1`.pipe(Effect.orDie)
      yield* statistics.changedRows(deleted.length)
      return { deleted: deleted.length }
    })

    /**
     * Ranked hits of one table. Vector: HNSW nearest neighbours by cosine distance. Hybrid adds a keyword
     * side that stays bounded on common words: up to TERM_CANDIDATES rows holding every query term, or,
     * when none does, up to TERM_CANDIDATES rows per term (so a rare term, a product code, brings all of
     * its rows); the candidates are ranked with ts_rank_cd and cut to KEYWORD_TOP; both lists are fused
     * by reciprocal rank, so a keyword-only match is kept.
     */
    const searchTable = (
      tableId: number,
      query: string,
      options: { readonly limit: number; readonly hybrid: boolean; readonly filters: ReadonlyArray<readonly [string, string]> }
    ) =>
      Effect.gen(function*() {
        const [vector] = yield* embedder.model.embedMany([query]).pipe(Effect.orDie)
        const filter = options.filters.length === 0
          ? sql``
          : sql`and ${sql.and(options.filters.map(([k, v]) => sql`p.data ->> ${k} = ${v}`))}`
        const candidates = Math.max(options.limit * 4, 40)
        // one transaction for both sides: ef_search for the HNSW walk, and custom plans, because the client's
        // prepared statements would otherwise settle on a generic plan that sorts every row of the table by
        // distance (it cannot see the limit or the table's size)
        // (outside the transaction: a cached lookup runs on a fiber of its own, which would wait for the
        // embedded database's lock that this transaction holds)
        const terms = options.hybrid ? yield* statistics.selective(keywordTerms(query)) : []
        const { keywordHits, vectorHits: walked } = yield* sql.withTransaction(Effect.gen(function*() {
          // iterative scans: when a filter (the table, filterable columns) rejects most of what the HNSW walk
          // finds, it walks on instead of returning too few rows; relaxed order, so the hits are sorted below
          yield* sql`select set_config('hnsw.ef_search', ${String(options.hybrid ? ef.hybrid : ef.vector)}, true),
                            set_config('hnsw.iterative_scan', 'relaxed_order', true),
                            set_config('plan_cache_mode', 'force_custom_plan', true)`
          const vectorHits = yield* sql<{ id: string; distance: number }>`
            select p.id::text as id, p.embedding <=> ${toVector(vector!)}::vector as distance from knowledge_points p
            where p.knowledge_table_id = ${tableId} and p.embedding is not null ${filter}
            order by p.embedding <=> ${toVector(vector!)}::vector limit ${candidates}`
          const parts = termQueries(terms)
          const keywordHits = parts.length === 0 ? [] : yield* sql<{ id: string }>`
            with every_term as (
              -- the rows with every term: what someone typing several words means, and where each word
              -- alone is in too many rows for its first ones to be the right ones, the only way to find them
              select p.id from knowledge_points p where p.knowledge_table_id = ${tableId}
              and p.tsv @@ to_tsquery('simple', ${parts.join(" & ")}) ${filter} limit ${TERM_CANDIDATES}
            ),
            cand as (
              select id from every_term
              union
              -- none has them all (a typo, an extra word): each term brings its own rows (a one-time filter:
              -- not read at all otherwise)
              select c.id from unnest(${`{${terms.map((t) => `"${t.replace(/["\\]/g, "")}"`).join(",")}}`}::text[]) as term,
              lateral (select p.id from knowledge_points p where p.knowledge_table_id = ${tableId}
                       and p.tsv @@ plainto_tsquery('simple', term) ${filter} limit ${TERM_CANDIDATES}) c
              where not exists (select 1 from every_term)
            )
            select p.id::text as id from knowledge_points p join cand using (id)
            order by ts_rank_cd(p.tsv, to_tsquery('simple', ${parts.join(" | ")})) desc
            limit ${KEYWORD_TOP}`
          return { keywordHits, vectorHits }
        })).pipe(Effect.orDie)
        const vectorHits = [...walked].sort((a, b) => Number(a.distance) - Number(b.distance))
        let ranked: Array<{ id: string; score: number }>
        if (!options.hybrid) {
          ranked = vectorHits.map((h) => ({ id: h.id, score: 1 - Number(h.distance) }))
        } else {
          const fused = new Map<string, number>()
          // keyword hits enter first: on equal fused scores (a code found only by keyword, at the top of its
          // list, against the vector list's top) the sort, which is stable, keeps the exact match ahead
          keywordHits.forEach((h, i) => fused.set(h.id, (fused.get(h.id) ?? 0) + 1 / (RRF_K + i + 1)))
          vectorHits.forEach((h, i) => fused.set(h.id, (fused.get(h.id) ?? 0) + 1 / (RRF_K + i + 1)))
          ranked = [...fused.entries()].map(([id, score]) => ({ id, score })).sort((a, b) => b.score - a.score)
        }
        const top = ranked.slice(0, options.limit)
        if (top.length === 0) return [] as Array<Hit>
        const rows = yield* sql<{ id: string; default_id: string; knowledge_table_id: number; table_name: string; data: Record<string, unknown>; text: string }>`
          select p.id::text as id, p.default_id, p.knowledge_table_id, t.name as table_name, p.data, p.text
          from knowledge_points p join knowledge_tables t on t.id = p.knowledge_table_id
          where p.id in ${sql.in(top.map((t) => t.id))}`.pipe(Effect.orDie)
        const byId = new Map(rows.map((r) => [r.id, r]))
        return top.flatMap((t) => {
          const r = byId.get(t.id)
          return r ? [{ ...r, knowledge_table_id: Number(r.knowledge_table_id), score: t.score }] : []
        })
      })

    const search = Effect.fn("Knowledge.search")(function*(id: KnowledgeTableId, input: SearchKnowledge) {
      const table = yield* ownColumns(id)
      const filters: Array<readonly [string, string]> = []
      const problems: Array<{ field: string; message: string }> = []
      for (const [key, value] of Object.entries(input.filters ?? {})) {
        const column = table.columns.find((c) => c.name === key)
        if (!column || !column.is_filterable) problems.push({ field: `filters.${key}`, message: "is not a filterable column of this table" })
        else filters.push([key, String(value)])
      }
      if (problems.length > 0) return yield* Unprocessable.of(problems)
      const hits = yield* searchTable(id, input.query, { limit: input.limit, hybrid: input.use_hybrid, filters })
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

    /**
     * For the agent: the best rows of the tables attached to the pipeline as it runs (the turn's snapshot
     * names them; no actor: the pipeline is the scope).
     */
    const retrieve = (tableIds: ReadonlyArray<number>, query: string, mode: "vector" | "hybrid", limit: number) =>
      Effect.gen(function*() {
        if (tableIds.length === 0 || query.trim() === "") return [] as Array<Hit>
        const all = yield* Effect.forEach(tableIds, (id) => searchTable(Number(id), query, { limit, hybrid: mode === "hybrid", filters: [] }))
        return all.flat().sort((a, b) => b.score - a.score).slice(0, limit)
      })

    /** Counts the rows a reply used. */
    const recordUsage = (pointIds: ReadonlyArray<string>) =>
      pointIds.length === 0
        ? Effect.void
        : sql`update knowledge_points set used_count = used_count + 1, latest_time_used = now()
              where id in ${sql.in(pointIds)}`.pipe(Effect.asVoid)

    /** attach (additive) and detach tables of the pipeline's workspace; unknown or foreign ids are 422. */
    const link = (workspaceId: WorkspaceId, pipelineId: number, attach: ReadonlyArray<number>, detach: ReadonlyArray<number>) =>
      Effect.gen(function*() {
        const wanted = [...new Set([...attach, ...detach])]
        if (wanted.length === 0) return
        const known = yield* sql<{ id: number }>`
          select id from knowledge_tables where workspace_id = ${workspaceId} and id in ${sql.in(wanted)}`
        const ok = new Set(known.map((r) => Number(r.id)))
        const bad = [
          ...attach.flatMap((id, i) => ok.has(id) ? [] : [{ field: `attach_knowledge_table_ids.${i}`, message: "The selected knowledge table id is invalid." }]),
          ...detach.flatMap((id, i) => ok.has(id) ? [] : [{ field: `detach_knowledge_table_ids.${i}`, message: "The selected knowledge table id is invalid." }])
        ]
        if (bad.length > 0) return yield* Unprocessable.of(bad)
        for (const id of attach) {
          yield* sql`insert into pipeline_knowledge_tables (pipeline_id, knowledge_table_id) values (${pipelineId}, ${id}) on conflict do nothing`
        }
        if (detach.length > 0) {
          yield* sql`delete from pipeline_knowledge_tables where pipeline_id = ${pipelineId} and knowledge_table_id in ${sql.in(detach)}`
        }
      })

    return { list, create, columns, points, upsert, remove, search, retrieve, recordUsage, link, ownTable }
  })
}) {}
