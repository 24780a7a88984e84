/**
 * The Postgres connection pool (DATABASE_URL), made here rather than inside PgClient so operators can see
 * it: how long each query or transaction waited for a connection (`parley_db_pool_wait_seconds`), and at
 * each scrape the pool's connections by state (`parley_db_pool_connections{state=total|idle|waiting}`).
 */
import { PgClient } from "@effect/sql-pg"
import { SqlError } from "@effect/sql/SqlError"
import { Context, Duration, Effect, Layer, Metric, MetricBoundaries, Redacted } from "effect"
import pg from "pg"
import { makePgListener } from "./PgListener.js"
import { countStatements, prepareStatements } from "./PgPrepared.js"
import { pgTypeParser } from "./PgTypes.js"
import { countStatement } from "./StatementCount.js"

export const poolWait = Metric.histogram(
  "parley_db_pool_wait_seconds",
  MetricBoundaries.fromIterable([0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]),
  "Postgres (DATABASE_URL): time a query or transaction waited for a pooled connection"
)

export const poolConnections = Metric.gauge("parley_db_pool_connections", {
  description: "Postgres (DATABASE_URL): the pool's connections by state (total, idle, waiting: callers queued for one)"
})

/** The pools of this process (one per PgClient), for the scrape. */
const pools = new Set<pg.Pool>()

/** Times every connection checkout; `pool.query` checks out through `connect` too. */
const timed = (pool: pg.Pool) => {
  const connect = pool.connect.bind(pool) as (callback?: (...args: Array<any>) => void) => any
  // outside any fiber (pg's callback), so no fiber's metric labels apply: update directly, without a fiber per checkout
  const record = (started: number) => poolWait.unsafeUpdate((performance.now() - started) / 1000, [])
  pool.connect = ((callback?: (...args: Array<any>) => void) => {
    const started = performance.now()
    if (typeof callback === "function") {
      return connect((...args: Array<any>) => {
        record(started)
        callback(...args)
      })
    }
    return (connect() as Promise<pg.PoolClient>).then((client) => {
      record(started)
      return client
    })
  }) as typeof pool.connect
  return pool
}

/** Sets the connection gauges from the live pools (called by the metrics scrape). */
export const poolGauges = Effect.suspend(() => {
  let total = 0, idle = 0, waiting = 0
  for (const pool of pools) {
    total += pool.totalCount
    idle += pool.idleCount
    waiting += pool.waitingCount
  }
  return pools.size === 0 ? Effect.void : Effect.all([
    Metric.set(Metric.tagged(poolConnections, "state", "total"), total),
    Metric.set(Metric.tagged(poolConnections, "state", "idle"), idle),
    Metric.set(Metric.tagged(poolConnections, "state", "waiting"), waiting)
  ], { discard: true })
})

const CONNECT_TIMEOUT_MS = 10_000

const types = { getTypeParser: pgTypeParser } as pg.CustomTypesConfig

/** A pool of at most `max` connections to `url`, checked with one query first (as PgClient.layer does). */
const acquirePool = (url: Redacted.Redacted<string>, max: number, prepared: boolean) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const pool = timed(
          new pg.Pool({
            connectionString: Redacted.value(url),
            max,
            application_name: "parley",
            types,
            // a checkout (a new connection, or a wait for a busy pool) fails after this rather than hanging
            // on a database that does not answer: the request is answered 503 (DatabaseUnavailable.ts)
            connectionTimeoutMillis: CONNECT_TIMEOUT_MS
          })
        )
        // an idle connection the server dropped is replaced on the next checkout; without a listener it would crash the
        // process
        pool.on("error", () => {})
        // statements with parameters run prepared, once per connection and SQL text (PgPrepared.ts), unless
        // DATABASE_PREPARED_STATEMENTS=false (a pooler sharing server sessions between clients)
        pool.on("connect", (client) => (prepared ? prepareStatements : countStatements)(client, countStatement))
        try {
          await pool.query("select 1")
        } catch (cause) {
          await pool.end()
          throw cause
        }
        pools.add(pool)
        return pool
      },
      catch: (cause) =>
        new SqlError({ cause, message: `Could not connect to Postgres (DATABASE_URL): ${String(cause)}` })
    }).pipe(Effect.timeoutFail({
      duration: Duration.seconds(10),
      onTimeout: () =>
        new SqlError({
          cause: new Error("timed out"),
          message: "Could not connect to Postgres (DATABASE_URL) within 10 s"
        })
    })),
    (pool) => Effect.promise(() => (pools.delete(pool), pool.end())).pipe(Effect.timeoutOption(1000))
  )

/**
 * PgClient over the pool; its `listen` is PgListener's, which reconnects when Postgres restarts (the
 * client object is the SqlClient and the PgClient at once, so the method is replaced in place).
 */
export const pooledPgClient = (url: Redacted.Redacted<string>, max: number, prepared = true) =>
  Layer.scopedContext(Effect.gen(function*() {
    const context = yield* Layer.build(
      PgClient.layerFromPool({ acquire: acquirePool(url, max, prepared), applicationName: "parley", types })
    )
    const listener = yield* makePgListener(Redacted.value(url))
    Object.assign(Context.get(context, PgClient.PgClient), { listen: listener.listen })
    return context
  }))
