import { SqlClient } from "@effect/sql"
import {
  type ActionId,
  ActionResult,
  type ActionResultsQuery,
  type CreateAction,
  type CreateVariable,
  type FixedTrigger,
  type PipelineId,
  Variable,
  type VariableId,
  type WorkspaceId
} from "@parley/domain"
import { Effect, Option, Schema } from "effect"

const decodeVariables = Schema.decodeUnknown(Schema.Array(Variable))
const decodeResults = Schema.decodeUnknown(Schema.Array(ActionResult))

export interface ActionRow {
  readonly id: ActionId
  readonly pipeline_id: PipelineId
  readonly stage_id: number | null
  readonly name: string
  readonly description: string | null
  readonly method: string
  readonly url: string
  readonly headers: Record<string, string>
  readonly payload: Record<string, unknown> | null
  readonly instructions: string | null
  readonly is_active: boolean
  readonly fixed_trigger: FixedTrigger
  readonly max_fires: number | null
  readonly retries: number
  readonly order: number
  readonly response_example: Record<string, unknown> | null
  readonly created_at: string
  readonly updated_at: string
}

/** Every column an action update writes (the service merges the request into the stored action). */
export type ActionWrite = Omit<ActionRow, "id" | "pipeline_id" | "created_at" | "updated_at">

const json = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value))

/** SQL of variables, actions and action runs; every read is scoped by workspace or by an owned pipeline. */
export class AutomationRepo extends Effect.Service<AutomationRepo>()("@parley/server/AutomationRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const selectVariable = sql`
      select id, pipeline_id, name, value, type, data_type, is_required, description, created_at, updated_at from variables`
    const selectAction = sql`
      select id, pipeline_id, stage_id, name, description, method, url, headers, payload, instructions, is_active,
             fixed_trigger, max_fires, retries, sort_order as "order", response_example, created_at, updated_at
      from actions`

    const pipelineWorkspace = (workspaceIds: ReadonlyArray<WorkspaceId>, id: PipelineId) =>
      sql<{ workspace_id: WorkspaceId }>`
        select workspace_id from pipelines where id = ${id} and workspace_id in ${sql.in(workspaceIds)}`.pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (r) => r.workspace_id)),
        Effect.orDie
      )

    const stageInPipeline = (pipelineId: number, stageId: number) =>
      sql`select 1 from stages where id = ${stageId} and pipeline_id = ${pipelineId}`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    const variables = (pipelineId: number, namePattern: string | null = null) =>
      sql`${selectVariable} where pipeline_id = ${pipelineId}
        ${namePattern === null ? sql`` : sql`and name ilike ${namePattern}`} order by name`.pipe(
        Effect.flatMap(decodeVariables),
        Effect.orDie
      )

    const findVariable = (workspaceIds: ReadonlyArray<WorkspaceId>, id: VariableId) =>
      sql`${selectVariable} where id = ${id} and workspace_id in ${sql.in(workspaceIds)}`.pipe(
        Effect.flatMap(decodeVariables),
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    const insertVariable = (workspaceId: WorkspaceId, pipelineId: PipelineId, input: CreateVariable) =>
      sql<{ id: VariableId }>`
        insert into variables (workspace_id, pipeline_id, name, value, type, data_type, is_required, description)
        values (${workspaceId}, ${pipelineId}, ${input.name}, ${input.value}, ${input.type}, ${input.data_type},
                ${input.is_required}, ${input.description ?? null})
        returning id`.pipe(Effect.map((rows) => rows[0]!.id))

    const updateVariable = (v: Variable) =>
      sql`
        update variables set name = ${v.name}, value = ${v.value}, type = ${v.type}, data_type = ${v.data_type},
          is_required = ${v.is_required}, description = ${v.description}, updated_at = now()
        where id = ${v.id}`.pipe(Effect.asVoid)

    const deleteVariable = (id: VariableId) => sql`delete from variables where id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

    const actions = (pipelineId: number, stageId?: number) =>
      sql<ActionRow>`${selectAction} where pipeline_id = ${pipelineId}
        ${stageId === undefined ? sql`` : sql`and stage_id = ${stageId}`} order by fixed_trigger, sort_order, id`.pipe(Effect.orDie)

    const findAction = (workspaceIds: ReadonlyArray<WorkspaceId>, id: ActionId) =>
      sql<ActionRow>`${selectAction} where id = ${id} and workspace_id in ${sql.in(workspaceIds)}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    const insertAction = (workspaceId: WorkspaceId, pipelineId: PipelineId, input: CreateAction) =>
      sql<{ id: ActionId }>`
        insert into actions (workspace_id, pipeline_id, stage_id, name, description, method, url, headers, payload, instructions,
                             is_active, fixed_trigger, max_fires, retries, sort_order, response_example)
        values (${workspaceId}, ${pipelineId}, ${input.stage_id ?? null}, ${input.name}, ${input.description ?? null}, ${input.method},
                ${input.url}, ${json(input.headers ?? {})}::jsonb, ${json(input.payload)}::jsonb,
                ${input.instructions ?? null}, ${input.is_active}, ${input.fixed_trigger}, ${input.max_fires ?? null},
                ${input.retries ?? 3}, ${input.order ?? 1}, ${json(input.response_example)}::jsonb)
        returning id`.pipe(Effect.map((rows) => rows[0]!.id))

    const updateAction = (id: ActionId, a: ActionWrite) =>
      sql`
        update actions set name = ${a.name}, description = ${a.description}, method = ${a.method}, url = ${a.url},
          headers = ${json(a.headers)}::jsonb, payload = ${json(a.payload)}::jsonb, instructions = ${a.instructions},
          is_active = ${a.is_active}, fixed_trigger = ${a.fixed_trigger}, stage_id = ${a.stage_id}, max_fires = ${a.max_fires},
          retries = ${a.retries}, sort_order = ${a.order}, response_example = ${json(a.response_example)}::jsonb, updated_at = now()
        where id = ${id}`.pipe(Effect.asVoid)

    const deleteAction = (id: ActionId) => sql`delete from actions where id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

    /** Runs with their attempts, newest first. */
    const results = (pipelineId: PipelineId, query: ActionResultsQuery) =>
      Effect.gen(function*() {
        const runs = yield* sql<Record<string, unknown> & { id: number; request_method: string | null }>`
          select r.id, r.action_id, a.name as action_name, r.pipeline_id, r.opportunity_id, r.conversation_id, r.stage_id, r.message_id,
                 r.trigger, r.status, r.reason, r.request_method, r.request_url, r.request_headers, r.request_body,
                 r.response_status, left(r.response_body, 1000) as response_excerpt, r.created_at, r.finished_at
          from action_runs r join actions a on a.id = r.action_id
          where r.pipeline_id = ${pipelineId} and r.status <> 'recorded'
            ${query.opportunity_id === undefined ? sql`` : sql`and r.opportunity_id = ${query.opportunity_id}`}
            ${query.conversation_id === undefined ? sql`` : sql`and r.conversation_id = ${query.conversation_id}`}
            ${query.action_id === undefined ? sql`` : sql`and r.action_id = ${query.action_id}`}
          order by r.created_at desc, r.id desc limit ${query.limit} offset ${query.offset}`
        const attempts = runs.length === 0 ? [] : yield* sql<{ run_id: number } & Record<string, unknown>>`
          select run_id, attempt, status_code, duration_ms, error, response_excerpt, created_at from action_attempts
          where run_id in ${sql.in(runs.map((r) => r.id))} order by run_id, attempt`
        return yield* decodeResults(runs.map(({ request_body, request_headers, request_method, request_url, ...r }) => ({
          ...r,
          request: request_method === null
            ? null
            : { method: request_method, url: request_url, headers: request_headers ?? {}, body: request_body },
          attempts: attempts.filter((a) => Number(a.run_id) === Number(r.id)).map(({ run_id: _, ...a }) => a)
        })))
      }).pipe(Effect.orDie)

    return {
      pipelineWorkspace,
      stageInPipeline,
      variables,
      findVariable,
      insertVariable,
      updateVariable,
      deleteVariable,
      actions,
      findAction,
      insertAction,
      updateAction,
      deleteAction,
      results
    }
  })
}) {}
