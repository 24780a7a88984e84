/**
 * Reading a pipeline's configuration (SPEC.md 4.5 discover): the pipelines, one pipeline whole, its stages,
 * its Smart Routing pool and the catalogue to choose settings from. `mcp:use` reads these, as `pipelines:read`.
 */
import { AiProviderId, type Pipeline, PipelineModelPool, PipelineOptions } from "@parley/domain"
import { Effect, Schema } from "effect"
import { McpBackend } from "../Backend.js"
import { integer, objects, paged, paginate, result, resultOf } from "../Output.js"
import { pipelineDocument, PipelineDocumentFields } from "../PipelineDocument.js"
import { type Tool, tool } from "../Tool.js"
import { optional, paging, pipelineId, withDefault } from "../ToolFields.js"

/** A list row: what tells pipelines apart; the rest is get_pipeline's. */
const row = (p: Pipeline) => ({
  id: p.id,
  name: p.name,
  description: p.description,
  status: p.status,
  is_archived: p.is_archived,
  channel_id: p.channel_id,
  ai_model_id: p.ai_model_id,
  rag_mode: p.rag_mode,
  stages_count: p.stages_count,
  updated_at: p.updated_at
})

export const pipelineReadTools: ReadonlyArray<Tool> = [
  tool({
    name: "list_pipelines",
    title: "List pipelines",
    group: "discover",
    description: "The account's pipelines (AI agents) with status and stage count; get_pipeline has one whole.",
    input: Schema.Struct(paging(25)),
    output: result({ pipelines: objects, ...paged }),
    run: (args) =>
      Effect.flatMap(McpBackend, (b) => b.listPipelines()).pipe(
        Effect.map((pipelines) => paginate("pipelines", pipelines.map(row), args))
      )
  }),
  tool({
    name: "get_pipeline",
    title: "Get a pipeline",
    group: "discover",
    description:
      "One pipeline's whole configuration: settings, stages, variables, actions, followups, Smart Routing, knowledge table ids.",
    input: Schema.Struct({ pipeline_id: pipelineId }),
    output: result(PipelineDocumentFields),
    run: ({ pipeline_id }) => pipelineDocument(pipeline_id)
  }),
  tool({
    name: "list_pipeline_stages",
    title: "List stages",
    group: "discover",
    description: "A pipeline's stages in order, with instructions, entry conditions and opening messages.",
    input: Schema.Struct({ pipeline_id: pipelineId, ...paging(50) }),
    output: result({ pipeline_id: integer, stages: objects, ...paged }),
    run: (args) =>
      Effect.flatMap(McpBackend, (b) => b.listStages(args.pipeline_id)).pipe(
        Effect.map((stages) => ({ pipeline_id: args.pipeline_id, ...paginate("stages", stages, args) }))
      )
  }),
  tool({
    name: "list_model_pool",
    title: "List the model pool",
    group: "discover",
    description: "A pipeline's Smart Routing: whether it is on, and each tier's model.",
    input: Schema.Struct({ pipeline_id: pipelineId }),
    output: resultOf(PipelineModelPool),
    run: ({ pipeline_id }) =>
      Effect.flatMap(McpBackend, (b) => b.modelPool(pipeline_id)).pipe(Effect.map((pool) => ({ ...pool })))
  }),
  tool({
    name: "get_pipeline_options",
    title: "Pipeline options",
    group: "discover",
    description:
      "The ids to build a pipeline with: AI providers and their models, agent types, languages, dialects, connected channels.",
    input: Schema.Struct({
      language_code: withDefault(Schema.String, "en", "Language whose dialects to list, as a code such as en"),
      ai_provider_id: optional(AiProviderId, "Provider whose models to list; omit to list the providers only")
    }),
    output: resultOf(PipelineOptions),
    run: (query) => Effect.flatMap(McpBackend, (b) => b.pipelineOptions(query)).pipe(Effect.map((o) => ({ ...o })))
  })
]
