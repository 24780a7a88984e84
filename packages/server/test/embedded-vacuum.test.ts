/**
 * Autovacuum for the embedded database: tables past autovacuum's thresholds are vacuumed (dead rows
 * gone, statistics fresh), a table only changed a little is left alone, and the loop does it unasked.
 */
import { SqlClient } from "@effect/sql"
import { expect, it } from "@effect/vitest"
import { Effect, Layer, Schedule } from "effect"
import { openPglite } from "../src/db/Database.js"
import { embeddedVacuum, maintain } from "../src/db/EmbeddedVacuum.js"
import * as PgliteClient from "../src/db/PgliteClient.js"

const Embedded = Layer.unwrapScoped(Effect.map(openPglite({}), PgliteClient.layer))

const stats = (table: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ n_dead_tup: number; n_live_tup: number; last_vacuum: string | null; last_analyze: string | null }>`
      select n_dead_tup, n_live_tup, last_vacuum, last_analyze from pg_stat_user_tables where relname = ${table}`
  ).pipe(Effect.map((rows) => rows[0]!))

/** The statistics reach the shared counters at most once a second, on a statement after that. */
const flushed = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.zipRight(Effect.sleep("1100 millis"), sql`select 1`)
)

const churn = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create table churned (id int primary key, v text);
    insert into churned select g, 'x' from generate_series(1, 2000) g;
    update churned set v = 'y' where id <= 1500;
    create table quiet (id int primary key);
    insert into quiet select g from generate_series(1, 10) g;`))

it.live("a table with many dead rows is vacuumed and analysed; a barely changed one is left alone", () =>
  Effect.gen(function*() {
    yield* churn
    yield* flushed
    expect((yield* stats("churned")).n_dead_tup).toBe(1500)
    const due = yield* maintain
    expect(due).toEqual([{ relname: "churned", vacuum: true }])
    yield* flushed
    const after = yield* stats("churned")
    expect(after.n_dead_tup).toBe(0)
    expect(after.n_live_tup).toBe(2000)
    expect(after.last_vacuum).not.toBeNull()
    expect(after.last_analyze).not.toBeNull()
    expect((yield* stats("quiet")).last_vacuum).toBeNull()
    expect(yield* maintain).toEqual([])
  }).pipe(Effect.provide(Embedded)))

it.live("the loop vacuums on its own", () =>
  Effect.gen(function*() {
    yield* churn
    const vacuumed = yield* stats("churned").pipe(
      Effect.filterOrFail((s) => s.last_vacuum !== null),
      Effect.retry(Schedule.spaced("200 millis")),
      Effect.timeout("15 seconds")
    )
    expect(vacuumed.n_dead_tup).toBe(0)
  }).pipe(Effect.provide(embeddedVacuum(300).pipe(Layer.provideMerge(Embedded)))))
