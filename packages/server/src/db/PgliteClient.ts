/**
 * An @effect/sql client running on PGlite in-process (real Postgres compiled to WASM), exposed as both
 * `SqlClient` and `PgClient` so application code, PgMigrator and LISTEN/NOTIFY see one pg dialect on
 * the embedded default and on `DATABASE_URL` alike.
 *
 * PGlite is one Postgres session, so a semaphore serialises it: a plain statement holds the permit for
 * itself, a transaction for its whole scope (statements inside it run without re-taking it).
 */
import type { PGlite } from "@electric-sql/pglite"
import * as Reactivity from "@effect/experimental/Reactivity"
import * as Client from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { makeCompiler, PgClient, type PgClientConfig } from "@effect/sql-pg/PgClient"
import { Context, Effect, Layer, Stream } from "effect"
import { parsers } from "./PgTypes.js"

const PgJson = Statement.custom<Statement.Custom<"PgJson", unknown>>("PgJson")
const queryOptions = { parsers }

const run = <A>(f: () => Promise<A>) =>
  Effect.tryPromise({ try: f, catch: (cause) => new SqlError({ cause, message: "Failed to execute statement" }) })

export const make = (db: PGlite) =>
  Effect.gen(function*() {
    const lock = yield* Effect.makeSemaphore(1)

    const makeConnection = (withLock: <A, E, R>(e: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>): Connection => {
      // Like node-pg: without parameters use the simple protocol, which allows multi-statement SQL
      // (@effect/cluster's migrations rely on it); several results come back as an array of row arrays.
      const query = (sql: string, params: ReadonlyArray<unknown>) =>
        params.length === 0
          ? withLock(run(() => db.exec(sql, queryOptions))).pipe(
            Effect.map((rs): Array<any> => rs.length > 1 ? rs.map((r) => r.rows) : (rs[0]?.rows ?? []))
          )
          : withLock(run(() => db.query<any>(sql, params as Array<unknown>, queryOptions))).pipe(
            Effect.map((r) => r.rows)
          )
      return {
        execute: (sql, params, transform) => Effect.map(query(sql, params), (rows) => transform ? transform(rows) : rows),
        executeRaw: (sql, params) => query(sql, params),
        executeValues: (sql, params) =>
          Effect.map(
            withLock(run(() => db.query<any>(sql, params as Array<unknown>, { ...queryOptions, rowMode: "array" }))),
            (r) => r.rows
          ),
        executeUnprepared: (sql, params, transform) =>
          Effect.map(query(sql, params), (rows) => transform ? transform(rows) : rows),
        // PGlite has no server-side cursors: the result is materialised and streamed as one chunk
        executeStream: (sql, params, transform) =>
          Stream.fromIterableEffect(Effect.map(query(sql, params), (rows) => transform ? transform(rows) : rows))
      }
    }
    const plain = makeConnection(lock.withPermits(1))
    const reserved = makeConnection((e) => e)

    const client = yield* Client.make({
      acquirer: Effect.succeed(plain),
      transactionAcquirer: Effect.acquireRelease(lock.take(1), () => lock.release(1)).pipe(Effect.as(reserved)),
      compiler: makeCompiler(undefined, false),
      spanAttributes: [["db.system.name", "postgresql"], ["db.namespace", "pglite"]]
    })

    const config: PgClientConfig = { applicationName: "parley-embedded" }
    const pg: PgClient = Object.assign(client, {
      "~@effect/sql-pg/PgClient": "~@effect/sql-pg/PgClient" as const,
      config,
      // `sql.reserve` would default to the transaction acquirer and hold the lock for the scope's life
      // (cluster's runner storage reserves forever): one session needs no affinity, so use `plain`.
      reserve: Effect.succeed(plain),
      json: (value: unknown) => PgJson(value),
      listen: (channel: string) =>
        Stream.asyncPush<string, SqlError>((emit) =>
          Effect.acquireRelease(
            run(() => db.listen(channel, (payload) => emit.single(payload))),
            (unsubscribe) => Effect.promise(() => unsubscribe())
          )
        ),
      notify: (channel: string, payload: string) =>
        Effect.asVoid(lock.withPermits(1)(run(() => db.query("select pg_notify($1, $2)", [channel, payload]))))
    })
    return pg
  })

export const layer = (db: PGlite): Layer.Layer<PgClient | Client.SqlClient> =>
  Layer.scopedContext(
    Effect.map(make(db), (client) => Context.make(PgClient, client).pipe(Context.add(Client.SqlClient, client)))
  ).pipe(Layer.provide(Reactivity.layer))
