/**
 * Evals' own tables (migration 0021): a pipeline's stored cases, runs, and each case's result. Rows are
 * typed with SqlSchema; the services decide what they mean.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import {
  ConversationId,
  EvalCaseId,
  EvalCaseSpec,
  type EvalCaseSpec as Spec,
  EvalOutcome,
  EvalResultStatus,
  EvalRunId,
  EvalVerdict,
  OpportunityId,
  PipelineId,
  StageId,
  WorkspaceId
} from "@parley/domain"
import { Effect, Option, Schema } from "effect"

export const CaseRow = Schema.Struct({
  id: EvalCaseId,
  workspace_id: WorkspaceId,
  pipeline_id: PipelineId,
  name: Schema.String,
  definition: EvalCaseSpec,
  source: Schema.Literal("api", "conversation"),
  source_conversation_id: Schema.NullOr(ConversationId),
  created_at: Schema.String,
  updated_at: Schema.String
})
export type CaseRow = typeof CaseRow.Type

export const RunRow = Schema.Struct({
  id: EvalRunId,
  workspace_id: WorkspaceId,
  pipeline_id: PipelineId,
  version: Schema.String,
  version_number: Schema.NullOr(Schema.Number),
  status: Schema.Literal("running", "passed", "failed", "interrupted"),
  concurrency: Schema.Number,
  cases: Schema.Number,
  passed: Schema.Number,
  failed: Schema.Number,
  cost: Schema.Number,
  previous_run_id: Schema.NullOr(EvalRunId),
  created_at: Schema.String,
  finished_at: Schema.NullOr(Schema.String)
})
export type RunRow = typeof RunRow.Type

export const ResultRow = Schema.Struct({
  id: Schema.Number,
  run_id: EvalRunId,
  position: Schema.Number,
  name: Schema.String,
  case_id: Schema.NullOr(EvalCaseId),
  status: EvalResultStatus,
  conversation_id: Schema.NullOr(ConversationId),
  opportunity_id: Schema.NullOr(OpportunityId),
  cost: Schema.Number,
  error: Schema.NullOr(Schema.String),
  verdicts: Schema.Array(EvalVerdict),
  outcome: Schema.NullOr(EvalOutcome),
  definition: EvalCaseSpec,
  started_at: Schema.NullOr(Schema.String),
  finished_at: Schema.NullOr(Schema.String)
})
export type ResultRow = typeof ResultRow.Type

const json = (value: unknown) => JSON.stringify(value)

const IdRow = Schema.Struct({ id: Schema.Number })

export class EvalsRepo extends Effect.Service<EvalsRepo>()("@parley/server/EvalsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const inWorkspaces = (column: string, ids: ReadonlyArray<WorkspaceId>) =>
      sql`${sql.literal(column)} in ${sql.in(ids)}`
    const caseColumns =
      sql`id, workspace_id, pipeline_id, name, definition, source, source_conversation_id, created_at, updated_at`
    const runColumns = sql`
      id, workspace_id, pipeline_id, version, (select number from pipeline_versions v where v.id = version_id) as version_number, status, concurrency, cases_total as cases, passed, failed, cost::float8 as cost,
      previous_run_id, created_at, finished_at`
    const resultColumns = sql`
      id, run_id, position, name, case_id, status, conversation_id, opportunity_id, cost::float8 as cost, error, verdicts, outcome,
      definition, started_at, finished_at`

    const pipeline = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceIds: Schema.Array(Schema.Number), id: Schema.Number }),
      Result: Schema.Struct({ id: PipelineId, workspace_id: WorkspaceId }),
      execute: ({ id, workspaceIds }) =>
        sql`select id, workspace_id from pipelines where id = ${id} and ${
          inWorkspaces("workspace_id", workspaceIds as never)
        }`
    })

    /** The stages of what a run plays (`override`: 0 the draft, else a version id). */
    const stages = SqlSchema.findAll({
      Request: Schema.Struct({ pipelineId: Schema.Number, override: Schema.Number }),
      Result: Schema.Struct({ id: StageId, name: Schema.String }),
      execute: ({ override, pipelineId }) =>
        sql`select id, name from parley_live_stages(${pipelineId}, ${override}) order by sort_order, id`
    })

    /**
     * What a run asked for plays: `draft` the tables, `live` the live version when drafts are on (else the
     * tables), a number that version (none when the pipeline has no such version); with the played config's hash.
     */
    const target = SqlSchema.findOne({
      Request: Schema.Struct({
        pipelineId: Schema.Number,
        version: Schema.String,
        number: Schema.NullOr(Schema.Number)
      }),
      Result: Schema.Struct({ version_id: Schema.NullOr(Schema.Number), config_hash: Schema.String }),
      execute: ({ number, pipelineId, version }) =>
        sql`
          select v.id as version_id, coalesce(v.config_hash, md5(parley_pipeline_config(p.id)::text)) as config_hash
          from pipelines p join workspaces w on w.id = p.workspace_id
          left join pipeline_versions v on v.pipeline_id = p.id and v.id = case
            when ${number}::int is not null then (select id from pipeline_versions where pipeline_id = p.id and number = ${number})
            when ${version} = 'live' and w.is_drafts_enabled then p.live_version_id end
          where p.id = ${pipelineId} and (${number}::int is null or v.id is not null)`
    })

    const cases = SqlSchema.findAll({
      Request: Schema.Number,
      Result: CaseRow,
      execute: (pipelineId) => sql`select ${caseColumns} from eval_cases where pipeline_id = ${pipelineId} order by id`
    })

    const findCase = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceIds: Schema.Array(Schema.Number), id: Schema.Number }),
      Result: CaseRow,
      execute: ({ id, workspaceIds }) =>
        sql`select ${caseColumns} from eval_cases where id = ${id} and ${
          inWorkspaces("workspace_id", workspaceIds as never)
        }`
    })

    /** `definition`: the case's spec as JSON text. */
    const insertCaseRow = SqlSchema.findOne({
      Request: Schema.Struct({
        workspaceId: Schema.Number,
        pipelineId: Schema.Number,
        name: Schema.String,
        definition: Schema.String,
        source: Schema.Literal("api", "conversation"),
        conversationId: Schema.NullOr(Schema.Number)
      }),
      Result: IdRow,
      execute: (c) =>
        sql`
        insert into eval_cases (workspace_id, pipeline_id, name, definition, source, source_conversation_id)
        values (${c.workspaceId}, ${c.pipelineId}, ${c.name}, ${c.definition}::jsonb, ${c.source}, ${c.conversationId})
        on conflict (pipeline_id, name) do nothing returning id`
    })

    /** Nothing when the name is taken in the pipeline. */
    const insertCase = (c: {
      workspaceId: number
      pipelineId: number
      spec: Spec
      source: "api" | "conversation"
      conversationId: number | null
    }) =>
      insertCaseRow({ ...c, name: c.spec.name, definition: json(c.spec) }).pipe(
        Effect.map(Option.match({ onNone: () => undefined, onSome: (row) => row.id }))
      )

    const replaceCaseRow = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.Number, name: Schema.String, definition: Schema.String }),
      Result: IdRow,
      execute: ({ definition, id, name }) =>
        sql`
        update eval_cases set name = ${name}, definition = ${definition}::jsonb, updated_at = now()
        where id = ${id} and not exists (
          select 1 from eval_cases o where o.pipeline_id = eval_cases.pipeline_id and o.name = ${name} and o.id <> ${id})
        returning id`
    })

    /** False when the name is another case's. */
    const replaceCase = (id: number, spec: Spec) =>
      replaceCaseRow({ id, name: spec.name, definition: json(spec) }).pipe(Effect.map(Option.isSome))

    const deleteCase = (id: number) => sql`delete from eval_cases where id = ${id}`

    const insertRunRow = SqlSchema.single({
      Request: Schema.Struct({
        workspaceId: Schema.Number,
        pipelineId: Schema.Number,
        version: Schema.String,
        versionId: Schema.NullOr(Schema.Number),
        configHash: Schema.String,
        concurrency: Schema.Number,
        casesTotal: Schema.Number,
        createdBy: Schema.Number
      }),
      Result: Schema.Struct({ id: EvalRunId }),
      execute: (r) =>
        sql`
          insert into eval_runs (workspace_id, pipeline_id, version, version_id, config_hash, concurrency, cases_total, created_by, previous_run_id)
          values (${r.workspaceId}, ${r.pipelineId}, ${r.version}, ${r.versionId}, ${r.configHash}, ${r.concurrency}, ${r.casesTotal}, ${r.createdBy},
                  -- compared with the newest finished run of what is live (docs/versions.md): the live version when
                  -- drafts are on and the pipeline has one, else the tables
                  (select e.id from eval_runs e, pipelines p join workspaces w on w.id = p.workspace_id
                   where p.id = ${r.pipelineId} and e.pipeline_id = p.id and e.status in ('passed', 'failed')
                     and e.version_id is not distinct from (case when w.is_drafts_enabled then p.live_version_id end)
                   order by e.id desc limit 1))
          returning id`
    })

    /** The run and one pending result per case, in one transaction; the previous finished run is remembered. */
    const insertRun = (r: {
      workspaceId: number
      pipelineId: number
      concurrency: number
      createdBy: number
      version: string
      versionId: number | null
      configHash: string
      cases: ReadonlyArray<{ readonly spec: Spec; readonly caseId: number | null }>
    }) =>
      sql.withTransaction(Effect.gen(function*() {
        const run = yield* insertRunRow({ ...r, casesTotal: r.cases.length })
        yield* sql`
          insert into eval_results (run_id, workspace_id, position, case_id, name, definition)
          select ${run.id}, ${r.workspaceId}, c.position, c.case_id, c.name, c.definition
          from jsonb_to_recordset(${
          json(r.cases.map((c, i) => ({ position: i + 1, case_id: c.caseId, name: c.spec.name, definition: c.spec })))
        }::jsonb)
            as c(position int, case_id bigint, name text, definition jsonb)`
        return run.id
      }))

    const run = SqlSchema.findOne({
      Request: Schema.Struct({ workspaceIds: Schema.Array(Schema.Number), id: Schema.Number }),
      Result: RunRow,
      execute: ({ id, workspaceIds }) =>
        sql`select ${runColumns} from eval_runs where id = ${id} and ${
          inWorkspaces("workspace_id", workspaceIds as never)
        }`
    })

    const runs = SqlSchema.findAll({
      Request: Schema.Number,
      Result: RunRow,
      execute: (pipelineId) =>
        sql`select ${runColumns} from eval_runs where pipeline_id = ${pipelineId} order by id desc limit 50`
    })

    const results = SqlSchema.findAll({
      Request: Schema.Number,
      Result: ResultRow,
      execute: (runId) => sql`select ${resultColumns} from eval_results where run_id = ${runId} order by position`
    })

    /** Each case's name, status and cost in a run: a run's counts, and what a later run is compared with. */
    const statuses = SqlSchema.findAll({
      Request: Schema.Number,
      Result: Schema.Struct({ name: Schema.String, status: EvalResultStatus, cost: Schema.Number }),
      execute: (runId) =>
        sql`select name, status, cost::float8 as cost from eval_results where run_id = ${runId} order by position`
    })

    const startResult = (id: number, world: { conversationId: number; opportunityId: number }) =>
      sql`update eval_results set status = 'running', conversation_id = ${world.conversationId}, opportunity_id = ${world.opportunityId},
          started_at = now() where id = ${id}`

    const finishResult = (id: number, r: {
      status: "passed" | "failed" | "error"
      outcome: unknown
      verdicts: ReadonlyArray<EvalVerdict>
      cost: number
      error: string | null
    }) =>
      sql`update eval_results set status = ${r.status}, outcome = ${r.outcome === null ? null : json(r.outcome)}::jsonb,
          verdicts = ${json(r.verdicts)}::jsonb, cost = ${r.cost}::numeric, error = ${r.error}, finished_at = now()
          where id = ${id}`

    /** The run's counts and cost from its results, and its status: passed only when every case passed. */
    const finishRun = (id: number) =>
      sql`
        update eval_runs r set
          passed = x.passed, failed = x.failed, cost = x.cost, finished_at = now(),
          status = case when x.failed = 0 then 'passed' else 'failed' end
        from (select count(*) filter (where status = 'passed')::int as passed, count(*) filter (where status <> 'passed')::int as failed,
                     coalesce(sum(cost), 0) as cost
              from eval_results where run_id = ${id}) x
        where r.id = ${id} and r.status = 'running'`

    const heartbeat = (id: number) =>
      sql`update eval_runs set heartbeat_at = now() where id = ${id} and status = 'running'`

    const interruptRuns = SqlSchema.findAll({
      Request: Schema.Number,
      Result: IdRow,
      execute: (pipelineId) =>
        sql`
          update eval_runs set status = 'interrupted', finished_at = now()
          where pipeline_id = ${pipelineId} and status = 'running' and heartbeat_at < now() - interval '60 seconds' returning id`
    })

    /** Runs whose process stopped (no heartbeat for a minute) are interrupted, with their unfinished cases. */
    const interruptStale = (pipelineId: number) =>
      sql.withTransaction(Effect.gen(function*() {
        const stale = yield* interruptRuns(pipelineId)
        if (stale.length === 0) return
        yield* sql`
          update eval_results set status = 'error', error = 'The server stopped during the run.', finished_at = now()
          where run_id in ${sql.in(stale.map((r) => r.id))} and status in ('pending', 'running')`
      }))

    return {
      pipeline: (workspaceIds: ReadonlyArray<number>, id: number) => Effect.orDie(pipeline({ workspaceIds, id })),
      stages: (pipelineId: number, override = 0) => Effect.orDie(stages({ pipelineId, override })),
      target: (pipelineId: number, version: string) =>
        Effect.orDie(target({ pipelineId, version, number: /^[0-9]+$/.test(version) ? Number(version) : null })),
      cases: (pipelineId: number) => Effect.orDie(cases(pipelineId)),
      findCase: (workspaceIds: ReadonlyArray<number>, id: number) => Effect.orDie(findCase({ workspaceIds, id })),
      insertCase: (c: Parameters<typeof insertCase>[0]) => Effect.orDie(insertCase(c)),
      replaceCase: (id: number, spec: Spec) => Effect.orDie(replaceCase(id, spec)),
      deleteCase: (id: number) => Effect.orDie(Effect.asVoid(deleteCase(id))),
      insertRun: (r: Parameters<typeof insertRun>[0]) => Effect.orDie(insertRun(r)),
      run: (workspaceIds: ReadonlyArray<number>, id: number) => Effect.orDie(run({ workspaceIds, id })),
      runs: (pipelineId: number) => Effect.orDie(runs(pipelineId)),
      results: (runId: number) => Effect.orDie(results(runId)),
      statuses: (runId: number) => Effect.orDie(statuses(runId)),
      startResult: (id: number, world: { conversationId: number; opportunityId: number }) =>
        Effect.orDie(Effect.asVoid(startResult(id, world))),
      finishResult: (id: number, r: Parameters<typeof finishResult>[1]) =>
        Effect.orDie(Effect.asVoid(finishResult(id, r))),
      finishRun: (id: number) => Effect.orDie(Effect.asVoid(finishRun(id))),
      heartbeat: (id: number) => Effect.orDie(Effect.asVoid(heartbeat(id))),
      interruptStale: (pipelineId: number) => Effect.orDie(interruptStale(pipelineId))
    }
  })
}) {}
