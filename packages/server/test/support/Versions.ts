/** What the pipeline-version tests share (versions.http.test.ts, versions-drafts.http.test.ts). */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { type ApiResponse, ok } from "./Contract.js"
import { type Caller, createStage, get, linkWebChannel, post } from "./Opportunities.js"
import { call } from "./TestServer.js"
import { eventually } from "./WebhookReceiver.js"

/** Instructions that quote what to say (the agent never says the rest of its instructions; docs/agent.md). */
export const FIVE_DAYS = "On refunds, say “Refunds take 5 business days.”"
export const TWO_WEEKS = "On refunds, say “Refunds take two weeks.”"

/** The workspace's `drafts` setting, set. */
export const drafts = (who: Caller & { workspace_id: number }, on: boolean) =>
  Effect.map(
    call(`/api/user/workspaces/${who.workspace_id}/settings`, {
      method: "PATCH",
      token: who.token,
      body: { drafts: on }
    }),
    (r) => ok(r, "versions.updateSettings")
  )

/** A pipeline whose instructions say refunds take five days, with a stage "Open" and a web channel. */
export const refundPipeline = (who: Caller) =>
  Effect.gen(function*() {
    const pipeline = ok(
      yield* post(who, "/api/user/pipelines", {
        name: `Versions ${Date.now()} ${Math.random()}`,
        agent_type_id: 1,
        ai_model_id: 1,
        language_id: 1,
        instructions: FIVE_DAYS,
        reply_debounce_ms: 0
      }),
      "pipelines.create"
    )
    const open = yield* createStage(who, pipeline.id, "Open", 1)
    const channel = yield* linkWebChannel(who, pipeline.id)
    return { pipeline, open, channel }
  })

/** A 201 answer's data (publish, rollback), checked against the endpoint's contract. */
export const created = (r: ApiResponse, key: "versions.publish" | "versions.rollback") => {
  expect(r.status).toBe(201)
  return ok(r, key)
}

/** An eval run once it finished. */
export const finished = (who: Caller, runId: number) =>
  eventually(
    Effect.map(get(who, `/api/user/eval-runs/${runId}`), (r) => {
      const run = ok(r, "evals.getRun")
      return run.status === "running" ? undefined : run
    }),
    60_000
  )
