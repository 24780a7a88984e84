/**
 * The `ActionRuns` port: each step of a run (prepare, attempt), recorded; the runs are written where their
 * triggers happen (ActionRunsRepo). Outbound calls go through `OutboundHttp`, so the private-address guard applies.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import {
  ActionAttemptOutcome,
  ActionPrepared,
  type ActionRunGroup,
  ActionRuns,
  convert,
  jsonPath,
  placeholders,
  renderJson,
  renderText,
  type SystemFields,
  templatedStrings
} from "@parley/domain"
import { Effect, Either, Layer, Metric, Option, Stream } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import { attemptOutcome, OutboundError, OutboundHttp } from "../outbound/OutboundHttp.js"
import { ActionRunsRepo, type RunRow } from "./ActionRunsRepo.js"

/** Action attempts by outcome: `succeeded`, `retrying` (a retry is due), `failed` (no more), `skipped` (not sent). */
const actionAttempts = Metric.counter("parley_action_attempts_total", {
  description: "Action runs' HTTP attempts by outcome, and runs skipped before sending",
  incremental: true
})

type Value = string | number | boolean | null

const EXCERPT = 1000

export const ActionRunsLive = Layer.effect(
  ActionRuns,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const http = yield* OutboundHttp
    const config = yield* AppConfig

    const repo = yield* ActionRunsRepo

    const groups = (rows: ReadonlyArray<{ id: number; group_key: string }>): Array<ActionRunGroup> => {
      const byKey = new Map<string, Array<number>>()
      for (const r of rows) byKey.set(r.group_key, [...(byKey.get(r.group_key) ?? []), Number(r.id)])
      return [...byKey].map(([groupKey, runIds]) => ({ groupKey, runIds }))
    }

    const written = pg.listen("parley_action_runs").pipe(
      Stream.as(undefined as void),
      Stream.catchAllCause((cause) =>
        Stream.fromEffect(Effect.logWarning("action-run notifications stopped; polling only", cause)).pipe(Stream.drain)
      )
    )

    /** The `from_system` value `entity.field` for this run, undefined when there is none. */
    const systemValues = (run: RunRow) =>
      Effect.gen(function*() {
        const values: Record<string, Record<string, unknown>> = {}
        if (run.opportunity_id !== null) {
          const o = yield* repo.opportunityValues(run.opportunity_id, run.conversation_id)
          if (Option.isSome(o)) values.opportunity = o.value
        }
        const stageId = run.stage_id ?? (values.opportunity?.stage_id as number | undefined) ?? null
        if (stageId !== null) {
          const s = yield* repo.stageValues(stageId)
          if (Option.isSome(s)) values.stage = s.value
        }
        if (run.message_id !== null) {
          const m = yield* repo.messageValues(run.message_id)
          if (Option.isSome(m)) values.message = m.value
        }
        return values
      })

    /**
     * `action_name.status` or `action_name.response.path`: the latest answered run of that action for this opportunity
     * (or conversation).
     */
    const actionValue = (run: RunRow, value: string) =>
      Effect.gen(function*() {
        const [name, kind, ...path] = value.split(".")
        if (run.opportunity_id === null && run.conversation_id === null) return undefined
        const earlier = yield* repo.earlierResponse({
          runId: run.id,
          pipelineId: run.pipeline_id,
          name: name!,
          opportunityId: run.opportunity_id,
          conversationId: run.conversation_id
        })
        if (Option.isNone(earlier)) return undefined
        if (kind === "status") return earlier.value.response_status
        try {
          return jsonPath(JSON.parse(earlier.value.response_body ?? ""), path)
        } catch {
          return undefined
        }
      })

    const skip = (runId: number, reason: string) =>
      repo.skip(runId, reason).pipe(
        Effect.zipLeft(Metric.increment(Metric.tagged(actionAttempts, "outcome", "skipped"))),
        Effect.as(new ActionPrepared({ send: false, maxAttempts: 0 }))
      )

    /**
     * The run's variables' values: `fixed`, `from_system`, `from_action` or the model's `from_ai`; a required one
     * missing is a reason to skip.
     */
    const resolveValues = (run: RunRow, names: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const variables = names.length === 0 ? [] : yield* repo.variables(run.pipeline_id, run.config_version_id, names)
        const system = variables.some((v) => v.type === "from_system") ? yield* systemValues(run) : {}
        const values: Record<string, Value> = {}
        for (const v of variables) {
          const raw: unknown = v.type === "fixed"
            ? v.value
            : v.type === "from_system"
            ? (() => {
              const [entity, field] = v.value.split(".") as [keyof typeof SystemFields, string]
              return system[entity]?.[field]
            })()
            : v.type === "from_action"
            ? yield* actionValue(run, v.value)
            : run.ai_values[v.name]
          const converted = convert(raw === "" && v.type !== "fixed" ? undefined : raw, v.data_type)
          if (converted === undefined && v.is_required) {
            return Either.left(`The required variable ${v.name} (${v.type}: ${v.value}) could not be resolved.`)
          }
          values[v.name] = converted ?? null
        }
        for (const name of names) if (!(name in values)) values[name] = null
        return Either.right(values)
      })

    const prepare = Effect.fn("ActionRuns.prepare")(function*(runId: number) {
      yield* Effect.annotateCurrentSpan({ runId })
      return yield* sql.withTransaction(Effect.gen(function*() {
        // the action as it was configured when the run was triggered (docs/versions.md); its row locked
        const found = yield* repo.run(runId)
        if (Option.isNone(found)) return new ActionPrepared({ send: false, maxAttempts: 0 })
        const run = found.value
        // prepared before a restart: go on with what was decided then
        if (run.status === "sending") {
          return new ActionPrepared({ send: true, maxAttempts: run.max_attempts ?? (run.retries ?? 0) + 1 })
        }
        if (run.status !== "pending") return new ActionPrepared({ send: false, maxAttempts: 0 })
        if (run.method === null) {
          return yield* skip(runId, "The action is not in the pipeline's configuration that triggered the run.")
        }
        if (!run.is_active) return yield* skip(runId, "The action was deactivated before it ran.")

        if (run.max_fires !== null && run.opportunity_id !== null) {
          const fired = yield* repo.fired(runId, run.action_id, run.opportunity_id)
          if (fired >= run.max_fires) {
            return yield* skip(
              runId,
              `max_fires reached: the action already fired ${fired} of ${run.max_fires} times for this opportunity.`
            )
          }
        }

        const parts = { url: run.url, headers: run.headers, payload: run.payload }
        const names = [...new Set(templatedStrings(parts).flatMap((s) => placeholders(s.text)))]
        const resolved = yield* resolveValues(run, names)
        if (Either.isLeft(resolved)) return yield* skip(runId, resolved.left)
        const values = resolved.right

        const url = renderText(run.url, values, true)
        // a value with a line break would split the header: it becomes a space
        const headers = Object.fromEntries(
          Object.entries(run.headers).map(([k, v]) => [k, renderText(v, values).replace(/[\r\n]+/g, " ")])
        )
        const hasBody = run.method !== "GET" && run.payload !== null
        const body = hasBody ? JSON.stringify(renderJson(run.payload, values)) : null
        if (hasBody && !Object.keys(headers).some((k) => k.toLowerCase() === "content-type")) {
          headers["Content-Type"] = "application/json"
        }
        const maxAttempts = run.retries + 1
        yield* repo.markSending(runId, { method: run.method, url, headers, body, maxAttempts })
        return new ActionPrepared({ send: true, maxAttempts })
      }))
    }, Effect.orDie)

    const attempt = Effect.fn("ActionRuns.attempt")(
      function*(runId: number, attempt: number, nextDelayMs: number | null) {
        yield* Effect.annotateCurrentSpan({ runId, attempt })
        const found = yield* repo.request(runId)
        if (Option.isNone(found) || found.value.status !== "sending") {
          return new ActionAttemptOutcome({ done: true, retryable: false })
        }
        const run = found.value
        // an eval's conversation (docs/evals.md): the rendered request is the record; nothing is sent
        if (run.is_eval) {
          yield* repo.recordEval(runId)
          return new ActionAttemptOutcome({ done: true, retryable: false })
        }
        const done = yield* repo.attemptMade(runId, attempt)
        // recorded before a restart: the attempt is not made twice
        if (done.length > 0) {
          const code = done[0]!.status_code
          return new ActionAttemptOutcome({ done: code !== null && code >= 200 && code < 300, retryable: true })
        }
        const started = Date.now()
        const result = yield* http.request(
          run.request_method!,
          run.request_url!,
          run.request_headers!,
          run.request_body ?? undefined,
          config.webhookTimeoutMs
        )
          .pipe(
            Effect.either,
            // node refuses some requests synchronously (a header value a variable filled with control characters)
            Effect.catchAllDefect((defect) =>
              Effect.succeed(Either.left(
                new OutboundError({
                  reason: "InvalidUrl",
                  message: `The request could not be made: ${defect instanceof Error ? defect.message : String(defect)}`
                })
              ))
            )
          )
        const duration = Date.now() - started
        const { body, error, ok, retryable, status } = attemptOutcome(result)
        const final = ok || !retryable || nextDelayMs === null
        yield* repo.recordAttempt({
          runId,
          attempt,
          status,
          duration,
          error,
          excerpt: body === null ? null : body.slice(0, EXCERPT),
          retryAt: final ? null : new Date(Date.now() + nextDelayMs!),
          body,
          runStatus: ok ? "succeeded" : final ? "failed" : "sending",
          reason: ok ? null : final ? (retryable ? `${error} (gave up after ${attempt} attempts)` : error) : null,
          finishedAt: final ? new Date() : null
        })
        yield* Metric.increment(
          Metric.tagged(actionAttempts, "outcome", ok ? "succeeded" : final ? "failed" : "retrying")
        )
        return new ActionAttemptOutcome({ done: ok, retryable })
      },
      (effect, runId, attempt) => Effect.annotateLogs(effect, { actionRunId: runId, attempt })
    )

    return ActionRuns.of({
      undispatched: (limit) => Effect.map(repo.undispatched(limit), groups),
      markDispatched: repo.markDispatched,
      written,
      prepare,
      attempt,
      overdue: (olderThanMs) => Effect.map(repo.overdue(olderThanMs), groups)
    })
  })
).pipe(Layer.provide(ActionRunsRepo.Default))
