/**
 * Issue 18: a server that starts without a provider key names, in one Warning each, the active pipelines
 * whose model needs that key (they will make no replies). The `all` role is built twice on one file-backed
 * database: the first start creates the pipelines, the second is watched.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { inject } from "vitest"
import { DatabaseLive } from "../src/App.js"
import { AppConfig } from "../src/config/AppConfig.js"
import { embeddedDataPath, openPglite } from "../src/db/Database.js"
import { ok, post, put } from "./support/Opportunities.js"
import { seedUser, serverOn, testConfig } from "./support/TestServer.js"
import { captureWarnings } from "./support/Warnings.js"

const { layer: CaptureWarnings, warnings } = captureWarnings()

/** A data dir holding the run's migrated database. */
const freshDataDir = Effect.gen(function*() {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-model-keys-"))
  const dump = new Blob([Fs.readFileSync(inject("pgDumpPath"))])
  yield* Effect.scoped(openPglite({ dataDir: embeddedDataPath(dataDir), loadDataDir: dump }))
  yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(dataDir, { recursive: true, force: true })))
  return dataDir
})

/** The `all` role over the embedded database in `dataDir`, without provider keys, its logs captured. */
const boot = (dataDir: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const layer = serverOn(DatabaseLive).pipe(
      Layer.provideMerge(AppConfig.Default),
      Layer.provide(testConfig({ PARLEY_DATA_DIR: dataDir })),
      Layer.provide(CaptureWarnings)
    )
    const context = yield* Layer.buildWithScope(layer, scope)
    return {
      run: <A, E>(effect: Effect.Effect<A, E, any>) => Effect.provide(effect, context) as Effect.Effect<A, E>,
      close: Scope.close(scope, Exit.void)
    }
  })

describe("start-up", () => {
  it.live("logs one Warning per active pipeline whose model needs a key that is not set", () =>
    Effect.scoped(Effect.gen(function*() {
      const dataDir = yield* freshDataDir
      const first = yield* boot(dataDir)
      const ids = yield* first.run(Effect.gen(function*() {
        const owner = yield* seedUser()
        const pipeline = (name: string, ai_model_id: number) =>
          Effect.map(post(owner, "/api/user/pipelines", { name, agent_type_id: 1, ai_model_id, language_id: 1 }), (r) => ok(r).id as number)
        const remote = yield* pipeline("On GPT-4.1 mini", 11)
        const local = yield* pipeline("On the local model", 1)
        const inactive = yield* pipeline("Inactive on GPT-4.1 mini", 11)
        ok(yield* put(owner, `/api/user/pipelines/${inactive}`, { status: "inactive" }))
        return { remote, local, inactive }
      }))
      yield* first.close

      warnings.length = 0
      const second = yield* boot(dataDir)
      const named = warnings.filter((w) => w.annotations.reason === "model_not_configured")
      expect(named).toHaveLength(1)
      expect(named[0]!.annotations.pipeline_id).toBe(ids.remote)
      expect(named[0]!.message).toBe(
        `Pipeline ${ids.remote} "On GPT-4.1 mini" will make no replies: the model gpt-4.1-mini needs OPENAI_API_KEY; it is not set`
      )
      yield* second.close
    })), 60_000)
})
