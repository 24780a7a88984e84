/**
 * Issue 18: a server that starts without a provider key names, in one Warning each, the active pipelines
 * whose model needs that key (they will make no replies). The `all` role is built twice on one database
 * that outlives it (support/FileServer.ts): the first start creates the pipelines, the second is watched.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { boot as bootServer, type FileDatabase, FileServerLive, freshDatabase } from "./support/FileServer.js"
import { ok, post, put } from "./support/Opportunities.js"
import { seedUser } from "./support/TestServer.js"
import { captureWarnings } from "./support/Warnings.js"

const { layer: CaptureWarnings, warnings } = captureWarnings()

/** The `all` role over `database`, without provider keys, its logs captured. */
const boot = (database: FileDatabase) => bootServer(FileServerLive(database, {}, CaptureWarnings))

describe("start-up", () => {
  it.live(
    "logs one Warning per active pipeline whose model needs a key that is not set",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const database = yield* freshDatabase("parley-model-keys-")
        const first = yield* boot(database)
        const ids = yield* first.run(Effect.gen(function*() {
          const owner = yield* seedUser()
          const pipeline = (name: string, ai_model_id: number) =>
            Effect.map(
              post(owner, "/api/user/pipelines", { name, agent_type_id: 1, ai_model_id, language_id: 1 }),
              (r) => ok(r, "pipelines.create").id
            )
          const remote = yield* pipeline("On GPT-4.1 mini", 11)
          const local = yield* pipeline("On the local model", 1)
          const inactive = yield* pipeline("Inactive on GPT-4.1 mini", 11)
          ok(yield* put(owner, `/api/user/pipelines/${inactive}`, { status: "inactive" }), "pipelines.update")
          return { remote, local, inactive }
        }))
        yield* first.close

        warnings.length = 0
        const second = yield* boot(database)
        const named = warnings.filter((w) => w.annotations.reason === "model_not_configured")
        expect(named).toHaveLength(1)
        expect(named[0]!.annotations.pipeline_id).toBe(ids.remote)
        expect(named[0]!.message).toBe(
          `Pipeline ${ids.remote} "On GPT-4.1 mini" will make no replies: the model gpt-4.1-mini needs OPENAI_API_KEY; it is not set`
        )
        yield* second.close
      })),
    60_000
  )
})
