/**
 * The `ActionRuns` port: writing runs where their triggers happen, and each step of a run (prepare,
 * attempt), recorded. Outbound calls go through `OutboundHttp`, so the private-address guard applies.
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
  templatedStrings,
  type VariableDataType,
  type VariableType
} from "@parley/domain"
import { Effect, Either, Layer, Metric, Stream } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import { OutboundError, OutboundHttp } from "../outbound/OutboundHttp.js"

/** Action attempts by outcome: `succeeded`, `retrying` (a retry is due), `failed` (no more), `skipped` (not sent). */
const actionAttempts = Metric.counter("parley_action_attempts_total", {
  description: "Action runs' HTTP attempts by outcome, and runs skipped before sending",
  incremental: true
})

type Sql = SqlClient.SqlClient

/**
 * Stage-start automations (SPEC.md 3.1): one run per active `stage_started` action of the entered stage
 * and of the pipeline as it runs (docs/versions.md), written in the transaction that consumes the stage entry.
 */
export const enqueueStageStarted = (sql: Sql, entryId: number) =>
  sql`
    insert into action_runs (workspace_id, pipeline_id, action_id, opportunity_id, conversation_id, stage_id, trigger, group_key,
                             source_key, sort_order, config_version_id)
    select a.workspace_id, a.pipeline_id, a.id, e.opportunity_id,
           (select co.conversation_id from conversation_opportunity co where co.opportunity_id = e.opportunity_id
            order by co.created_at desc limit 1),
           e.stage_id, 'stage_started', 'stage-entry:' || e.id, 'stage-entry:' || e.id || ':' || a.id, a.sort_order, cv.config
    from stage_entries e
    join opportunities o on o.id = e.opportunity_id
    cross join lateral (select parley_config_of(e.pipeline_id, o.config_version_id) as config) cv
    join lateral parley_live_actions(e.pipeline_id, cv.config) a on a.is_active and a.fixed_trigger = 'stage_started'
      and (a.stage_id is null or a.stage_id = e.stage_id)
    where e.id = ${entryId} and exists (select 1 from actions t where t.id = a.id)
    on conflict (source_key) do nothing`

/**
 * Actions the model called as tools in a reply (`on_user_message`, `custom`): written with the reply,
 * once per action and contact message answered.
 */
export const enqueueToolCalls = (
  sql: Sql,
  target: {
    readonly workspaceId: number
    readonly pipelineId: number | null
    readonly conversationId: number
    readonly opportunityId: number | null
    readonly stageId: number | null
    readonly messageId: string
    /** the configuration the run renders (0 the tables, else a version): the reply's turn's */
    readonly version: number
  },
  calls: ReadonlyArray<{ readonly actionId: number; readonly values: Readonly<Record<string, string>> }>
) =>
  Effect.forEach(calls, (call) =>
    sql`
      insert into action_runs (workspace_id, pipeline_id, action_id, opportunity_id, conversation_id, stage_id, message_id, trigger,
                               group_key, source_key, sort_order, ai_values, config_version_id)
      select a.workspace_id, a.pipeline_id, a.id, ${target.opportunityId}, ${target.conversationId}, ${target.stageId}, ${target.messageId},
             a.fixed_trigger, ${`reply:${target.messageId}`}, ${`reply:${target.messageId}:`} || a.id, a.sort_order, ${JSON.stringify(call.values)}::jsonb,
             ${target.version}
      from parley_live_actions(${target.pipelineId}, ${target.version}) a
      where a.id = ${call.actionId} and a.workspace_id = ${target.workspaceId}
        and a.is_active and a.fixed_trigger in ('on_user_message', 'custom') and exists (select 1 from actions t where t.id = a.id)
      on conflict (source_key) do nothing`, { discard: true })

interface RunRow {
  readonly id: number
  readonly pipeline_id: number
  readonly action_id: number
  readonly opportunity_id: number | null
  readonly conversation_id: number | null
  readonly stage_id: number | null
  readonly message_id: string | null
  readonly status: string
  readonly ai_values: Record<string, string>
  readonly max_attempts: number | null
  readonly config_version_id: number | null
  /** null when the action is not in the configuration the run was triggered in */
  readonly method: string | null
  readonly url: string
  readonly headers: Record<string, string>
  readonly payload: Record<string, unknown> | null
  readonly is_active: boolean
  readonly max_fires: number | null
  readonly retries: number
}

interface VariableRow {
  readonly name: string
  readonly value: string
  readonly type: VariableType
  readonly data_type: VariableDataType
  readonly is_required: boolean
}

type Value = string | number | boolean | null

const EXCERPT = 1000

export const ActionRunsLive = Layer.effect(
  ActionRuns,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const http = yield* OutboundHttp
    const config = yield* AppConfig

    const groups = (rows: ReadonlyArray<{ id: number; group_key: string }>): Array<ActionRunGroup> => {
      const byKey = new Map<string, Array<number>>()
      for (const r of rows) byKey.set(r.group_key, [...(byKey.get(r.group_key) ?? []), Number(r.id)])
      return [...byKey].map(([groupKey, runIds]) => ({ groupKey, runIds }))
    }

    const undispatched = (limit: number) =>
      sql<{ id: number; group_key: string }>`
        select r.id, r.group_key from action_runs r
        where r.group_key in (select group_key from action_runs where dispatched_at is null order by id limit ${limit})
        order by r.sort_order, r.id`.pipe(Effect.map(groups), Effect.orDie)

    const markDispatched = (runIds: ReadonlyArray<number>) =>
      sql`update action_runs set dispatched_at = now() where id in ${sql.in(runIds)} and dispatched_at is null`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    const written = pg.listen("parley_action_runs").pipe(
      Stream.as(undefined as void),
      Stream.catchAllCause((cause) => Stream.fromEffect(Effect.logWarning("action-run notifications stopped; polling only", cause)).pipe(Stream.drain))
    )

    /** The `from_system` value `entity.field` for this run, undefined when there is none. */
    const systemValues = (run: RunRow) =>
      Effect.gen(function*() {
        const values: Record<string, Record<string, unknown>> = {}
        if (run.opportunity_id !== null) {
          const [o] = yield* sql<Record<string, unknown>>`
            select o.id, o.contact_id, o.stage_id, o.pipeline_id, o.name, o.notes, o.status,
                   coalesce(c.custom_name, c.name) as contact_name, c.priority as contact_priority, c.identifier as contact_identifier,
                   coalesce(c.custom_email, c.email) as contact_email, coalesce(c.custom_phone, c.phone) as contact_phone,
                   s.nature,
                   coalesce(${run.conversation_id}, (select co.conversation_id from conversation_opportunity co
                     where co.opportunity_id = o.id order by co.created_at desc limit 1)) as conversation_id
            from opportunities o join contacts c on c.id = o.contact_id join stages s on s.id = o.stage_id
            where o.id = ${run.opportunity_id}`
          if (o) values.opportunity = o
        }
        const stageId = run.stage_id ?? (values.opportunity?.stage_id as number | undefined) ?? null
        if (stageId !== null) {
          const [s] = yield* sql<Record<string, unknown>>`
            select s.id, s.pipeline_id, p.name as pipeline_name, s.name, s.sort_order as "order"
            from stages s join pipelines p on p.id = s.pipeline_id where s.id = ${stageId}`
          if (s) values.stage = s
        }
        if (run.message_id !== null) {
          const [m] = yield* sql<Record<string, unknown>>`
            select id, message, is_manual, role, call_type, files, status, error from messages where id = ${run.message_id}`
          if (m) values.message = m
        }
        return values
      })

    /** `action_name.status` or `action_name.response.path`: the latest answered run of that action for this opportunity (or conversation). */
    const actionValue = (run: RunRow, value: string) =>
      Effect.gen(function*() {
        const [name, kind, ...path] = value.split(".")
        const scope = run.opportunity_id !== null
          ? sql`r.opportunity_id = ${run.opportunity_id}`
          : run.conversation_id !== null
          ? sql`r.conversation_id = ${run.conversation_id}`
          : null
        if (scope === null) return undefined
        const [earlier] = yield* sql<{ response_status: number; response_body: string | null }>`
          select r.response_status, r.response_body from action_runs r join actions a on a.id = r.action_id
          where a.pipeline_id = ${run.pipeline_id} and a.name = ${name} and r.response_status is not null and r.id <> ${run.id}
            and ${scope}
          order by r.finished_at desc nulls last, r.id desc limit 1`
        if (!earlier) return undefined
        if (kind === "status") return earlier.response_status
        try {
          return jsonPath(JSON.parse(earlier.response_body ?? ""), path)
        } catch {
          return undefined
        }
      })

    const skip = (runId: number, reason: string) =>
      sql`update action_runs set status = 'skipped', reason = ${reason}, finished_at = now(), updated_at = now() where id = ${runId}`.pipe(
        Effect.zipLeft(Metric.increment(Metric.tagged(actionAttempts, "outcome", "skipped"))),
        Effect.as(new ActionPrepared({ send: false, maxAttempts: 0 }))
      )

    const prepare = (runId: number) =>
      sql.withTransaction(Effect.gen(function*() {
        // the action as it was configured when the run was triggered (docs/versions.md); its row locked
        const [run] = yield* sql<RunRow>`
          select r.id, r.pipeline_id, r.action_id, r.opportunity_id, r.conversation_id, r.stage_id, r.message_id, r.status, r.ai_values,
                 r.max_attempts, r.config_version_id, a.method, a.url, a.headers, a.payload, a.is_active, a.max_fires, a.retries
          from action_runs r join actions t on t.id = r.action_id
          left join lateral parley_live_actions(r.pipeline_id, r.config_version_id) a on a.id = r.action_id
          where r.id = ${runId}
          for update of t`
        if (!run) return new ActionPrepared({ send: false, maxAttempts: 0 })
        // prepared before a restart: go on with what was decided then
        if (run.status === "sending") return new ActionPrepared({ send: true, maxAttempts: run.max_attempts ?? run.retries + 1 })
        if (run.status !== "pending") return new ActionPrepared({ send: false, maxAttempts: 0 })
        if (run.method === null) return yield* skip(runId, "The action is not in the pipeline's configuration that triggered the run.")
        if (!run.is_active) return yield* skip(runId, "The action was deactivated before it ran.")

        if (run.max_fires !== null && run.opportunity_id !== null) {
          const [fired] = yield* sql<{ n: number }>`
            select count(*)::int as n from action_runs
            where action_id = ${run.action_id} and opportunity_id = ${run.opportunity_id} and id <> ${runId}
              and status in ('sending', 'succeeded', 'failed', 'recorded')`
          if (fired!.n >= run.max_fires) {
            return yield* skip(runId, `max_fires reached: the action already fired ${fired!.n} of ${run.max_fires} times for this opportunity.`)
          }
        }

        const parts = { url: run.url, headers: run.headers, payload: run.payload }
        const names = [...new Set(templatedStrings(parts).flatMap((s) => placeholders(s.text)))]
        const variables = names.length === 0 ? [] : yield* sql<VariableRow>`
          select name, value, type, data_type, is_required from parley_live_variables(${run.pipeline_id}, ${run.config_version_id})
          where name in ${sql.in(names)}`
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
            return yield* skip(runId, `The required variable ${v.name} (${v.type}: ${v.value}) could not be resolved.`)
          }
          values[v.name] = converted ?? null
        }
        for (const name of names) if (!(name in values)) values[name] = null

        const url = renderText(run.url, values, true)
        // a value with a line break would split the header: it becomes a space
        const headers = Object.fromEntries(Object.entries(run.headers).map(([k, v]) => [k, renderText(v, values).replace(/[\r\n]+/g, " ")]))
        const hasBody = run.method !== "GET" && run.payload !== null
        const body = hasBody ? JSON.stringify(renderJson(run.payload, values)) : null
        if (hasBody && !Object.keys(headers).some((k) => k.toLowerCase() === "content-type")) headers["Content-Type"] = "application/json"
        const maxAttempts = run.retries + 1
        yield* sql`
          update action_runs set status = 'sending', request_method = ${run.method}, request_url = ${url},
            request_headers = ${JSON.stringify(headers)}::jsonb, request_body = ${body}, max_attempts = ${maxAttempts}, updated_at = now()
          where id = ${runId}`
        return new ActionPrepared({ send: true, maxAttempts })
      })).pipe(Effect.orDie, Effect.withSpan("ActionRuns.prepare", { attributes: { runId } }))

    const attempt = (runId: number, attempt: number, nextDelayMs: number | null) =>
      Effect.gen(function*() {
        const [run] = yield* sql<{
          status: string
          request_method: string
          request_url: string
          request_headers: Record<string, string>
          request_body: string | null
          is_eval: boolean
        }>`select r.status, r.request_method, r.request_url, r.request_headers, r.request_body,
                  (exists (select 1 from conversations c where c.id = r.conversation_id and c.is_eval)
                   or exists (select 1 from opportunities o where o.id = r.opportunity_id and o.is_eval)) as is_eval
           from action_runs r where r.id = ${runId}`
        if (!run || run.status !== "sending") return new ActionAttemptOutcome({ done: true, retryable: false })
        // an eval's conversation (docs/evals.md): the rendered request is the record; nothing is sent
        if (run.is_eval) {
          yield* sql`update action_runs set status = 'recorded', reason = 'Recorded by an eval run: not sent.', finished_at = now(),
                     updated_at = now() where id = ${runId}`
          return new ActionAttemptOutcome({ done: true, retryable: false })
        }
        const done = yield* sql<{ status_code: number | null }>`
          select status_code from action_attempts where run_id = ${runId} and attempt = ${attempt}`
        // recorded before a restart: the attempt is not made twice
        if (done.length > 0) {
          const code = done[0]!.status_code
          return new ActionAttemptOutcome({ done: code !== null && code >= 200 && code < 300, retryable: true })
        }
        const started = Date.now()
        const result = yield* http.request(run.request_method, run.request_url, run.request_headers, run.request_body ?? undefined, config.webhookTimeoutMs)
          .pipe(
            Effect.either,
            // node refuses some requests synchronously (a header value a variable filled with control characters)
            Effect.catchAllDefect((defect) =>
              Effect.succeed(Either.left(new OutboundError({
                reason: "InvalidUrl",
                message: `The request could not be made: ${defect instanceof Error ? defect.message : String(defect)}`
              })))
            )
          )
        const duration = Date.now() - started
        const status = Either.isRight(result) ? result.right.status : null
        const ok = status !== null && status >= 200 && status < 300
        const retryable = !ok && (Either.isLeft(result)
          ? result.left.reason === "Timeout" || result.left.reason === "Network"
          : status! >= 500 || status === 429)
        const error = Either.isLeft(result) ? result.left.message : ok ? null : `HTTP ${status}`
        const body = Either.isRight(result) ? result.right.body : null
        const final = ok || !retryable || nextDelayMs === null
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`update action_attempts set retry_at = null where run_id = ${runId} and retry_at is not null`
          yield* sql`
            insert into action_attempts (run_id, attempt, status_code, duration_ms, error, response_excerpt, retry_at)
            values (${runId}, ${attempt}, ${status}, ${duration}, ${error}, ${body === null ? null : body.slice(0, EXCERPT)},
                    ${final ? null : new Date(Date.now() + nextDelayMs!)})
            on conflict (run_id, attempt) do nothing`
          yield* sql`
            update action_runs set attempts = ${attempt}, response_status = ${status}, response_body = ${body},
              status = ${ok ? "succeeded" : final ? "failed" : "sending"},
              reason = ${ok ? null : final ? (retryable ? `${error} (gave up after ${attempt} attempts)` : error) : null},
              finished_at = ${final ? new Date() : null}, updated_at = now()
            where id = ${runId}`
        }))
        yield* Metric.increment(Metric.tagged(actionAttempts, "outcome", ok ? "succeeded" : final ? "failed" : "retrying"))
        return new ActionAttemptOutcome({ done: ok, retryable })
      }).pipe(
        Effect.orDie,
        Effect.withSpan("ActionRuns.attempt", { attributes: { runId, attempt } }),
        Effect.annotateLogs({ actionRunId: runId, attempt })
      )

    const overdue = (olderThanMs: number) =>
      sql<{ id: number; group_key: string }>`
        select r.id, r.group_key from action_runs r
        where r.group_key in (
          select r2.group_key from action_attempts t join action_runs r2 on r2.id = t.run_id
          where t.retry_at is not null and t.retry_at < now() - make_interval(secs => ${olderThanMs / 1000}) limit 100)
        order by r.sort_order, r.id`.pipe(Effect.map(groups), Effect.orDie)

    return ActionRuns.of({ undispatched, markDispatched, written, prepare, attempt, overdue })
  })
)
