/**
 * The HNSW graph of knowledge points (`knowledge_points_embedding_idx`) around large loads.
 *
 * Written row by row, the graph is most of an upsert's cost and grows with it: 7–10 ms of CPU per point
 * on the embedded database at 20,000–100,000 points, against 1.7–3.5 ms per point for CREATE INDEX, which
 * builds the whole graph in memory (docs/benchmarks.md). So when a load is large against the table (its
 * rows since the last pause reach LOAD_SHARE of the points and at least MIN_LOAD), the upsert drops the
 * graph and the load runs without it; once writes pause (fewer than SLOW_ROWS in QUIET), the keeper, one
 * runner of the cluster, builds it again. Meanwhile search is exact: the same statement, planned as a
 * filtered scan of the table's rows sorted by distance.
 *
 * The state is durable as it is: the graph's absence is in the catalog, and the keeper builds whatever is
 * missing when it starts, after a crash too. On the embedded database the build is one transaction (a crash
 * mid-build leaves no graph, and the next start builds it) and holds the database while it runs, as every
 * statement there does; on Postgres it is `create index concurrently`, so searches and writes go on (exact
 * until it is valid), and a build that died half-way (an invalid index) is dropped and built again.
 */
import { Singleton } from "@effect/cluster"
import { SqlClient, SqlSchema } from "@effect/sql"
import { Duration, Effect, Layer, Metric, Schedule, Schema } from "effect"

export const GRAPH_INDEX = "knowledge_points_embedding_idx"
/** As migration 0015 built it. */
const GRAPH_DEFINITION = "on knowledge_points using hnsw (embedding vector_cosine_ops) with (ef_construction = 128)"
/** A load this large (rows since the last pause) may drop the graph... */
const MIN_LOAD = 1_000
/** ...once it is this share of the table's points: the rest of it is then likely as large again. */
const LOAD_SHARE = 0.5
/** Writes pause: no write for this long, or fewer than SLOW_ROWS in it. */
export const QUIET = Duration.seconds(3)
const SLOW_ROWS = 200
/** Memory for the build: about 2 kB per point keeps a 256-dimension graph in memory. */
const BYTES_PER_POINT = 2_048
const MIN_MEMORY_MB = 64
const MAX_MEMORY_MB = { embedded: 1_024, postgres: 256 } as const

export const graphReady = Metric.gauge("parley_knowledge_graph_ready", {
  description:
    "1 while the HNSW graph of knowledge points is built and valid, 0 while a large load runs without it or it is being built (the keeper's process)"
})
export const graphBuilds = Metric.counter("parley_knowledge_graph_builds_total", {
  description: "HNSW graphs of knowledge points built after a large load or at start",
  incremental: true
})
export const graphSuspensions = Metric.counter("parley_knowledge_graph_suspensions_total", {
  description: "Large knowledge loads that dropped the HNSW graph to build it after the load",
  incremental: true
})

export class KnowledgeGraph extends Effect.Service<KnowledgeGraph>()("@parley/server/KnowledgeGraph", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [{ embedded }] =
      (yield* sql<{ embedded: boolean }>`select version() like '%PGlite%' as embedded`.pipe(Effect.orDie)) as [
        { embedded: boolean }
      ]
    const quietSeconds = Duration.toSeconds(QUIET)

    /**
     * Before an upsert writes `rows` points: counts them into the current load (a load ends at a pause
     * of QUIET between one upsert's end and the next one's start) and drops the graph when the load is
     * large against the table. Whether the rows go into the graph: without it, the planner's statistics
     * wait for the build (the keeper analyzes the table after it).
     */
    const beforeWrite = Effect.fn("KnowledgeGraph.beforeWrite")(function*(rows: number) {
      const [load] = yield* sql<{ rows: number; graph: boolean; points: number }>`
        insert into knowledge_graph_load as l (id, rows, last_write_at) values (true, ${rows}, now())
        on conflict (id) do update set
          rows = case when l.last_write_at < now() - make_interval(secs => ${quietSeconds}) then ${rows} else l.rows + ${rows} end,
          last_write_at = now()
        returning rows::float8 as rows, to_regclass(${GRAPH_INDEX}) is not null as graph,
          (select greatest(reltuples, 0)::float8 from pg_class where oid = 'knowledge_points'::regclass) as points`
      if (!load || !load.graph) return { graph: false }
      if (load.rows < MIN_LOAD || load.rows < LOAD_SHARE * load.points) return { graph: true }
      yield* Effect.logInfo("A large knowledge load: the HNSW graph is dropped and built after it").pipe(
        Effect.annotateLogs({ loadRows: load.rows, points: load.points })
      )
      // concurrently on Postgres: waits for searches using it instead of blocking new ones meanwhile
      yield* embedded
        ? sql`drop index if exists ${sql(GRAPH_INDEX)}`
        : sql`drop index concurrently if exists ${sql(GRAPH_INDEX)}`
      yield* Metric.increment(graphSuspensions)
      return { graph: false }
    }, Effect.orDie)

    /** In the upsert's transaction, when its rows are written: the load's pause is counted from here. */
    const wrote = sql`update knowledge_graph_load set last_write_at = clock_timestamp()`.pipe(Effect.asVoid)

    /** The graph's state in the catalog, and the current load. */
    const state = sql<{ valid: boolean | null; rows: number | null; idle: boolean | null }>`
      select (select i.indisvalid from pg_index i where i.indexrelid = to_regclass(${GRAPH_INDEX})) as valid,
             l.rows::float8 as rows, l.last_write_at < now() - make_interval(secs => ${quietSeconds}) as idle
      from (select 1) one left join knowledge_graph_load l on true`.pipe(Effect.map((rows) => rows[0]!))

    const memory = (points: number) =>
      `${
        Math.round(
          Math.min(
            MAX_MEMORY_MB[embedded ? "embedded" : "postgres"],
            Math.max(MIN_MEMORY_MB, (points * BYTES_PER_POINT) / 2 ** 20)
          )
        )
      }MB`

    const countPoints = SqlSchema.single({
      Request: Schema.Void,
      Result: Schema.Struct({ points: Schema.Number }),
      execute: () => sql`select count(*)::float8 as points from knowledge_points`
    })

    /**
     * Builds the graph, dropping an invalid one first (what a concurrent build that died left behind). The
     * memory is sized on the points counted now: the catalog's estimate is as old as the last ANALYZE,
     * which a large load skips, and a graph that outgrows its memory is built on disk, several times slower.
     */
    const build = Effect.gen(function*() {
      const { points } = yield* countPoints(undefined)
      yield* Effect.logInfo("Building the HNSW graph of knowledge points").pipe(Effect.annotateLogs({ points }))
      const started = Date.now()
      if (embedded) {
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`select set_config('maintenance_work_mem', ${memory(points)}, true)`
          yield* sql`drop index if exists ${sql(GRAPH_INDEX)}`
          yield* sql.unsafe(`create index if not exists ${GRAPH_INDEX} ${GRAPH_DEFINITION}`)
        }))
      } else {
        // one connection for the session's memory setting; `concurrently` runs outside a transaction
        yield* Effect.scoped(Effect.gen(function*() {
          const connection = yield* sql.reserve
          const run = (statement: string) => connection.executeUnprepared(statement, [], undefined)
          yield* run(`drop index concurrently if exists ${GRAPH_INDEX}`)
          yield* run(`set maintenance_work_mem = '${memory(points)}'`)
          yield* run(`create index concurrently if not exists ${GRAPH_INDEX} ${GRAPH_DEFINITION}`).pipe(
            Effect.ensuring(run("reset maintenance_work_mem").pipe(Effect.ignore))
          )
        }))
      }
      // the statistics the load skipped (knowledge/Statistics.ts), for the planner and the keyword side
      yield* sql`analyze knowledge_points`
      yield* Metric.increment(graphBuilds)
      yield* Effect.logInfo("Built the HNSW graph of knowledge points").pipe(
        Effect.annotateLogs({ points, seconds: (Date.now() - started) / 1000 })
      )
    })

    /**
     * One look: a valid graph is left alone; a missing or invalid one is built once writes pause
     * (no write for QUIET, or fewer than SLOW_ROWS since the look QUIET ago).
     */
    const samples: Array<{ readonly at: number; readonly rows: number }> = []
    const check = Effect.gen(function*() {
      const s = yield* state
      yield* Metric.set(graphReady, s.valid === true ? 1 : 0)
      if (s.valid === true) return void samples.splice(0)
      const now = Date.now()
      const rows = s.rows ?? 0
      samples.push({ at: now, rows })
      while (samples.length > 1 && samples[1]!.at <= now - Duration.toMillis(QUIET)) samples.shift()
      const first = samples[0]!
      const slow = first.at <= now - Duration.toMillis(QUIET) && rows >= first.rows && rows - first.rows < SLOW_ROWS
      if (s.idle === false && !slow) return
      yield* build
      samples.splice(0)
      yield* Metric.set(graphReady, 1)
    })

    return { beforeWrite, wrote, check, embedded } as const
  })
}) {}

/** The keeper: one runner of the cluster looks every second (and at once when it starts). */
export const KnowledgeGraphLive = Singleton.make(
  "Knowledge/graph",
  Effect.flatMap(KnowledgeGraph, (graph) =>
    graph.check.pipe(
      Effect.catchAllCause((cause) =>
        Effect.logWarning("The HNSW graph of knowledge points could not be built", cause)
      ),
      Effect.repeat(Schedule.spaced(Duration.seconds(1)))
    ))
).pipe(Layer.provide(KnowledgeGraph.Default))
