/**
 * An @effect/sql client running on PGlite in-process (real Postgres compiled to WASM), exposed as both
 * `SqlClient` and `PgClient` so application code, PgMigrator and LISTEN/NOTIFY see one pg dialect on
 * the embedded default and on `DATABASE_URL` alike.
 *
 * PGlite is one Postgres session, so a semaphore serialises it: a plain statement holds the permit for
 * itself, a transaction for its whole scope (statements inside it run without re-taking it).
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { makeCompiler, PgClient, type PgClientConfig } from "@effect/sql-pg/PgClient"
import * as Client from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import type { PGlite } from "@electric-sql/pglite"
import { Context, Effect, Layer, Metric, MetricBoundaries, Stream } from "effect"
import { serialize } from "pg-protocol"
import { parsers } from "./PgTypes.js"
import { countStatement } from "./StatementCount.js"

const PgJson = Statement.custom<Statement.Custom<"PgJson", unknown>>("PgJson")
const queryOptions = { parsers }

const MAX_PREPARED = 512

interface Prepared {
  readonly name: string
  readonly paramTypes: ReadonlyArray<number>
  readonly fields: ReadonlyArray<{ readonly name: string; readonly dataTypeID: number }>
}

/**
 * Named prepared statements over PGlite's wire protocol. PGlite's own `query` parses, plans and
 * describes every statement anew in six round trips; here a statement is parsed and described once
 * (per SQL text, LRU-bounded) and each run is one bind/execute/sync message. Planning is most of the
 * cost of a small query on PGlite, so this roughly halves it. Callers hold the client's lock.
 */
const makePreparedStatements = (db: PGlite) => {
  const cache = new Map<string, Prepared>()
  let counter = 0
  const parse = (sqlText: string) => {
    const hit = cache.get(sqlText)
    if (hit) {
      cache.delete(sqlText) // re-insert: most recently used last
      cache.set(sqlText, hit)
      return Promise.resolve(hit)
    }
    return (async () => {
      const name = `parley_${++counter}`
      const { messages } = await db.execProtocol(
        concat([serialize.parse({ name, text: sqlText }), serialize.describe({ type: "S", name }), serialize.sync()]),
        { syncToFs: false }
      )
      const params = messages.find((m) => m.name === "parameterDescription") as unknown as {
        dataTypeIDs: Array<number>
      } | undefined
      const rows = messages.find((m) => m.name === "rowDescription") as unknown as
        | { fields: Array<{ name: string; dataTypeID: number }> }
        | undefined
      const prepared: Prepared = { name, paramTypes: params?.dataTypeIDs ?? [], fields: rows?.fields ?? [] }
      cache.set(sqlText, prepared)
      if (cache.size > MAX_PREPARED) {
        const [oldestText, oldest] = cache.entries().next().value as [string, Prepared]
        cache.delete(oldestText)
        await db.execProtocol(concat([serialize.close({ type: "S", name: oldest.name }), serialize.sync()]), {
          syncToFs: false
        })
      }
      return prepared
    })()
  }
  const serializeParam = (value: unknown, oid: number): string | null => {
    if (value === null || value === undefined) return null
    const serializer = db.serializers[oid]
    return serializer ? serializer(value) : typeof value === "string" ? value : String(value)
  }
  const parseValue = (value: string | null, oid: number): unknown =>
    value === null ? null : (parsers[oid] ?? db.parsers[oid] ?? ((x: string) => x))(value, oid)

  const execute = async (sqlText: string, params: ReadonlyArray<unknown>, arrayRows: boolean): Promise<Array<any>> => {
    let prepared = await parse(sqlText)
    const run = () =>
      db.execProtocol(
        concat([
          serialize.bind({
            statement: prepared.name,
            values: params.map((v, i) => serializeParam(v, prepared.paramTypes[i] ?? 25))
          }),
          serialize.execute({}),
          serialize.sync()
        ])
      )
    let result
    try {
      result = await run()
    } catch (error) {
      // 0A000 "cached plan must not change result type": a migration changed a table under the statement
      if ((error as { code?: string }).code !== "0A000") throw error
      cache.delete(sqlText)
      prepared = await parse(sqlText)
      result = await run()
    }
    const out: Array<any> = []
    for (const m of result.messages) {
      if (m.name !== "dataRow") continue
      const values = (m as unknown as { fields: Array<string | null> }).fields
      if (arrayRows) {
        out.push(values.map((v, i) => parseValue(v, prepared.fields[i]!.dataTypeID)))
      } else {
        const row: Record<string, unknown> = {}
        prepared.fields.forEach((f, i) => (row[f.name] = parseValue(values[i] ?? null, f.dataTypeID)))
        out.push(row)
      }
    }
    return out
  }
  return { execute }
}

const concat = (parts: ReadonlyArray<Uint8Array>) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let offset = 0
  for (const p of parts) {
    out.set(p, offset)
    offset += p.length
  }
  return out
}

/** The embedded database has one session: how long statements and transactions wait for it. */
export const sessionWait = Metric.histogram(
  "parley_db_session_wait_seconds",
  MetricBoundaries.fromIterable([0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]),
  "Embedded database: time a statement or transaction waited for the single PGlite session"
)

/** Takes `permits` of the lock, recording the wait. */
const timedTake = (take: Effect.Effect<number>) =>
  Effect.suspend(() => {
    const started = performance.now()
    return Effect.tap(take, () => Metric.update(sessionWait, (performance.now() - started) / 1000))
  })

const run = <A>(f: () => Promise<A>) =>
  Effect.tryPromise({
    try: () => (countStatement(), f()),
    catch: (cause) => new SqlError({ cause, message: "Failed to execute statement" })
  })

export const make = (db: PGlite) =>
  Effect.gen(function*() {
    const lock = yield* Effect.makeSemaphore(1)
    const prepared = makePreparedStatements(db)

    const makeConnection = (withLock: <A, E, R>(e: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>): Connection => {
      // Like node-pg: without parameters use the simple protocol, which allows multi-statement SQL
      // (@effect/cluster's migrations rely on it); several results come back as an array of row arrays.
      const query = (sql: string, params: ReadonlyArray<unknown>) =>
        params.length === 0
          ? withLock(run(() => db.exec(sql, queryOptions))).pipe(
            Effect.map((rs): Array<any> => rs.length > 1 ? rs.map((r) => r.rows) : (rs[0]?.rows ?? []))
          )
          : withLock(run(() => prepared.execute(sql, params, false)))
      return {
        execute: (sql, params, transform) =>
          Effect.map(query(sql, params), (rows) => transform ? transform(rows) : rows),
        executeRaw: (sql, params) => query(sql, params),
        executeValues: (sql, params) => withLock(run(() => prepared.execute(sql, params, true))),
        executeUnprepared: (sql, params, transform) =>
          Effect.map(query(sql, params), (rows) => transform ? transform(rows) : rows),
        // PGlite has no server-side cursors: the result is materialised and streamed as one chunk
        executeStream: (sql, params, transform) =>
          Stream.fromIterableEffect(Effect.map(query(sql, params), (rows) => transform ? transform(rows) : rows))
      }
    }
    const plain = makeConnection((effect) =>
      Effect.suspend(() => {
        const started = performance.now()
        return lock.withPermits(1)(
          Effect.zipRight(Metric.update(sessionWait, (performance.now() - started) / 1000), effect)
        )
      })
    )
    const reserved = makeConnection((e) => e)

    const client = yield* Client.make({
      acquirer: Effect.succeed(plain),
      transactionAcquirer: Effect.acquireRelease(timedTake(lock.take(1)), () => lock.release(1)).pipe(
        Effect.as(reserved)
      ),
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
          // LISTEN is transactional: under the lock it cannot land inside (and die with) another fiber's transaction
          Effect.acquireRelease(
            lock.withPermits(1)(run(() => db.listen(channel, (payload) => emit.single(payload)))),
            (unsubscribe) => lock.withPermits(1)(Effect.promise(() => unsubscribe()))
          )
        ),
      // same statement as pg_notify through the SQL client (sql-pg's own sends `NOTIFY c, $1`, which Postgres refuses)
      notify: (channel: string, payload: string) =>
        Effect.asVoid(lock.withPermits(1)(run(() => db.query("select pg_notify($1, $2)", [channel, payload]))))
    })
    return pg
  })

export const layer = (db: PGlite): Layer.Layer<PgClient | Client.SqlClient> =>
  Layer.scopedContext(
    Effect.map(make(db), (client) => Context.make(PgClient, client).pipe(Context.add(Client.SqlClient, client)))
  ).pipe(Layer.provide(Reactivity.layer))
