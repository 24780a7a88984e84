/**
 * Issue 18, "say what happens": how long database work waits is measured on both paths. With DATABASE_URL
 * (the `postgres` project: native Postgres through the real pg pool) every checkout of a pooled connection is
 * timed and the pool's connections are gauged at each scrape; on the embedded database every statement's
 * wait for the single PGlite session is timed.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Metric } from "effect"
import { sessionWait } from "../src/db/PgliteClient.js"
import { poolConnections, poolGauges, poolWait } from "../src/db/PgPool.js"
import { get, ok } from "./support/Opportunities.js"
import { databaseMode, seedUser, TestServerLive } from "./support/TestServer.js"

layer(TestServerLive())("database wait metrics", (it) => {
  it.effect("requests record their wait for a connection (pool) or the session (embedded)", () =>
    Effect.gen(function*() {
      const waited = databaseMode === "postgres" ? poolWait : sessionWait
      const before = (yield* Metric.value(waited)).count
      const owner = yield* seedUser()
      ok(yield* get(owner, "/api/user/pipelines"), "pipelines.list")
      expect((yield* Metric.value(waited)).count).toBeGreaterThan(before)
      if (databaseMode === "postgres") {
        yield* poolGauges
        const total = yield* Metric.value(Metric.tagged(poolConnections, "state", "total"))
        expect(total.value).toBeGreaterThan(0)
        const idle = yield* Metric.value(Metric.tagged(poolConnections, "state", "idle"))
        expect(idle.value).toBeLessThanOrEqual(total.value)
      }
    }))
})
