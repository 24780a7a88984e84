/**
 * Eval runs (docs/evals.md): the cases chosen and checked, the run stored with a pending result per
 * case, then played in the background, `concurrency` cases at a time, while the caller reads the run.
 * A run passes only when every case passed; it is compared with the pipeline's previous finished run.
 */
import {
  CurrentActor,
  type EvalCaseSpec,
  EvalComparison,
  EvalResult,
  EvalRun,
  type EvalRunId,
  EvalRunNotFound,
  EvalRunSummary,
  type PipelineId,
  PipelineNotFound,
  type StartEvalRun,
  Unprocessable
} from "@parley/domain"
import { Duration, Effect, FiberSet, Option, Schedule } from "effect"
import { toModel } from "../engine/TurnContextFrom.js"
import { someOrFail } from "../util/Effects.js"
import { CasePlayer, type RunTarget } from "./CasePlayer.js"
import { caseIssues, type Issue } from "./CaseRules.js"
import { EvalsRepo, type ResultRow, type RunRow } from "./EvalsRepo.js"
import { SandboxRepo } from "./SandboxRepo.js"

const DEFAULT_CONCURRENCY = 4
const SETTLE_MARGIN_MS = 120_000

export class EvalRuns extends Effect.Service<EvalRuns>()("@parley/server/EvalRuns", {
  dependencies: [EvalsRepo.Default, SandboxRepo.Default, CasePlayer.Default],
  scoped: Effect.gen(function*() {
    const repo = yield* EvalsRepo
    const sandbox = yield* SandboxRepo
    const player = yield* CasePlayer
    // runs play beside the requests that started them, and stop with the service
    const running = yield* FiberSet.make()

    const pipelineOf = (pipelineId: number) =>
      Effect.flatMap(CurrentActor, (actor) => repo.pipeline(actor.workspaceIds, pipelineId)).pipe(
        someOrFail(() => new PipelineNotFound())
      )

    /** The cases a run plays: given ones, stored ones by id, or every stored case; every problem in one 422. */
    const chosenCases = (pipelineId: number, input: StartEvalRun, override: number) =>
      Effect.gen(function*() {
        const stages = yield* repo.stages(pipelineId, override)
        const issues: Array<Issue> = []
        const chosen: Array<{ spec: EvalCaseSpec; caseId: number | null; field: string }> = []
        ;(input.cases ?? []).forEach((spec, i) => chosen.push({ spec, caseId: null, field: `cases.${i}` }))
        if (input.case_ids !== undefined || input.cases === undefined) {
          const stored = yield* repo.cases(pipelineId)
          const ids = input.case_ids ?? stored.map((c) => c.id)
          ids.forEach((id, i) => {
            const found = stored.find((c) => c.id === id)
            if (found === undefined) {
              issues.push({ field: `case_ids.${i}`, message: "is not an eval case of this pipeline" })
            } else chosen.push({ spec: found.definition, caseId: found.id, field: `case_ids.${i}` })
          })
        }
        if (chosen.length === 0 && !issues.some((i) => i.field.startsWith("case_ids"))) {
          issues.push({
            field: "cases",
            message: "There are no cases to run: send cases or case_ids, or store cases first."
          })
        }
        const names = new Set<string>()
        for (const c of chosen) {
          issues.push(...caseIssues(c.spec, stages, `${c.field}.`))
          if (names.has(c.spec.name)) {
            issues.push({ field: `${c.field}.name`, message: "is the name of another case of this run" })
          }
          names.add(c.spec.name)
        }
        if (issues.length > 0) {
          return yield* Unprocessable.of(issues)
        }
        return { stages, cases: chosen }
      })

    /** The run's cases, `concurrency` at a time, with a heartbeat so a run whose process stopped is known. */
    const play = (runId: number, target: RunTarget, concurrency: number) =>
      Effect.gen(function*() {
        yield* Effect.forkScoped(Effect.repeat(repo.heartbeat(runId), Schedule.spaced(Duration.seconds(10))))
        const results = yield* repo.results(runId)
        yield* Effect.forEach(results, (r) => player.play(target, r), { concurrency, discard: true })
        yield* repo.finishRun(runId)
      }).pipe(
        Effect.scoped,
        Effect.catchAllCause((cause) => Effect.logError("An eval run failed", cause)),
        Effect.annotateLogs({ eval_run_id: runId }),
        Effect.withSpan("EvalRuns.play", { attributes: { runId } })
      )

    const comparison = (run: RunRow, current: ReadonlyArray<{ readonly name: string; readonly status: string }>) =>
      Effect.gen(function*() {
        if (run.previous_run_id === null) return null
        const actor = yield* CurrentActor
        const previous = yield* repo.run(actor.workspaceIds, run.previous_run_id)
        if (Option.isNone(previous)) return null
        const before = new Map((yield* repo.statuses(previous.value.id)).map((r) => [r.name, r.status]))
        const finished = current.filter((r) => r.status !== "pending" && r.status !== "running")
        return new EvalComparison({
          previous_run_id: previous.value.id,
          previous_passed: previous.value.passed,
          previous_failed: previous.value.failed,
          previous_cost: previous.value.cost,
          newly_failing: finished.filter((r) => r.status !== "passed" && before.get(r.name) === "passed").map((r) =>
            r.name
          ),
          newly_passing: finished.filter((r) =>
            r.status === "passed" && before.has(r.name) && before.get(r.name) !== "passed"
          ).map((r) => r.name)
        })
      })

    /** A running run's counts come from its results so far; a finished run's are stored. */
    const fields = (
      run: RunRow,
      results: ReadonlyArray<{ readonly name: string; readonly status: string; readonly cost: number }>
    ) =>
      Effect.map(comparison(run, results), (compared) => ({
        id: run.id,
        pipeline_id: run.pipeline_id,
        version: /^[0-9]+$/.test(run.version) ? Number(run.version) : run.version as "live" | "draft",
        version_number: run.version_number,
        status: run.status,
        concurrency: run.concurrency,
        cases: run.cases,
        passed: run.status === "running" ? results.filter((r) => r.status === "passed").length : run.passed,
        failed: run.status === "running"
          ? results.filter((r) => r.status === "failed" || r.status === "error").length
          : run.failed,
        cost: run.status === "running" ? results.reduce((sum, r) => sum + r.cost, 0) : run.cost,
        comparison: compared,
        created_at: run.created_at,
        finished_at: run.finished_at
      }))

    const toResult = (r: ResultRow) => new EvalResult(r)

    const get = Effect.fn("EvalRuns.get")(function*(runId: EvalRunId) {
      const actor = yield* CurrentActor
      const found = yield* repo.run(actor.workspaceIds, runId).pipe(someOrFail(() => new EvalRunNotFound()))
      if (found.status === "running") yield* repo.interruptStale(found.pipeline_id)
      const run = found.status === "running" ? Option.getOrThrow(yield* repo.run(actor.workspaceIds, runId)) : found
      const results = yield* repo.results(runId)
      return new EvalRun({ ...(yield* fields(run, results)), results: results.map(toResult) })
    })

    const list = Effect.fn("EvalRuns.list")(function*(pipelineId: PipelineId) {
      const pipeline = yield* pipelineOf(pipelineId)
      yield* repo.interruptStale(pipeline.id)
      const runs = yield* repo.runs(pipeline.id)
      return yield* Effect.forEach(
        runs,
        (run) =>
          Effect.flatMap(
            repo.statuses(run.id),
            (results) => Effect.map(fields(run, results), (f) => new EvalRunSummary(f))
          )
      )
    })

    const start = Effect.fn("EvalRuns.start")(function*(pipelineId: PipelineId, input: StartEvalRun) {
      const actor = yield* CurrentActor
      const pipeline = yield* pipelineOf(pipelineId)
      const version = input.version === undefined || input.version === "published" ? "live" : String(input.version)
      // what the run plays is fixed now: a publish while it runs does not change it
      const played = yield* repo.target(pipeline.id, version).pipe(
        someOrFail(() => Unprocessable.of([{ field: "version", message: "is not a version of this pipeline" }]))
      )
      const override = played.version_id ?? 0
      const { cases, stages } = yield* chosenCases(pipeline.id, input, override)
      const model = yield* sandbox.pipelineModel(pipeline.id, override)
      const concurrency = input.concurrency ?? DEFAULT_CONCURRENCY
      const runId = yield* repo.insertRun({
        workspaceId: pipeline.workspace_id,
        pipelineId: pipeline.id,
        version,
        versionId: played.version_id,
        configHash: played.config_hash,
        concurrency,
        createdBy: actor.userId,
        cases: cases.map((c) => ({ spec: c.spec, caseId: c.caseId }))
      })
      const target: RunTarget = {
        workspaceId: pipeline.workspace_id,
        pipelineId: pipeline.id,
        configVersion: override,
        stages,
        model: toModel(model.model),
        settleMs: model.debounce_ms + SETTLE_MARGIN_MS
      }
      yield* FiberSet.run(running, play(runId, target, concurrency))
      return yield* get(runId)
    })

    return { start, get, list }
  })
}) {}
