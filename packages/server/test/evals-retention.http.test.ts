/**
 * Evals' sandboxes are deleted past EVAL_SANDBOX_RETENTION_MS once their case finished (docs/evals.md):
 * the contact, opportunity, conversation and messages go, the run keeps each case's transcript with
 * `conversation_id` and `opportunity_id` null, a sandbox whose case is still playing stays however old it
 * is, one whose run stopped beating goes, and the workspace's own contacts are never touched. An eval's
 * replies are no replies to contacts in the metrics, and a case whose sandbox is deleted under it (by
 * hand) ends as an error. The retention here is three seconds (the sweep runs every three seconds), so a
 * finished case's sandbox is read well before it may go.
 */
import { expect, layer } from "@effect/vitest"
import { repliesMade, replyLatency } from "@parley/worker"
import { Effect, Metric } from "effect"
import { type Caller, count, createOpportunity, createStage, get, ok, post, sqlRows } from "./support/Opportunities.js"
import { giveCredits, seedUser, TestServerLive } from "./support/TestServer.js"
import { eventually } from "./support/WebhookReceiver.js"

const runOf = (who: Caller, runId: number) =>
  Effect.map(get(who, `/api/user/eval-runs/${runId}`), (r) => ok(r, "evals.getRun"))

/** Starts a run of `cases` (202): its id. */
const started = (who: Caller, pipelineId: number, cases: ReadonlyArray<unknown>) =>
  Effect.map(post(who, `/api/user/pipelines/${pipelineId}/eval-runs`, { cases }), (r) => {
    expect(r.status).toBe(202)
    return ok(r, "evals.startRun").id
  })

/** Reads the run until it is no longer running. */
const finished = (who: Caller, runId: number) =>
  eventually(Effect.map(runOf(who, runId), (run) => run.status === "running" ? undefined : run), 60_000)

/** The ids of the sandbox a result played in, from the database (the result's own ids may be gone). */
const sandboxOf = (conversationId: number) =>
  Effect.map(
    sqlRows<{ contact_id: number; opportunity_id: number }>`
      select cv.contact_id, co.opportunity_id from conversations cv
      join conversation_opportunity co on co.conversation_id = cv.id where cv.id = ${conversationId}`,
    (rows) => ({ contactId: Number(rows[0]!.contact_id), opportunityId: Number(rows[0]!.opportunity_id) })
  )

/** A workspace with credits and a pipeline on the local model that answers at once. */
const agentPipeline = Effect.gen(function*() {
  const owner = yield* seedUser()
  yield* giveCredits(owner.workspace_id)
  const pipeline = ok(
    yield* post(owner, "/api/user/pipelines", {
      name: "Retention",
      agent_type_id: 1,
      ai_model_id: 1,
      language_id: 1,
      reply_debounce_ms: 0
    }),
    "pipelines.create"
  )
  yield* createStage(owner, pipeline.id, "Open", 1)
  return { owner, pipeline }
})

const gone = (contactId: number) =>
  eventually(
    Effect.map(count`select count(*) as n from contacts where id = ${contactId}`, (n) => (n === 0 ? true : undefined)),
    30_000
  )

layer(TestServerLive({ EVAL_SANDBOX_RETENTION_MS: "3000", ENGINE_SWEEP_INTERVAL_MS: "1000" }), {
  excludeTestServices: true
})(
  "eval sandbox retention",
  (it) => {
    it.effect("a finished case's sandbox is deleted and the run keeps its transcript; a playing case's and the workspace's own contacts stay", () =>
      Effect.gen(function*() {
        const { owner, pipeline } = yield* agentPipeline
        // a contact of the workspace's own, older than the retention: never an eval's to delete
        const own = yield* createOpportunity(owner, { pipeline_id: pipeline.id, contact: { phone: "4915100000777" } })
        yield* sqlRows`update contacts set created_at = now() - interval '40 days' where id = ${own.contact_id}`

        // a case that finishes: its sandbox goes, the run still reads whole; its reply is no reply to a contact
        // in the metrics (only eval sandboxes have messages in this file)
        const made = yield* Metric.value(repliesMade)
        const latencies = yield* Metric.value(replyLatency)
        const first = yield* finished(
          owner,
          yield* started(owner, pipeline.id, [{ name: "greets", messages: ["Hello"] }])
        )
        const [played] = first.results
        expect(played!.conversation_id).not.toBeNull()
        expect(played!.outcome!.transcript.length).toBeGreaterThanOrEqual(2)
        expect((yield* Metric.value(repliesMade)).count).toBe(made.count)
        expect((yield* Metric.value(replyLatency)).count).toBe(latencies.count)
        const sandbox = yield* sandboxOf(played!.conversation_id!)
        yield* gone(sandbox.contactId)
        expect(yield* count`select count(*) as n from conversations where id = ${played!.conversation_id}`).toBe(0)
        expect(yield* count`select count(*) as n from opportunities where id = ${sandbox.opportunityId}`).toBe(0)
        expect(yield* count`select count(*) as n from messages where conversation_id = ${played!.conversation_id}`)
          .toBe(
            0
          )
        const after = yield* runOf(owner, first.id)
        expect(after.status).toBe(first.status)
        expect(after.results[0]).toMatchObject({
          status: played!.status,
          conversation_id: null,
          opportunity_id: null,
          outcome: played!.outcome
        })

        // a case still playing (a 15 s pause before its second message): its sandbox outlives the retention
        const second = yield* started(owner, pipeline.id, [{
          name: "waits",
          messages: ["Hello", { text: "Thanks", wait_ms: 15_000 }]
        }])
        const playing = yield* eventually(
          Effect.map(runOf(owner, second), (run) => {
            const result = run.results[0]!
            return result.status === "running" && result.conversation_id !== null && result.outcome === null
              ? result
              : undefined
          }),
          30_000
        )
        const waiting = yield* sandboxOf(playing.conversation_id!)
        // two sweeps at least, with the sandbox past the retention for one of them, all within the case's pause
        yield* Effect.sleep("6500 millis")
        expect(yield* count`select count(*) as n from contacts where id = ${waiting.contactId}`).toBe(1)
        expect((yield* runOf(owner, second)).results[0]!.status).toBe("running")
        yield* finished(owner, second)
        yield* gone(waiting.contactId)

        // a run whose process stopped mid-case: its case never finished and its run beats no more (its last
        // beat ten minutes ago), so its sandbox goes too; written as such a crash leaves it
        const [orphan] = yield* sqlRows<{ contact_id: number }>`
          with c as (
            insert into contacts (workspace_id, name, is_eval, created_at)
            values (${owner.workspace_id}, 'Eval contact', true, now() - interval '10 minutes') returning id
          ), o as (
            insert into opportunities (workspace_id, pipeline_id, stage_id, contact_id, is_test, is_eval)
            select ${owner.workspace_id}, ${pipeline.id}, ${own.stage_id}, c.id, true, true from c returning id
          ), r as (
            insert into eval_runs (workspace_id, pipeline_id, status, concurrency, cases_total, heartbeat_at)
            values (${owner.workspace_id}, ${pipeline.id}, 'running', 1, 1, now() - interval '10 minutes') returning id
          ), res as (
            insert into eval_results (run_id, workspace_id, position, name, definition, status, opportunity_id, started_at)
            select r.id, ${owner.workspace_id}, 1, 'stopped', '{}', 'running', o.id, now() - interval '10 minutes' from r, o
          )
          select id as contact_id from c`
        yield* gone(Number(orphan!.contact_id))

        expect(yield* count`select count(*) as n from contacts where id = ${own.contact_id}`).toBe(1)
      }))

    it.effect("a case whose sandbox is deleted while it plays ends as an error, and its run finishes", () =>
      Effect.gen(function*() {
        const { owner, pipeline } = yield* agentPipeline
        const run = yield* started(owner, pipeline.id, [{
          name: "loses its sandbox",
          messages: ["Hello", { text: "Thanks", wait_ms: 10_000 }]
        }])
        const playing = yield* eventually(
          Effect.map(runOf(owner, run), (r) => {
            const result = r.results[0]!
            return result.status === "running" && result.conversation_id !== null ? result : undefined
          }),
          30_000
        )
        // by hand, as an operator might: the retention never deletes a playing case's sandbox
        const { contactId } = yield* sandboxOf(playing.conversation_id!)
        yield* sqlRows`delete from contacts where id = ${contactId}`
        const ended = yield* finished(owner, run)
        expect(ended.status).toBe("failed")
        expect(ended.results[0]).toMatchObject({
          status: "error",
          outcome: null,
          error: "The case's sandbox could not be read: it was deleted while the case played."
        })
      }))
  }
)
