/**
 * The `all` role over a database of a test's own that outlives the server (as `parley serve` runs it),
 * built and torn down inside a test, so a test can restart a server on the same data: the embedded
 * database in a data dir of its own, or in the `postgres` project (NativeDatabase.ts) a native database
 * from the migrated template, given as DATABASE_URL (so a cluster runner on a RUNNER_PORT of its own,
 * as DATABASE_URL makes a server).
 */
import { Effect, Exit, Layer, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { inject } from "vitest"
import { DatabaseLive } from "../../src/App.js"
import { AppConfig } from "../../src/config/AppConfig.js"
import { embeddedDataPath, openPglite } from "../../src/db/Database.js"
import { createNativeDatabase, databaseMode } from "./NativeDatabase.js"
import { freePort } from "./Ports.js"
import { serverOn, testConfig } from "./TestServer.js"

export interface FileDatabase {
  readonly dataDir: string
  /** The server's configuration for it: nothing embedded; DATABASE_URL and RUNNER_PORT on Postgres. */
  readonly config: Record<string, string>
}

/** The server on `database` with `config` overrides; `around` (a test clock, say) is provided beneath it. */
export const FileServerLive = (
  database: FileDatabase,
  config: Record<string, string> = {},
  around: Layer.Layer<never> = Layer.empty
) =>
  serverOn(DatabaseLive).pipe(
    Layer.provideMerge(AppConfig.Default),
    Layer.provide(
      testConfig({ PARLEY_DATA_DIR: database.dataDir, ENGINE_SWEEP_INTERVAL_MS: "1000", ...database.config, ...config })
    ),
    Layer.provide(around)
  )

/**
 * A data dir and a migrated database (the run's dump loaded into the data dir, or a native database from
 * the template: initialising one takes seconds), removed with the scope.
 */
export const freshDatabase = (prefix: string) =>
  Effect.gen(function*() {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), prefix))
    yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(dataDir, { recursive: true, force: true })))
    if (databaseMode === "postgres") {
      const db = yield* Effect.acquireRelease(Effect.promise(() => createNativeDatabase()), (db) =>
        Effect.promise(db.drop))
      const runnerPort = yield* Effect.promise(freePort)
      return { dataDir, config: { DATABASE_URL: db.url, RUNNER_PORT: String(runnerPort) } } satisfies FileDatabase
    }
    const dump = new Blob([Fs.readFileSync(inject("pgDumpPath"))])
    yield* Effect.scoped(openPglite({ dataDir: embeddedDataPath(dataDir), loadDataDir: dump }))
    return { dataDir, config: {} } satisfies FileDatabase
  })

/** Builds the server; `run` provides it to an effect, `close` tears it all down (listeners, runner, database). */
export const boot = <ROut, E>(server: Layer.Layer<ROut, E>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(server, scope)
    return {
      run: <A, E2>(effect: Effect.Effect<A, E2, ROut>): Effect.Effect<A, E2> => Effect.provide(effect, context),
      close: Scope.close(scope, Exit.void)
    }
  })
