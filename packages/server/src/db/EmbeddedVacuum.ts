/**
 * Autovacuum for the embedded database. PGlite runs no autovacuum, so without this the rows that
 * updates and deletes leave behind (conversation counters change with every message, engine rows with
 * every step, points with every upsert) would stay forever, newly written rows would keep costing a
 * page write on their first reads (hint bits), and planner statistics would age. Every
 * `EMBEDDED_VACUUM_INTERVAL_MS` this reads the cumulative statistics and treats the tables past
 * autovacuum's default thresholds as Postgres would: VACUUM (ANALYZE) when dead rows exceed 50 + 20% of
 * the live ones or inserted rows 1,000 + 20% since the last vacuum, ANALYZE alone when rows changed
 * exceed 50 + 10%. One table at a time: the embedded database serves one statement at a time, and a
 * vacuum of a table that needs one is short. A Postgres server (`DATABASE_URL`) runs its own.
 */
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Layer, Schedule } from "effect"

interface Due {
  readonly relname: string
  readonly vacuum: boolean
}

/** The tables past autovacuum's default thresholds, most dead rows first. */
const dueTables = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<Due>`
    select relname, (n_dead_tup > 50 + 0.2 * n_live_tup or n_ins_since_vacuum > 1000 + 0.2 * n_live_tup) as vacuum
    from pg_stat_user_tables
    where schemaname = 'public'
      and (n_dead_tup > 50 + 0.2 * n_live_tup or n_ins_since_vacuum > 1000 + 0.2 * n_live_tup
           or n_mod_since_analyze > 50 + 0.1 * n_live_tup)
    order by n_dead_tup desc, relname`)

/** One pass: each due table vacuumed (and analysed) or analysed. */
export const maintain = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const due = yield* dueTables
  for (const table of due) {
    const name = `"${table.relname.replace(/"/g, "\"\"")}"`
    yield* sql.unsafe(table.vacuum ? `vacuum (analyze) ${name}` : `analyze ${name}`).pipe(
      Effect.tap(() => Effect.logDebug(`${table.vacuum ? "Vacuumed" : "Analyzed"} ${table.relname}`)),
      Effect.catchAllCause((cause) => Effect.logWarning(`Maintenance of ${table.relname} failed`, cause))
    )
  }
  return due
})

/** The maintenance loop every `everyMs` (0: none), for the life of the embedded database's layer. */
export const embeddedVacuum = (everyMs: number) =>
  Layer.scopedDiscard(
    everyMs <= 0 ? Effect.void : maintain.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("Embedded database maintenance failed", cause)),
      Effect.repeat(Schedule.spaced(Duration.millis(everyMs))),
      Effect.delay(Duration.millis(everyMs)),
      Effect.forkScoped
    )
  )
