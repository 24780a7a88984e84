/**
 * The real server on random ports over a fresh database: in-process PGlite loaded from the run's migrated
 * dump by default, or (PARLEY_TEST_DATABASE=postgres) a database of its own on the run's native Postgres
 * cluster, created from the migrated template (globalSetup.ts) and reached through the production pool
 * (db/PgPool.ts, @effect/sql-pg) as DATABASE_URL makes it.
 */
import { type Scope, Scopes } from "@parley/domain"
import { ConfigProvider, Context, Effect, Layer, Redacted } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { inject } from "vitest"
import { DatabaseLive, databaseWith, ListenersLive, ServicesLive } from "../../src/App.js"
import { AppConfig } from "../../src/config/AppConfig.js"
import { openPglite } from "../../src/db/Database.js"
import * as PgliteClient from "../../src/db/PgliteClient.js"
import { pooledPgClient } from "../../src/db/PgPool.js"
import { ApiListener, ReceiverListener } from "../../src/http/Listener.js"
import { Readiness } from "../../src/http/Readiness.js"
import { Identity } from "../../src/identity/Identity.js"
import { MetricsServerLive } from "../../src/observability/MetricsServer.js"
import { TelemetryLive } from "../../src/observability/Telemetry.js"
import type { ApiResponse } from "./Contract.js"
import { createNativeDatabase, databaseMode } from "./NativeDatabase.js"

export { databaseMode }

/** A database of this suite's own on the native cluster, from the migrated template; dropped at the end. */
const nativeDatabase = Effect.map(
  Effect.acquireRelease(Effect.promise(() => createNativeDatabase()), (db) => Effect.promise(db.drop)),
  (db) => db.url
)

const POOL_SIZE = 4

/** A fresh database from the migrated dump, as the SqlClient the app will use. */
export const TestDatabase = Layer.unwrapScoped(Effect.gen(function*() {
  // the production pool (db/PgPool.ts), as DATABASE_URL makes it
  if (databaseMode === "postgres") return pooledPgClient(Redacted.make(yield* nativeDatabase), POOL_SIZE)
  const dump = new Blob([Fs.readFileSync(inject("pgDumpPath"))])
  return PgliteClient.layer(yield* openPglite({ loadDataDir: dump }))
}))

export const testConfig = (overrides: Record<string, string> = {}) => {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-data-"))
  return Layer.setConfigProvider(ConfigProvider.fromMap(
    new Map(Object.entries({
      HOST: "127.0.0.1",
      PORT: "0",
      RECEIVER_PORT: "0",
      PARLEY_DATA_DIR: dataDir,
      APP_SECRET: "test-app-secret",
      PARLEY_SEED_DEMO: "false",
      ...overrides
    }))
  ))
}

export interface TestServerShape {
  readonly baseUrl: string
  readonly receiverUrl: string
}
export class TestServer extends Context.Tag("test/TestServer")<TestServer, TestServerShape>() {}

/** The `all` role on `database` (already migrated by it): api and receiver listeners and the services. */
export const serverOn = <E, R>(database: Layer.Layer<ServerDatabase, E, R>) =>
  Layer.effect(
    TestServer,
    Effect.gen(function*() {
      const api = yield* ApiListener
      const receiver = yield* ReceiverListener
      // no announce step here: start-up is over once the listeners are bound
      yield* Effect.flatMap(Readiness, (r) => r.markStarted)
      return { baseUrl: api.url, receiverUrl: receiver.url }
    })
  ).pipe(
    Layer.provideMerge(Layer.merge(ListenersLive, MetricsServerLive)),
    Layer.provideMerge(ServicesLive),
    Layer.provideMerge(database)
  )

type ServerDatabase = Layer.Layer.Success<typeof DatabaseLive>

/** The `all` role: api and receiver listeners, services, a migrated database. */
export const TestServerLive = (overrides: Record<string, string> = {}) =>
  serverOn(databaseWith(TestDatabase)).pipe(
    Layer.provide(TelemetryLive("all")),
    Layer.provideMerge(AppConfig.Default),
    Layer.provide(testConfig(overrides))
  )

export type { ApiResponse }

export interface RequestOptions {
  readonly method?: string
  readonly token?: string
  readonly body?: unknown
  readonly rawBody?: string
  readonly headers?: Record<string, string>
}

/** `fetch` with the body parsed as JSON when it is JSON (kept as text otherwise). */
export const fetchJson = (url: string, init: RequestInit = {}) =>
  Effect.promise(async (): Promise<ApiResponse> => {
    const response = await fetch(url, init)
    const text = await response.text()
    const asked = { method: init.method ?? "GET", url }
    let body: unknown = text
    try {
      body = text.length > 0 ? JSON.parse(text) : null
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, body, headers: response.headers, ...asked }
  })

/** `fetch` against the running server; JSON in and out. */
export const call = (path: string, options: RequestOptions = {}) =>
  Effect.flatMap(TestServer, ({ baseUrl }) => {
    const headers: Record<string, string> = { accept: "application/json", ...options.headers }
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
    let body: string | undefined = options.rawBody
    if (options.body !== undefined) {
      headers["content-type"] = "application/json"
      body = JSON.stringify(options.body)
    }
    return fetchJson(baseUrl + path, {
      method: options.method ?? "GET",
      headers,
      ...(body !== undefined ? { body } : {})
    })
  })

let counter = 0

/** A user with their own workspace and a token with the given scopes (all by default). */
export const seedUser = (options: { readonly scopes?: ReadonlyArray<Scope>; readonly email?: string } = {}) =>
  Effect.gen(function*() {
    const identity = yield* Identity
    const email = options.email ?? `user${++counter}-${Date.now()}@example.com`
    const user = yield* identity.createUser({ email, password: "correct horse battery", name: `User ${counter}` })
    const token = yield* identity.createToken({ email, scopes: options.scopes ?? Scopes })
    return { ...user, token: token.token, tokenId: token.id }
  }).pipe(Effect.orDie)

/** Sets a workspace's credits and subscription (by default: 100 credits, enough for any test's replies). */
export const giveCredits = (
  workspaceId: number,
  set: { credits?: number; training_credits?: number; is_subscription_active?: boolean } = { credits: 100 }
) => Effect.flatMap(Identity, (identity) => identity.setWorkspace(workspaceId as never, set)).pipe(Effect.orDie)

export const tokenFor = (email: string, scopes: ReadonlyArray<Scope>, expiresInDays?: number) =>
  Effect.flatMap(Identity, (identity) => identity.createToken({ email, scopes, expiresInDays })).pipe(Effect.orDie)

export { Redacted }
