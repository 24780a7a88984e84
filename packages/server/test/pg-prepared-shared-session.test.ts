/**
 * Prepared statements (db/PgPrepared.ts) where one server session serves several clients: PGlite behind
 * pglite-socket is one Postgres session for every connection, as a pooler in transaction mode can be. Two
 * of the server's own pools (`pooledPgClient`, one connection each, statements prepared) on that one
 * session prepare different statements side by side: each name is its connection's own, so neither
 * clashes with the other's ("prepared statement already exists") nor runs the other's statement. Needs no
 * database of the run, so it runs alike in both projects.
 */
import { SqlClient } from "@effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { Context, Effect, Layer, Redacted } from "effect"
import { pooledPgClient } from "../src/db/PgPool.js"

let db: PGlite
let server: PGLiteSocketServer
let url: string

beforeAll(async () => {
  db = await PGlite.create()
  server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: 2 })
  await server.start()
  url = `postgres://postgres@${server.getServerConn()}/postgres`
})

afterAll(async () => {
  await server?.stop()
  await db?.close()
})

/** One of the server's pools, of one connection, on the shared session. */
const pool = () => Layer.build(pooledPgClient(Redacted.make(url), 1))

describe("prepared statements on a session shared by several clients", () => {
  it.scoped("two connections prepare their own statements side by side and each runs its own", () =>
    Effect.gen(function*() {
      const a = Context.get(yield* pool(), SqlClient.SqlClient)
      const b = Context.get(yield* pool(), SqlClient.SqlClient)
      for (let i = 0; i < 8; i++) {
        // each connection's first statement would be its first name: the same name, were names per connection only
        expect(yield* a.unsafe<{ n: number }>("select $1::int + 1 as n", [i])).toEqual([{ n: i + 1 }])
        expect(yield* b.unsafe<{ s: string }>("select $1::text || '-b' as s", [`v${i}`])).toEqual([{ s: `v${i}-b` }])
      }
      // both statements are prepared on the one session, under two names
      const prepared = yield* a.unsafe<{ name: string; statement: string }>(
        "select name, statement from pg_prepared_statements order by name"
      )
      expect(prepared.map((p) => p.statement).sort()).toEqual([
        "select $1::int + 1 as n",
        "select $1::text || '-b' as s"
      ])
      expect(new Set(prepared.map((p) => p.name)).size).toBe(2)
    }))
})
