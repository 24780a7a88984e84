/**
 * The Smart Routing model pool of a pipeline on its own (REST twin of the MCP tools `list_model_pool` and
 * `update_model_pool`, SPEC.md 4.5). The pool is the pipeline's `is_model_routing`; the tiers and their
 * rules are the ones create and update pipeline use (`ModelPool` in Pipelines.ts).
 */
import { Schema } from "effect"
import { AiModelId, PipelineId } from "./Ids.js"
import { ModelPool, RoutingTier } from "./Pipelines.js"
import { all } from "./Schemas.js"

/** One tier's assignment; `ai_model_id` is null while the pipeline has no pool yet. */
export class ModelPoolTier extends Schema.Class<ModelPoolTier>("ModelPoolTier")({
  tier: RoutingTier,
  ai_model_id: Schema.NullOr(AiModelId),
  instructions: Schema.NullOr(Schema.String)
}) {}

/** Always the four tiers, in the order router, simple, moderate, complex. */
export class PipelineModelPool extends Schema.Class<PipelineModelPool>("PipelineModelPool")({
  pipeline_id: PipelineId,
  is_model_routing_enabled: Schema.Boolean,
  tiers: Schema.Array(ModelPoolTier)
}) {}

export const UpdateModelPool = Schema.Struct({
  is_model_routing_enabled: Schema.optional(Schema.Boolean).annotations({
    description: "Turn Smart Routing on or off at the same time; unchanged when omitted"
  }),
  tiers: ModelPool.annotations({
    description:
      "Exactly 4 entries, one per tier `router`, `simple`, `moderate`, `complex`: `{tier, ai_model_id, instructions?}`"
  })
}).annotations({ ...all, identifier: "UpdateModelPool" })
export type UpdateModelPool = typeof UpdateModelPool.Type
