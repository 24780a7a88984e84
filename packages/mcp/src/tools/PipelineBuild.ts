/**
 * Building and changing a pipeline and its stages (SPEC.md 4.5 build and update): the guided journey,
 * create and update of pipelines, stages and the Smart Routing pool. Changes need `pipelines:write`, as on
 * REST.
 */
import {
  AiProviderId,
  CreatePipeline,
  CreateStage,
  handoffFieldNames,
  modelRoutingRule,
  openingMessageRule,
  PipelineModelPool,
  UpdateModelPool,
  UpdatePipeline,
  UpdateStage
} from "@parley/domain"
import { Effect, Schema, Struct } from "effect"
import { McpBackend } from "../Backend.js"
import { pipelineJourney } from "../Journey.js"
import { describe, nextSteps, nullable, object, result, resultOf, string, strings } from "../Output.js"
import { type Tool, tool } from "../Tool.js"
import { optional, pipelineId, stageId, withDefault } from "../ToolFields.js"

const pipelineSaved = result({
  pipeline: describe(object, "The pipeline as saved, with its stages"),
  warning: nullable(string),
  next_steps: nextSteps
})
const stageSaved = result({ stage: object, next_steps: nextSteps })

export const pipelineBuildTools: ReadonlyArray<Tool> = [
  tool({
    name: "start_pipeline_journey",
    title: "Start building a pipeline",
    group: "build",
    readOnly: true,
    description:
      "Call first to build a new AI agent: a plan (settings, stages, automations, order of calls), the options with their ids, and the questions to ask the user. Call again with the chosen ai_provider_id.",
    input: Schema.Struct({
      language_code: withDefault(Schema.String, "en", "The agent's language, as a code such as en"),
      ai_provider_id: optional(AiProviderId, "The chosen AI provider; omit on the first call")
    }),
    output: result({
      step: string,
      language_code: string,
      ai_provider_id: nullable({ type: "integer" }),
      plan: object,
      options: object,
      questions: strings
    }),
    run: (input) =>
      Effect.flatMap(McpBackend, (b) => b.pipelineOptions(input)).pipe(
        Effect.map((options) => pipelineJourney(input, options))
      )
  }),
  tool({
    name: "create_pipeline",
    title: "Create a pipeline",
    group: "build",
    scope: "pipelines:write",
    description: "Creates a pipeline (AI agent), with ids from start_pipeline_journey or get_pipeline_options.",
    input: Schema.Struct(
      Struct.omit(CreatePipeline.from.fields, "workspace_id", "reply_debounce_ms", ...handoffFieldNames)
    ).pipe(
      Schema.filter(modelRoutingRule)
    ),
    output: pipelineSaved,
    run: (input) =>
      Effect.flatMap(McpBackend, (b) => b.createPipeline(input)).pipe(
        Effect.map(({ data: pipeline, warning }) => ({
          pipeline,
          warning,
          next_steps: [
            `create_stage with pipeline_id ${pipeline.id}, once per step of the process, order 1 first`,
            `create_variable and create_action with pipeline_id ${pipeline.id} to tell other systems`
          ]
        }))
      )
  }),
  tool({
    name: "create_stage",
    title: "Create a stage",
    group: "build",
    scope: "pipelines:write",
    description: "Adds a stage (a step of the process) to a pipeline; enter_condition tells the AI when to move here.",
    input: Schema.Struct({ pipeline_id: pipelineId, ...Struct.omit(CreateStage.from.fields, "handoff_instructions") })
      .pipe(
        Schema.filter(openingMessageRule)
      ),
    output: stageSaved,
    run: ({ pipeline_id, ...input }) =>
      Effect.flatMap(McpBackend, (b) => b.createStage(pipeline_id, input)).pipe(
        Effect.map((stage) => ({
          stage,
          next_steps: [
            `create_stage with pipeline_id ${pipeline_id} and order ${stage.order + 1} for the next step`,
            ...(stage.nature === "neutral"
              ? [`create_followup with stage_id ${stage.id} to follow up silent contacts`]
              : []),
            `create_action with stage_id ${stage.id} and fixed_trigger stage_started to tell another system on entry`
          ]
        }))
      )
  }),
  tool({
    name: "update_pipeline",
    title: "Update a pipeline",
    group: "update",
    scope: "pipelines:write",
    description: "Changes a pipeline's settings; also attaches or detaches knowledge tables.",
    input: Schema.Struct({
      pipeline_id: pipelineId,
      ...Struct.pick(
        UpdatePipeline.fields,
        "name",
        "description",
        "persona",
        "instructions",
        "status",
        "is_archived",
        "ai_model_id",
        "language_id",
        "dialect_id",
        "model_temperature",
        "rag_mode",
        "no_of_relevant_points",
        "agent_memory_window",
        "context_message_count",
        "max_conversation_messages",
        "max_conversation_cost",
        "followup_limit",
        "is_unknown_contacts_enabled",
        "is_model_routing_enabled",
        "fallback_model_id",
        "vision_model_id",
        "transcription_model_id",
        "cite_sources",
        "attach_knowledge_table_ids",
        "detach_knowledge_table_ids"
      )
    }),
    output: pipelineSaved,
    run: ({ pipeline_id, ...input }) =>
      Effect.flatMap(McpBackend, (b) => b.updatePipeline(pipeline_id, input)).pipe(
        Effect.map(({ data: pipeline, warning }) => ({
          pipeline,
          warning,
          next_steps: [`get_pipeline with pipeline_id ${pipeline.id} to review it whole`]
        }))
      )
  }),
  tool({
    name: "update_model_pool",
    title: "Update the model pool",
    group: "update",
    scope: "pipelines:write",
    description:
      "Sets a pipeline's four Smart Routing tiers (models from get_pipeline_options), and may turn routing on or off.",
    input: Schema.Struct({ pipeline_id: pipelineId, ...UpdateModelPool.fields }),
    output: resultOf(PipelineModelPool),
    run: ({ pipeline_id, ...input }) =>
      Effect.flatMap(McpBackend, (b) => b.updateModelPool(pipeline_id, input)).pipe(Effect.map((pool) => ({ ...pool })))
  }),
  tool({
    name: "update_stage",
    title: "Update a stage",
    group: "update",
    scope: "pipelines:write",
    description: "Changes a stage: instructions, entry condition, order, opening message, ...",
    input: Schema.Struct({ stage_id: stageId, ...Struct.omit(UpdateStage.fields, "handoff_instructions") }),
    output: stageSaved,
    run: ({ stage_id, ...input }) =>
      Effect.flatMap(McpBackend, (b) => b.updateStage(stage_id, input)).pipe(
        Effect.map((stage) => ({
          stage,
          next_steps: [`list_pipeline_stages with pipeline_id ${stage.pipeline_id} to see the new order`]
        }))
      )
  })
]
