/**
 * The `all` role over an embedded database in a data dir of its own (as `parley serve` runs it), built and
 * torn down inside a test, so a test can restart a server on the same data.
 */
import { Effect, Exit, Layer, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { inject } from "vitest"
import { DatabaseLive } from "../../src/App.js"
import { AppConfig } from "../../src/config/AppConfig.js"
import { embeddedDataPath, openPglite } from "../../src/db/Database.js"
import { serverOn, testConfig } from "./TestServer.js"

/** The server on `dataDir` with `config` overrides; `around` (a test clock, say) is provided beneath it. */
export const FileServerLive = (dataDir: string, config: Record<string, string> = {}, around: Layer.Layer<never> = Layer.empty) =>
  serverOn(DatabaseLive).pipe(
    Layer.provideMerge(AppConfig.Default),
    Layer.provide(testConfig({ PARLEY_DATA_DIR: dataDir, ENGINE_SWEEP_INTERVAL_MS: "1000", ...config })),
    Layer.provide(around)
  )

/** A data dir holding the run's migrated database (initialising one takes seconds), removed with the scope. */
export const freshDataDir = (prefix: string) =>
  Effect.gen(function*() {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), prefix))
    const dump = new Blob([Fs.readFileSync(inject("pgDumpPath"))])
    yield* Effect.scoped(openPglite({ dataDir: embeddedDataPath(dataDir), loadDataDir: dump }))
    yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(dataDir, { recursive: true, force: true })))
    return dataDir
  })

/** Builds the server; `run` provides it to an effect, `close` tears it all down (listeners, runner, database). */
export const boot = <E>(server: Layer.Layer<any, E>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(server, scope)
    return {
      run: <A, E2>(effect: Effect.Effect<A, E2, any>) => Effect.provide(effect, context) as Effect.Effect<A, E2>,
      close: Scope.close(scope, Exit.void)
    }
  })
