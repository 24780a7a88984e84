/**
 * The multi-process topology (`PARLEY_CLUSTER=socket`): a `worker` runner and a client-only process
 * serving the api and receiver, sharing one Postgres reached through @effect/sql-pg: PGlite behind
 * pglite-socket on the embedded run, a native database from the migrated template in the postgres
 * project. What the client's receiver stores is handed to the conversation entity that only the runner
 * executes, and the reply webhook a client starts is delivered by the runner's workflow. The two stacks
 * run in one test process but share nothing except the database and the runner's TCP port.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { expect, it } from "@effect/vitest"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { ReceiverAnswer } from "@parley/domain"
import { Effect, Layer, Redacted } from "effect"
import * as Fs from "node:fs"
import { inject } from "vitest"
import { databaseWith, ListenersLive, servicesFor } from "../src/App.js"
import { AppConfig } from "../src/config/AppConfig.js"
import { openPglite } from "../src/db/Database.js"
import { pgTypeParser } from "../src/db/PgTypes.js"
import { Deliveries } from "../src/delivery/Deliveries.js"
import { ApiListener, ReceiverListener } from "../src/http/Listener.js"
import { bodyAs } from "./support/Contract.js"
import { createNativeDatabase, databaseMode } from "./support/NativeDatabase.js"
import { funnel, linkWebChannel, ok, put } from "./support/Opportunities.js"
import { freePort as freePortNow } from "./support/Ports.js"
import { attempts, replyOn } from "./support/Replies.js"
import { fetchJson, seedUser, testConfig, TestServer } from "./support/TestServer.js"
import { basic } from "./support/WebChat.js"
import { eventually, webhookReceiver } from "./support/WebhookReceiver.js"

const freePort = () => Effect.promise(freePortNow)

/** The one migrated Postgres both stacks share (its URL), for the test's scope. */
const sharedPostgres = databaseMode === "postgres"
  ? Effect.map(
    Effect.acquireRelease(Effect.promise(() => createNativeDatabase()), (db) => Effect.promise(db.drop)),
    (db) => db.url
  )
  : Effect.gen(function*() {
    const db = yield* openPglite({ loadDataDir: new Blob([Fs.readFileSync(inject("pgDumpPath"))]) })
    const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: 10 })
    yield* Effect.acquireRelease(Effect.promise(() => server.start()), () => Effect.promise(() => server.stop()))
    return `postgres://postgres@${server.getServerConn()}/postgres`
  })

const sqlAt = (url: string) =>
  PgClient.layer({ url: Redacted.make(url), maxConnections: 3, types: { getTypeParser: pgTypeParser } })

it.live("a worker runner executes what an api/receiver client process hands over", () =>
  Effect.gen(function*() {
    const url = yield* sharedPostgres
    const runnerPort = yield* freePort()
    const config = {
      PARLEY_CLUSTER: "socket",
      RUNNER_PORT: String(runnerPort),
      OUTBOUND_ALLOW_PRIVATE: "true",
      WEBHOOK_RETRY_DELAY_MS: "1000"
    }
    const database = databaseWith(sqlAt(url))

    // the worker process: a cluster runner, no listeners
    const worker = servicesFor("worker").pipe(
      Layer.provideMerge(database),
      Layer.provideMerge(AppConfig.Default),
      Layer.provide(testConfig(config))
    )
    yield* Layer.build(worker)

    // the api + receiver process: a cluster client; its own SQL pool, its own services
    const front = Layer.effect(
      TestServer,
      Effect.gen(function*() {
        const api = yield* ApiListener
        const receiver = yield* ReceiverListener
        return { baseUrl: api.url, receiverUrl: receiver.url }
      })
    ).pipe(
      Layer.provideMerge(ListenersLive),
      Layer.provideMerge(servicesFor("api")),
      Layer.provideMerge(database),
      Layer.provideMerge(AppConfig.Default),
      Layer.provide(testConfig(config))
    )
    const context = yield* Layer.build(front)

    yield* Effect.gen(function*() {
      const owner = yield* seedUser()
      const { pipeline } = yield* funnel(owner)
      ok(yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { reply_debounce_ms: 0 }), "pipelines.update")
      const channel = yield* linkWebChannel(owner, pipeline.id)
      const { receiverUrl } = yield* TestServer
      const sent = yield* fetchJson(`${receiverUrl}/web-chat/message`, {
        method: "POST",
        headers: {
          authorization: basic(channel),
          "content-type": "application/json"
        },
        body: JSON.stringify({ contact_id: "visitor-1", message: "Hello from the front" })
      })
      expect(sent.status).toBe(200)
      const messageId = bodyAs(sent, ReceiverAnswer).data!.message_id
      const sql = yield* SqlClient.SqlClient
      const handledAt = yield* eventually(
        sql<{ handled_at: string | null }>`select handled_at from messages where id = ${messageId}`.pipe(
          Effect.map((rows) => rows[0]?.handled_at ?? undefined),
          Effect.orDie
        ),
        20_000
      )
      expect(handledAt).toBeTruthy()
      // the entity ran on the runner: its address is the worker's, and the client registered none
      const runners = yield* sql<{ address: string }>`select address from cluster_runners`.pipe(Effect.orDie)
      expect(runners.map((r) => r.address)).toEqual([`127.0.0.1:${runnerPort}`])

      yield* Effect.scoped(Effect.gen(function*() {
        const receiver = yield* webhookReceiver(() => "ok")
        const reply = yield* replyOn(receiver.url)
        yield* (yield* Deliveries).start(reply.messageId)
        yield* eventually(Effect.map(attempts(reply.messageId), (rows) => rows.length === 1 ? rows : undefined), 20_000)
        expect(receiver.received.map((r) => JSON.parse(r.rawBody).message_id)).toEqual([reply.messageId])
      }))
    }).pipe(Effect.provide(context))
  }).pipe(Effect.scoped), 90_000)
