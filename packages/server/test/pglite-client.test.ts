/**
 * The embedded SQL client: the same values as node-pg, prepared statements that survive schema
 * changes and eviction, errors that keep their Postgres codes, transactions that roll back.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { openPglite } from "../src/db/Database.js"
import * as PgliteClient from "../src/db/PgliteClient.js"
import { isUniqueViolation } from "../src/db/SqlErrors.js"

const Embedded = Layer.unwrapScoped(Effect.map(openPglite({}), PgliteClient.layer))

layer(Embedded)("PgliteClient", (it) => {
  it.effect("returns int8 and numeric as numbers, timestamptz as ISO with microseconds, json and arrays parsed", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql`
        select ${12}::bigint as big, ${"1.25"}::numeric as num, ${true}::boolean as flag, ${null}::text as nothing,
               ${JSON.stringify({ a: [1, 2] })}::jsonb as doc, ${["x", "y"]}::text[] as list,
               '2026-11-21 10:00:00.123456+02'::timestamptz as at, ${7}::int as small`
      expect(row).toEqual({
        big: 12,
        num: 1.25,
        flag: true,
        nothing: null,
        doc: { a: [1, 2] },
        list: ["x", "y"],
        at: "2026-11-21T08:00:00.123456Z",
        small: 7
      })
    }))

  it.effect("keeps 64-bit values beyond 2^53 as exact strings (cluster snowflake ids), smaller ones as numbers", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql`select 249857424201093120::bigint as snowflake, 9007199254740991::bigint as largest_safe`
      expect(row).toEqual({ snowflake: "249857424201093120", largest_safe: 9007199254740991 })
    }))

  it.effect("re-prepares a statement whose table changed shape under it", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`create table shapes (id int primary key)`
      yield* sql`insert into shapes values (${1})`
      const query = (id: number) => sql`select * from shapes where id = ${id}`
      expect(yield* query(1)).toEqual([{ id: 1 }])
      yield* sql`alter table shapes add column label text default 'new'`
      expect(yield* query(1)).toEqual([{ id: 1, label: "new" }])
    }))

  it.effect("keeps the Postgres error code, so unique violations are recognised", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`create table uniq (name text unique)`
      yield* sql`insert into uniq values (${"a"})`
      const error = yield* sql`insert into uniq values (${"a"})`.pipe(Effect.flip)
      expect(isUniqueViolation(error)).toBe(true)
      // the session is usable afterwards
      expect(yield* sql`select count(*) as n from uniq where name = ${"a"}`).toEqual([{ n: 1 }])
    }))

  it.effect("still answers after more distinct statements than the prepared cache holds", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      for (let i = 0; i < 600; i++) {
        const [row] = yield* sql<{ readonly n: number }>`select ${i}::int + ${sql.literal(String(i))} as n`
        expect(row?.n).toBe(2 * i)
      }
      const [first] = yield* sql<{ readonly n: number }>`select ${0}::int + 0 as n`
      expect(first?.n).toBe(0)
    }))

  it.effect("rolls a failed transaction back and lets concurrent statements wait for it", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`create table ledger (amount int)`
      const failed = yield* sql.withTransaction(
        Effect.zipRight(sql`insert into ledger values (${5})`, Effect.fail("boom" as const))
      ).pipe(Effect.flip)
      expect(failed).toBe("boom")
      yield* Effect.all([
        sql.withTransaction(
          Effect.zipRight(sql`insert into ledger values (${1})`, sql`insert into ledger values (${2})`)
        ),
        sql`insert into ledger values (${3})`
      ], { concurrency: "unbounded" })
      expect(yield* sql`select coalesce(sum(amount), 0)::int as total from ledger`).toEqual([{ total: 6 }])
    }))
})
