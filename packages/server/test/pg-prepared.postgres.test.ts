/**
 * Named prepared statements on the pooled Postgres connections (db/PgPrepared.ts), through the server's
 * own SQL client (`pooledPgClient`, one connection, so every statement lands on the same session) on a
 * native database of the test's own: a statement with parameters is parsed once per connection and its
 * plan kept; statements without parameters stay unnamed; the names per connection stay bounded; a
 * migration that changes a prepared statement's result type, a dropped connection and a deallocated
 * statement are all survived. Runs in the `postgres` project only (vitest.config.ts).
 */
import { SqlClient } from "@effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Either, Redacted, Schedule } from "effect"
import { pooledPgClient } from "../src/db/PgPool.js"
import { MAX_PREPARED } from "../src/db/PgPrepared.js"
import { createNativeDatabase, type NativeDatabase, queryUrl } from "./support/NativeDatabase.js"

let database: NativeDatabase

beforeAll(async () => {
  database = await createNativeDatabase({ empty: true })
  await queryUrl(database.adminUrl, "create table prepared_probe (id int primary key, label text)")
  await queryUrl(database.adminUrl, "insert into prepared_probe select i, 'row ' || i from generate_series(1, 100) i")
  await queryUrl(database.adminUrl, `grant all on prepared_probe to ${database.name}`)
})

afterAll(() => database?.drop())

/** The server's SQL client with a pool of one connection. */
const client = () => pooledPgClient(Redacted.make(database.url), 1)

interface Prepared {
  readonly name: string
  readonly statement: string
  readonly generic_plans: number
  readonly custom_plans: number
}

/** This session's prepared statements (the pool's one connection). */
const prepared = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql.unsafe<Prepared>(
      "select name, statement, generic_plans, custom_plans from pg_prepared_statements order by prepare_time, name"
    )
)

const byId = "select label from prepared_probe where id = $1"

describe("prepared statements on Postgres", () => {
  it.effect("a statement with parameters is parsed once per connection and runs on a kept plan", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      for (let i = 1; i <= 12; i++) {
        expect(yield* sql.unsafe<{ label: string }>(byId, [i])).toEqual([{ label: `row ${i}` }])
      }
      const statements = (yield* prepared).filter((p) => p.statement === byId)
      expect(statements).toHaveLength(1)
      expect(statements[0]!.name).toMatch(/^parley_[0-9a-f]{8}_\d+_\d+$/)
      // Postgres plans the first five runs for their values, then keeps a generic plan: no more planning
      expect(statements[0]!.custom_plans + statements[0]!.generic_plans).toBe(12)
      expect(statements[0]!.generic_plans).toBeGreaterThan(0)
      // statements without parameters (transaction control, DDL, migrations) are not named
      yield* sql.unsafe("select count(*) from prepared_probe")
      expect((yield* prepared).some((p) => p.statement.includes("count(*)"))).toBe(false)
    }).pipe(Effect.provide(client())))

  it.effect(`at most ${MAX_PREPARED} per connection, the least recently used deallocated first`, () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const text = (n: number) => `select label, ${n} as n from prepared_probe where id = $1`
      yield* sql.unsafe(byId, [1])
      for (let n = 0; n < MAX_PREPARED + 30; n++) {
        // byId stays in use, so it is never the least recently used
        if (n % 50 === 0) yield* sql.unsafe(byId, [2])
        expect(yield* sql.unsafe<{ n: number }>(text(n), [n % 100 + 1])).toEqual([{ label: `row ${n % 100 + 1}`, n }])
      }
      const statements = yield* prepared
      expect(statements).toHaveLength(MAX_PREPARED)
      const texts = new Set(statements.map((p) => p.statement))
      expect(texts.has(byId)).toBe(true)
      expect(texts.has(text(MAX_PREPARED + 29))).toBe(true)
      expect(texts.has(text(0))).toBe(false)
      // an evicted text is prepared again under a new name when it comes back
      expect(yield* sql.unsafe(text(0), [3])).toEqual([{ label: "row 3", n: 0 }])
      expect((yield* prepared).filter((p) => p.statement === text(0))).toHaveLength(1)
    }).pipe(Effect.provide(client())))

  it.effect("a migration that changes a prepared statement's result type: retried outside a transaction, fails one inside", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe("create table migrated_probe (id int primary key)")
      yield* sql.unsafe("insert into migrated_probe values (1)")
      const star = "select * from migrated_probe where id = $1"
      expect(yield* sql.unsafe(star, [1])).toEqual([{ id: 1 }])
      yield* sql.unsafe("alter table migrated_probe add column note text default 'added'")
      // Postgres refuses the prepared statement (0A000); outside a transaction it runs again, re-prepared
      expect(yield* sql.unsafe(star, [1])).toEqual([{ id: 1, note: "added" }])
      yield* sql.unsafe("alter table migrated_probe add column more int default 7")
      // in a transaction the refusal fails the transaction, as any statement error does
      const failed = yield* sql.withTransaction(sql.unsafe(star, [1])).pipe(Effect.either)
      expect(Either.isLeft(failed)).toBe(true)
      // and the next run outside one prepares the statement anew, the old one deallocated first
      expect(yield* sql.unsafe(star, [1])).toEqual([{ id: 1, note: "added", more: 7 }])
      expect((yield* prepared).filter((p) => p.statement === star)).toHaveLength(1)
      yield* sql.unsafe("drop table migrated_probe")
    }).pipe(Effect.provide(client())))

  it.effect("a lost connection or a deallocated statement: the statement is prepared again", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      expect(yield* sql.unsafe(byId, [4])).toEqual([{ label: "row 4" }])
      // DEALLOCATE ALL under the client's feet (26000 "prepared statement does not exist" next time)
      yield* sql.unsafe("deallocate all")
      expect(yield* sql.unsafe(byId, [5])).toEqual([{ label: "row 5" }])
      // the session is cut, as a Postgres restart cuts them: the next connection starts with no names
      const pid = (yield* sql.unsafe<{ pid: number }>("select pg_backend_pid() as pid"))[0]!.pid
      yield* Effect.promise(() => queryUrl(database.adminUrl, "select pg_terminate_backend($1)", [pid]))
      // the session is gone once Postgres no longer lists it
      yield* Effect.promise(() => queryUrl(database.adminUrl, "select 1 from pg_stat_activity where pid = $1", [pid]))
        .pipe(
          Effect.repeat({ until: (rows) => rows.length === 0, schedule: Schedule.spaced("20 millis") })
        )
      // the pool may still hand out the dead connection once or twice (a query's failure releases it
      // before its socket's close is seen): what counts is that the next connection prepares anew
      const again = yield* sql.unsafe(byId, [6]).pipe(Effect.retry({ times: 3 }))
      expect(again).toEqual([{ label: "row 6" }])
      const next = (yield* sql.unsafe<{ pid: number }>("select pg_backend_pid() as pid"))[0]!.pid
      expect(next).not.toBe(pid)
      expect((yield* prepared).filter((p) => p.statement === byId)).toHaveLength(1)
    }).pipe(Effect.provide(client())))
})
