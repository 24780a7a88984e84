import { SqlClient, SqlSchema } from "@effect/sql"
import {
  ActionId,
  ActionResult,
  type ActionResultsQuery,
  type CreateAction,
  type CreateVariable,
  FixedTrigger,
  PipelineId,
  Variable,
  VariableDataType,
  VariableId,
  VariableType,
  WorkspaceId
} from "@parley/domain"
import { Effect, Option, Schema } from "effect"

const InWorkspaces = Schema.Struct({ id: Schema.Number, workspaceIds: Schema.Array(Schema.Number) })
const Json = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** The columns an action's create and update write. */
const actionFields = {
  stage_id: Schema.NullOr(Schema.Number),
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  method: Schema.String,
  url: Schema.String,
  headers: Schema.Record({ key: Schema.String, value: Schema.String }),
  payload: Schema.NullOr(Json),
  instructions: Schema.NullOr(Schema.String),
  is_active: Schema.Boolean,
  fixed_trigger: FixedTrigger,
  max_fires: Schema.NullOr(Schema.Number),
  retries: Schema.Number,
  order: Schema.Number,
  response_example: Schema.NullOr(Json)
}

export const ActionRow = Schema.Struct({
  id: ActionId,
  pipeline_id: PipelineId,
  ...actionFields,
  created_at: Schema.String,
  updated_at: Schema.String
})
export type ActionRow = typeof ActionRow.Type

/** Every column an action update writes (the service merges the request into the stored action). */
export type ActionWrite = Omit<ActionRow, "id" | "pipeline_id" | "created_at" | "updated_at">

const NewVariable = Schema.Struct({
  workspace_id: Schema.Number,
  pipeline_id: Schema.Number,
  name: Schema.String,
  value: Schema.String,
  type: VariableType,
  data_type: VariableDataType,
  is_required: Schema.Boolean,
  description: Schema.NullOr(Schema.String)
})

const NewAction = Schema.Struct({ workspace_id: Schema.Number, pipeline_id: Schema.Number, ...actionFields })

/**
 * ActionResultsQuery's values without its bounds: MCP asks for one run more than a page to tell whether another
 * follows.
 */
const ResultsQuery = Schema.Struct({
  opportunity_id: Schema.optional(Schema.Number),
  conversation_id: Schema.optional(Schema.Number),
  action_id: Schema.optional(Schema.Number),
  limit: Schema.Number,
  offset: Schema.Number
})

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

    const findPipelineWorkspace = SqlSchema.findOne({
      Request: InWorkspaces,
      Result: Schema.Struct({ workspace_id: WorkspaceId }),
      execute: ({ id, workspaceIds }) =>
        sql`
        select workspace_id from pipelines where id = ${id} and workspace_id in ${sql.in(workspaceIds)}`
    })

    const pipelineWorkspace = (workspaceIds: ReadonlyArray<WorkspaceId>, id: PipelineId) =>
      findPipelineWorkspace({ id, workspaceIds }).pipe(Effect.map(Option.map((r) => r.workspace_id)), Effect.orDie)

    const stageInPipeline = (pipelineId: number, stageId: number) =>
      sql`select 1 from stages where id = ${stageId} and pipeline_id = ${pipelineId}`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    const findVariables = SqlSchema.findAll({
      Request: Schema.Struct({ pipelineId: Schema.Number, namePattern: Schema.NullOr(Schema.String) }),
      Result: Variable,
      execute: ({ namePattern, pipelineId }) =>
        sql`${selectVariable} where pipeline_id = ${pipelineId}
        ${namePattern === null ? sql`` : sql`and name ilike ${namePattern}`} order by name`
    })

    const variables = (pipelineId: number, namePattern: string | null = null) =>
      findVariables({ pipelineId, namePattern }).pipe(Effect.orDie)

    const findVariableRow = SqlSchema.findOne({
      Request: InWorkspaces,
      Result: Variable,
      execute: ({ id, workspaceIds }) =>
        sql`${selectVariable} where id = ${id} and workspace_id in ${sql.in(workspaceIds)}`
    })

    const findVariable = (workspaceIds: ReadonlyArray<WorkspaceId>, id: VariableId) =>
      findVariableRow({ id, workspaceIds }).pipe(Effect.orDie)

    const insertVariableRow = SqlSchema.single({
      Request: NewVariable,
      Result: Schema.Struct({ id: VariableId }),
      execute: (v) =>
        sql`
        insert into variables (workspace_id, pipeline_id, name, value, type, data_type, is_required, description)
        values (${v.workspace_id}, ${v.pipeline_id}, ${v.name}, ${v.value}, ${v.type}, ${v.data_type},
                ${v.is_required}, ${v.description})
        returning id`
    })

    const insertVariable = (workspaceId: WorkspaceId, pipelineId: PipelineId, input: CreateVariable) =>
      insertVariableRow({
        ...input,
        workspace_id: workspaceId,
        pipeline_id: pipelineId,
        description: input.description ?? null
      }).pipe(
        Effect.map((row) => row.id),
        // the SqlError stays typed: the service turns the name's unique violation into a 422
        Effect.catchTags({ ParseError: Effect.die, NoSuchElementException: Effect.die })
      )

    const updateVariable = (v: Variable) =>
      sql`
        update variables set name = ${v.name}, value = ${v.value}, type = ${v.type}, data_type = ${v.data_type},
          is_required = ${v.is_required}, description = ${v.description}, updated_at = now()
        where id = ${v.id}`.pipe(Effect.asVoid)

    const deleteVariable = (id: VariableId) =>
      sql`delete from variables where id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

    const findActions = SqlSchema.findAll({
      Request: Schema.Struct({ pipelineId: Schema.Number, stageId: Schema.UndefinedOr(Schema.Number) }),
      Result: ActionRow,
      execute: ({ pipelineId, stageId }) =>
        sql`${selectAction} where pipeline_id = ${pipelineId}
        ${stageId === undefined ? sql`` : sql`and stage_id = ${stageId}`} order by fixed_trigger, sort_order, id`
    })

    const actions = (pipelineId: number, stageId?: number) => findActions({ pipelineId, stageId }).pipe(Effect.orDie)

    const findActionRow = SqlSchema.findOne({
      Request: InWorkspaces,
      Result: ActionRow,
      execute: ({ id, workspaceIds }) =>
        sql`${selectAction} where id = ${id} and workspace_id in ${sql.in(workspaceIds)}`
    })

    const findAction = (workspaceIds: ReadonlyArray<WorkspaceId>, id: ActionId) =>
      findActionRow({ id, workspaceIds }).pipe(Effect.orDie)

    const insertActionRow = SqlSchema.single({
      Request: NewAction,
      Result: Schema.Struct({ id: ActionId }),
      execute: (a) =>
        sql`
        insert into actions (workspace_id, pipeline_id, stage_id, name, description, method, url, headers, payload, instructions,
                             is_active, fixed_trigger, max_fires, retries, sort_order, response_example)
        values (${a.workspace_id}, ${a.pipeline_id}, ${a.stage_id}, ${a.name}, ${a.description}, ${a.method},
                ${a.url}, ${json(a.headers)}::jsonb, ${json(a.payload)}::jsonb,
                ${a.instructions}, ${a.is_active}, ${a.fixed_trigger}, ${a.max_fires},
                ${a.retries}, ${a.order}, ${json(a.response_example)}::jsonb)
        returning id`
    })

    const insertAction = (workspaceId: WorkspaceId, pipelineId: PipelineId, input: CreateAction) =>
      insertActionRow({
        ...input,
        workspace_id: workspaceId,
        pipeline_id: pipelineId,
        stage_id: input.stage_id ?? null,
        description: input.description ?? null,
        headers: input.headers ?? {},
        payload: input.payload ?? null,
        instructions: input.instructions ?? null,
        max_fires: input.max_fires ?? null,
        retries: input.retries ?? 3,
        order: input.order ?? 1,
        response_example: input.response_example ?? null
      }).pipe(
        Effect.map((row) => row.id),
        // the SqlError stays typed: the service turns the name's unique violation into a 422
        Effect.catchTags({ ParseError: Effect.die, NoSuchElementException: Effect.die })
      )

    const updateAction = (id: ActionId, a: ActionWrite) =>
      sql`
        update actions set name = ${a.name}, description = ${a.description}, method = ${a.method}, url = ${a.url},
          headers = ${json(a.headers)}::jsonb, payload = ${json(a.payload)}::jsonb, instructions = ${a.instructions},
          is_active = ${a.is_active}, fixed_trigger = ${a.fixed_trigger}, stage_id = ${a.stage_id}, max_fires = ${a.max_fires},
          retries = ${a.retries}, sort_order = ${a.order}, response_example = ${
        json(a.response_example)
      }::jsonb, updated_at = now()
        where id = ${id}`.pipe(Effect.asVoid)

    const deleteAction = (id: ActionId) => sql`delete from actions where id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

    /** Runs with their attempts, newest first: two statements, the results decoded once they are put together. */
    const findResults = SqlSchema.findAll({
      Request: Schema.Struct({ pipelineId: Schema.Number, query: ResultsQuery }),
      Result: ActionResult,
      execute: ({ pipelineId, query }) =>
        Effect.gen(function*() {
          const runs = yield* sql`
          select r.id, r.action_id, a.name as action_name, r.pipeline_id, r.opportunity_id, r.conversation_id, r.stage_id, r.message_id,
                 r.trigger, r.status, r.reason, r.request_method, r.request_url, r.request_headers, r.request_body,
                 r.response_status, left(r.response_body, 1000) as response_excerpt, r.created_at, r.finished_at
          from action_runs r join actions a on a.id = r.action_id
          where r.pipeline_id = ${pipelineId} and r.status <> 'recorded'
            ${query.opportunity_id === undefined ? sql`` : sql`and r.opportunity_id = ${query.opportunity_id}`}
            ${query.conversation_id === undefined ? sql`` : sql`and r.conversation_id = ${query.conversation_id}`}
            ${query.action_id === undefined ? sql`` : sql`and r.action_id = ${query.action_id}`}
          order by r.created_at desc, r.id desc limit ${query.limit} offset ${query.offset}`
          const attempts = runs.length === 0 ? [] : yield* sql`
          select run_id, attempt, status_code, duration_ms, error, response_excerpt, created_at from action_attempts
          where run_id in ${sql.in(runs.map((r) => r.id))} order by run_id, attempt`
          return runs.map(({ request_body, request_headers, request_method, request_url, ...r }) => ({
            ...r,
            request: request_method === null
              ? null
              : { method: request_method, url: request_url, headers: request_headers ?? {}, body: request_body },
            attempts: attempts.filter((a) => Number(a.run_id) === Number(r.id)).map(({ run_id: _, ...a }) => a)
          }))
        })
    })

    const results = (pipelineId: PipelineId, query: ActionResultsQuery) =>
      findResults({ pipelineId, query }).pipe(Effect.orDie)

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
