/**
 * Evals (docs/evals.md): `run_evals` plays cases on a pipeline's live configuration in sandboxed test
 * conversations and may wait for the verdicts; `get_eval_run` reads a run. As REST's eval-runs endpoints.
 */
import { EvalCaseId, EvalCaseSpec, EvalRun, EvalRunId, EvalVersionFromString } from "@parley/domain"
import { IntBetween } from "@parley/domain/Schemas"
import { Duration, Effect, Schema } from "effect"
import { McpBackend } from "../Backend.js"
import { nextSteps, resultOf } from "../Output.js"
import { type Tool, tool } from "../Tool.js"
import { optional, pipelineId, required, withDefault } from "../ToolFields.js"

const output = resultOf(EvalRun, { next_steps: nextSteps })

const steps = (run: EvalRun) =>
  run.status === "running"
    ? [`get_eval_run with run_id ${run.id} until status is passed or failed`]
    : run.status === "passed"
    ? ["Every case passed."]
    : [
      `Read the failed verdicts in results[].verdicts (passed: false); fix the pipeline and call run_evals again to compare with run ${run.id}.`
    ]

const withSteps = (run: EvalRun) => ({ ...run, next_steps: steps(run) })

/** Reads the run every second until it is finished or `seconds` have passed. */
const waitFor = (runId: EvalRunId, seconds: number) =>
  Effect.gen(function*() {
    const b = yield* McpBackend
    const deadline = Date.now() + seconds * 1000
    let run = yield* b.getEvalRun(runId)
    while (run.status === "running" && Date.now() < deadline) {
      yield* Effect.sleep(Duration.seconds(1))
      run = yield* b.getEvalRun(runId)
    }
    return run
  })

export const evalTools: ReadonlyArray<Tool> = [
  tool({
    name: "run_evals",
    title: "Run eval cases on a pipeline",
    group: "build",
    scope: "pipelines:write",
    idempotent: false,
    description:
      "Plays scripted conversations with the live pipeline in sandboxed test conversations (actions recorded, not sent; the model's cost is charged) and checks each case's expect. Cases given here, or stored ones (case_ids; neither: all). The run passes when every case does.",
    input: Schema.Struct({
      pipeline_id: pipelineId,
      cases: optional(Schema.Array(EvalCaseSpec), "Cases to run"),
      case_ids: optional(Schema.Array(EvalCaseId), "Stored cases to run"),
      version: optional(
        EvalVersionFromString,
        "What runs: live (default, or published), draft (as edited) or a version number, as text"
      ),
      concurrency: optional(IntBetween(1, 8), "Cases played at once, default 4"),
      wait_seconds: withDefault(IntBetween(0, 120), 30, "Wait up to this long for the verdicts; 0 answers at once")
    }),
    output,
    run: ({ pipeline_id, wait_seconds, ...input }) =>
      Effect.gen(function*() {
        const b = yield* McpBackend
        const started = yield* b.startEvalRun(pipeline_id, input)
        return withSteps(wait_seconds === 0 ? started : yield* waitFor(started.id, wait_seconds))
      })
  }),
  tool({
    name: "get_eval_run",
    title: "Get an eval run",
    group: "discover",
    scope: "pipelines:read",
    description:
      "An eval run: status, counts, cost, the comparison with the previous run, and each case's transcript, recorded actions and verdicts.",
    input: Schema.Struct({ run_id: required(EvalRunId, "From run_evals") }),
    output,
    run: ({ run_id }) => Effect.map(Effect.flatMap(McpBackend, (b) => b.getEvalRun(run_id)), withSteps)
  })
]
