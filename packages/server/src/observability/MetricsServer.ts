/**
 * Prometheus `/metrics` on its own listener (HOST:METRICS_PORT, off by default): every Effect metric of
 * the process, plus gauges read when scraped: the engine's backlog (cluster messages not yet processed,
 * the oldest contact message no turn has handled), the database's size and the process's memory and
 * event-loop delay.
 */
import { HttpLayerRouter, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Metric, Option } from "effect"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { AppConfig } from "../config/AppConfig.js"
import { poolGauges } from "../db/PgPool.js"
import { statementGauge } from "../db/StatementCount.js"
import { NotFoundRoute } from "../http/ApiRoutes.js"
import { ApiPolicy } from "../http/BodyLimits.js"
import { type BoundListener, listen } from "../http/Listener.js"
import { prometheusText } from "./Prometheus.js"

export class MetricsListener extends Context.Tag("@parley/server/MetricsListener")<MetricsListener, BoundListener>() {}

const pendingClusterMessages = Metric.gauge("parley_cluster_pending_messages", {
  description: "Entity and workflow messages stored and not yet processed (all shards)"
})
const followupsOverdue = Metric.gauge("parley_followups_overdue", {
  description: "Running followup sequences whose next step is past due"
})
const oldestUnhandled = Metric.gauge("parley_oldest_unhandled_message_seconds", {
  description: "Age of the oldest contact message no turn has handled yet (0 when none): how far the engine lags"
})
const residentMemory = Metric.gauge("process_resident_memory_bytes", { description: "Resident memory of this process" })
const heapUsed = Metric.gauge("nodejs_heap_used_bytes", { description: "V8 heap in use" })
const externalMemory = Metric.gauge("nodejs_external_memory_bytes", {
  description: "Memory outside the V8 heap: buffers, and the embedded database's WebAssembly memory"
})
const databaseSize = Metric.gauge("parley_database_size_bytes", {
  description: "Size of the database on disk (pg_database_size)"
})
const eventLoopDelay = Metric.gauge("nodejs_eventloop_delay_p99_seconds", {
  description: "99th percentile of the event loop's delay since the previous scrape"
})

const engineBacklog = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ pending: number; followups: number; oldest: number | null; size: number }>`
    select (select count(*) from cluster_messages where processed = false)::int as pending,
           pg_database_size(current_database())::float8 as size,
           (select count(*) from followup_sequences where status = 'running' and next_due_at < now())::int as followups,
           extract(epoch from now() - (select min(created_at) from messages where role = 'user' and handled_at is null))::float8 as oldest`
  yield* Metric.set(pendingClusterMessages, row?.pending ?? 0)
  yield* Metric.set(followupsOverdue, row?.followups ?? 0)
  yield* Metric.set(oldestUnhandled, Math.max(0, row?.oldest ?? 0))
  if (row !== undefined) yield* Metric.set(databaseSize, row.size)
}).pipe(
  // a database that is away (or a cluster that never started here) leaves the last values
  Effect.catchAllCause((cause) => Effect.logDebug("Metrics: the engine's backlog could not be read", cause))
)

const MetricsRoute = HttpLayerRouter.add(
  "GET",
  "/metrics",
  Effect.gen(function*() {
    const delay = yield* Effect.succeed(loopDelay)
    yield* engineBacklog
    yield* poolGauges
    yield* statementGauge
    const memory = process.memoryUsage()
    yield* Metric.set(residentMemory, memory.rss)
    yield* Metric.set(heapUsed, memory.heapUsed)
    yield* Metric.set(externalMemory, memory.external)
    yield* Metric.set(eventLoopDelay, delay.percentile(99) / 1e9)
    delay.reset()
    return HttpServerResponse.text(prometheusText(yield* Metric.snapshot), {
      contentType: "text/plain; version=0.0.4; charset=utf-8"
    })
  })
)

const loopDelay = monitorEventLoopDelay({ resolution: 20 })

export const MetricsServerLive = Layer.unwrapEffect(Effect.map(AppConfig, (config) =>
  Option.match(config.metricsPort, {
    onNone: () => Layer.empty,
    onSome: (port) =>
      Layer.scopedDiscard(
        Effect.acquireRelease(Effect.sync(() => loopDelay.enable()), () => Effect.sync(() => loopDelay.disable()))
      ).pipe(
        Layer.provideMerge(
          listen(MetricsListener, Layer.merge(MetricsRoute, NotFoundRoute), {
            host: config.host,
            port,
            policy: { ...ApiPolicy, name: "metrics" }
          })
        )
      )
  })))
