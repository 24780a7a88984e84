/** What the pipeline-version tests share (versions.http.test.ts, versions-drafts.http.test.ts). */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { type Caller, get, ok, post } from "./Opportunities.js"
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
    ok
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
      })
    )
    const open = ok(
      yield* post(who, `/api/user/pipelines/${pipeline.id}/stages`, { name: "Open", nature: "neutral", order: 1 })
    )
    const channel = ok(yield* post(who, "/api/user/channels", { kind: "web", pipeline_id: pipeline.id }))
    return { pipeline, open, channel }
  })

/** A 201 answer's data (publish, rollback). */
export const created = (r: { status: number; body: any }) => {
  expect(r.status).toBe(201)
  return r.body.data
}

/** An eval run once it finished. */
export const finished = (who: Caller, runId: number) =>
  eventually(
    Effect.map(get(who, `/api/user/eval-runs/${runId}`), (r) => {
      const run = ok(r)
      return run.status === "running" ? undefined : run
    }),
    60_000
  )
