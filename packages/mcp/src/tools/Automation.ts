/**
 * Variables, actions and their runs (SPEC.md 4.5): the webhooks a pipeline fires and the values they carry.
 * Reading is `mcp:use`'s (pipeline configuration); changes need `pipelines:write`, as on REST.
 */
import {
  ActionId,
  CreateAction,
  CreateVariable,
  OpportunityId,
  StageId,
  UpdateAction,
  UpdateVariable,
  VariableId
} from "@parley/domain"
import { IntAtLeast, IntBetween } from "@parley/domain/Schemas"
import { Effect, Schema } from "effect"
import { McpBackend } from "../Backend.js"
import { integer, nextPage, nextSteps, object, objects, paged, paginate, result } from "../Output.js"
import { type Tool, tool } from "../Tool.js"
import { optional, paging, pipelineId, required, withDefault } from "../ToolFields.js"

const variableSaved = result({ variable: object, next_steps: nextSteps })
const actionSaved = result({ action: object, next_steps: nextSteps })

export const automationTools: ReadonlyArray<Tool> = [
  tool({
    name: "list_actions",
    title: "List actions",
    group: "discover",
    description: "A pipeline's webhook actions: method, URL, trigger, active or draft.",
    input: Schema.Struct({
      pipeline_id: pipelineId,
      stage_id: optional(StageId, "Only this stage's actions"),
      ...paging(25)
    }),
    output: result({ pipeline_id: integer, actions: objects, ...paged }),
    run: (args) =>
      Effect.flatMap(McpBackend, (b) => b.listActions(args.pipeline_id, args.stage_id)).pipe(
        Effect.map((actions) => ({ pipeline_id: args.pipeline_id, ...paginate("actions", actions, args) }))
      )
  }),
  tool({
    name: "list_action_results",
    title: "List action runs",
    group: "discover",
    description:
      "Recorded runs of a pipeline's actions, newest first: request sent, response status, every attempt. For debugging a webhook.",
    input: Schema.Struct({
      pipeline_id: pipelineId,
      opportunity_id: optional(OpportunityId, "Only runs for this opportunity"),
      conversation_id: optional(IntAtLeast(1), "Only runs in this conversation"),
      action_id: optional(ActionId, "Only runs of this action"),
      limit: withDefault(IntBetween(1, 100), 50, "Runs to return"),
      offset: withDefault(IntAtLeast(0), 0, "Runs to skip")
    }),
    output: result({ pipeline_id: integer, results: objects, limit: integer, offset: integer, ...paged }),
    run: ({ pipeline_id, ...query }) =>
      // one more row than asked tells whether there is a next page
      Effect.flatMap(McpBackend, (b) => b.actionResults(pipeline_id, { ...query, limit: query.limit + 1 })).pipe(
        Effect.map((rows) => {
          const more = rows.length > query.limit
          return {
            pipeline_id,
            results: rows.slice(0, query.limit),
            limit: query.limit,
            offset: query.offset,
            has_more: more,
            next_page: nextPage({ pipeline_id, ...query }, more, { offset: query.offset + query.limit })
          }
        })
      )
  }),
  tool({
    name: "list_variables",
    title: "List variables",
    group: "discover",
    description: "A pipeline's variables: the values actions use as {{name}}.",
    input: Schema.Struct({
      pipeline_id: pipelineId,
      q: optional(Schema.String, "Part of the name, any case"),
      ...paging(50)
    }),
    output: result({ pipeline_id: integer, variables: objects, ...paged }),
    run: (args) =>
      Effect.flatMap(McpBackend, (b) => b.listVariables(args.pipeline_id, args.q)).pipe(
        Effect.map((variables) => ({ pipeline_id: args.pipeline_id, ...paginate("variables", variables, args) }))
      )
  }),
  tool({
    name: "create_variable",
    title: "Create a variable",
    group: "build",
    scope: "pipelines:write",
    description:
      "Creates a variable, a value actions use as {{name}}. from_system values: opportunity.id, opportunity.contact_email, stage.name, message.message, ... (entity.field). from_ai variables cannot serve stage_started or on_any_message actions.",
    input: Schema.Struct({ pipeline_id: pipelineId, ...CreateVariable.fields }),
    output: variableSaved,
    run: ({ pipeline_id, ...input }) =>
      Effect.flatMap(McpBackend, (b) => b.createVariable(pipeline_id, input)).pipe(
        Effect.map((variable) => ({
          variable,
          next_steps: [
            `Use {{${variable.name}}} in create_action's url, headers or payload (pipeline_id ${pipeline_id})`
          ]
        }))
      )
  }),
  tool({
    name: "create_action",
    title: "Create an action",
    group: "build",
    scope: "pipelines:write",
    description:
      "Creates an action, an outbound HTTP webhook fired by fixed_trigger. url, headers and payload hold {{variable_name}} of existing variables, never raw placeholders.",
    input: Schema.Struct({ pipeline_id: pipelineId, ...CreateAction.fields }),
    output: actionSaved,
    run: ({ pipeline_id, ...input }) =>
      Effect.flatMap(McpBackend, (b) => b.createAction(pipeline_id, input)).pipe(
        Effect.map((action) => ({
          action,
          next_steps: [
            ...(action.is_active ? [] : [`update_action with action_id ${action.id} and is_active true to turn it on`]),
            `list_action_results with pipeline_id ${pipeline_id} and action_id ${action.id} to see its runs`
          ]
        }))
      )
  }),
  tool({
    name: "update_action",
    title: "Update an action",
    group: "update",
    scope: "pipelines:write",
    description:
      "Changes an action's request, trigger or instructions; a stage_started or on_any_message trigger is fixed once created.",
    input: Schema.Struct({ action_id: required(ActionId, "From list_actions"), ...UpdateAction.fields }),
    output: actionSaved,
    run: ({ action_id, ...input }) =>
      Effect.flatMap(McpBackend, (b) => b.updateAction(action_id, input)).pipe(
        Effect.map((action) => ({
          action,
          next_steps: [`list_action_results with pipeline_id ${action.pipeline_id} and action_id ${action.id}`]
        }))
      )
  }),
  tool({
    name: "update_variable",
    title: "Update a variable",
    group: "update",
    scope: "pipelines:write",
    description: "Changes a variable's value or metadata; a name an action uses cannot change.",
    input: Schema.Struct({ variable_id: required(VariableId, "From list_variables"), ...UpdateVariable.fields }),
    output: variableSaved,
    run: ({ variable_id, ...input }) =>
      Effect.flatMap(McpBackend, (b) => b.updateVariable(variable_id, input)).pipe(
        Effect.map((variable) => ({
          variable,
          next_steps: [`list_variables with pipeline_id ${variable.pipeline_id}`]
        }))
      )
  })
]
