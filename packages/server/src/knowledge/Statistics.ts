/**
 * Planner statistics of `knowledge_points`. The embedded database has no autovacuum, so a table loaded
 * in bulk keeps the statistics of its empty self: the planner then expects a few hundred rows per table,
 * prefers the table's b-tree and sorts every row by distance (92 ms at 20,000 rows) instead of walking
 * the HNSW index (2 ms). Each process counts the rows its upserts and deletes change and, past 10% of
 * the table (at least MIN_CHANGES rows), runs ANALYZE in the background, one at a time. On a Postgres
 * server autovacuum does the same; the extra ANALYZE is harmless there.
 */
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Ref } from "effect"

const MIN_CHANGES = 500
/** A word in more than this share of all points is too common to bring keyword candidates. */
const COMMON_SHARE = 0.02

export const makeStatistics = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const changed = yield* Ref.make(0)
  const lock = yield* Effect.makeSemaphore(1)

  const analyze = lock.withPermits(1)(sql`analyze knowledge_points`).pipe(
    Effect.tap(() => Effect.logDebug("Analyzed knowledge_points")),
    Effect.catchAllCause(Effect.logWarning)
  )

  const estimatedRows = sql<{ reltuples: number }>`
    select reltuples::float8 as reltuples from pg_class where oid = 'knowledge_points'::regclass`.pipe(
    Effect.map((rows) => Math.max(0, Number(rows[0]?.reltuples ?? 0)))
  )

  /** `rows` were written or deleted: analyze once enough of the table changed. */
  const changedRows = (rows: number) =>
    Effect.gen(function*() {
      const total = yield* Ref.updateAndGet(changed, (n) => n + rows)
      if (total < MIN_CHANGES) return
      if (total < 0.1 * (yield* estimatedRows)) return
      yield* Ref.set(changed, 0)
      yield* Effect.forkDaemon(analyze)
    }).pipe(Effect.catchAllCause(Effect.logWarning))

  /** At start: a table never analyzed (reltuples -1) that holds rows is analyzed. */
  const analyzeIfNever = Effect.gen(function*() {
    const [row] = yield* sql<{ reltuples: number; any: boolean }>`
      select reltuples::float8 as reltuples, exists (select 1 from knowledge_points) as any
      from pg_class where oid = 'knowledge_points'::regclass`
    if (row && Number(row.reltuples) < 0 && row.any) yield* analyze
  }).pipe(Effect.catchAllCause(Effect.logWarning))

  /**
   * The most common words of all points with their share of rows, from ANALYZE's statistics of the
   * full-text column (cached for a minute). Each keyword term's candidates come from a GIN bitmap scan
   * that reads the term's whole posting list, however small its limit: a word in a third of 100,000
   * rows costs more than the rest of a search, and matches too much to tell rows apart.
   */
  const commonWords = yield* Effect.cachedWithTTL(
    sql<{ elems: ReadonlyArray<string> | null; freqs: ReadonlyArray<number> | null }>`
      select most_common_elems::text::text[] as elems, most_common_elem_freqs as freqs
      from pg_stats where tablename = 'knowledge_points' and attname = 'tsv'`.pipe(
      Effect.map((rows) => {
        const words = new Map<string, number>()
        const { elems, freqs } = rows[0] ?? { elems: null, freqs: null }
        elems?.forEach((word, i) => words.set(word, Number(freqs?.[i] ?? 0)))
        return words
      }),
      Effect.orElseSucceed(() => new Map<string, number>())
    ),
    Duration.minutes(1)
  )

  /** The query terms worth a keyword lookup: all but the common ones, or the least common if all are. */
  const selective = (terms: ReadonlyArray<string>) =>
    Effect.map(commonWords, (common) => {
      const share = (t: string) => common.get(t) ?? 0
      const rare = terms.filter((t) => share(t) <= COMMON_SHARE)
      if (rare.length > 0 || terms.length === 0) return rare
      return [[...terms].sort((a, b) => share(a) - share(b))[0]!]
    })

  return { changedRows, analyzeIfNever, analyze, selective } as const
})

/** One per process: upserts and deletes count the rows they change, searches read the common words. */
export class KnowledgeStatistics extends Effect.Service<KnowledgeStatistics>()("@parley/server/KnowledgeStatistics", {
  effect: makeStatistics
}) {}
