/** A provider channel as its tests start: an owner whose pipeline answers at once, and the channel linked to it. */
import { Effect } from "effect"
import { type Caller, createStage, ok, post, put } from "./Opportunities.js"
import { giveCredits, seedUser } from "./TestServer.js"

export type Owner = Caller & { readonly workspace_id: number }

/**
 * A workspace with credits and a pipeline answering at once on the local model (one stage), and a channel created
 * with `channel` (kind, name, credentials) linked to it.
 */
export const connectChannel = <Created>(channel: Record<string, unknown>) =>
  Effect.gen(function*() {
    const owner: Owner = yield* seedUser()
    yield* giveCredits(owner.workspace_id)
    const pipeline = ok(
      yield* post(owner, "/api/user/pipelines", { name: "Support", agent_type_id: 1, ai_model_id: 1, language_id: 1 }),
      "pipelines.create"
    )
    ok(yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { reply_debounce_ms: 0 }), "pipelines.update")
    yield* createStage(owner, pipeline.id, "New", 1)
    const created = yield* post(owner, "/api/user/channels", { ...channel, pipeline_id: pipeline.id })
    return { owner, pipeline, channel: ok(created, "channels.create") as unknown as Created }
  })
