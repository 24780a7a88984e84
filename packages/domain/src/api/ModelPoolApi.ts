import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Ok } from "../Envelope.js"
import { PipelineNotFoundResponse, UnprocessableResponse } from "../Errors.js"
import { PipelineIdFromString } from "../Ids.js"
import { PipelineModelPool, UpdateModelPool } from "../ModelPool.js"
import { Authorized } from "./Auth.js"

const pipelinePath = Schema.Struct({ pipeline: PipelineIdFromString })

/** REST twins of the MCP tools `list_model_pool` and `update_model_pool` (SPEC.md 4.5). */
export class ModelPoolApi extends HttpApiGroup.make("modelPool")
  .add(
    HttpApiEndpoint.get("get", "/api/user/pipelines/:pipeline/model-pool")
      .setPath(pipelinePath)
      .addSuccess(Ok(PipelineModelPool))
      .addError(PipelineNotFoundResponse)
      .middleware(Authorized["pipelines:read"])
      .annotate(OpenApi.Summary, "A pipeline's Smart Routing tiers")
      .annotate(
        OpenApi.Description,
        "Always the four tiers `router`, `simple`, `moderate`, `complex` in that order; `ai_model_id` and `instructions` are null while the pipeline has no pool. Scope `pipelines:read`."
      )
  )
  .add(
    HttpApiEndpoint.put("update", "/api/user/pipelines/:pipeline/model-pool")
      .setPath(pipelinePath)
      .setPayload(UpdateModelPool)
      .addSuccess(Ok(PipelineModelPool, { message: "Model pool updated successfully." }))
      .addError(PipelineNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Set the four Smart Routing tiers (and optionally turn routing on or off)")
      .annotate(
        OpenApi.Description,
        "`tiers` replaces the whole pool: exactly 4 entries naming each tier once, each with an existing `ai_model_id`. `is_model_routing_enabled` is unchanged when omitted. Scope `pipelines:write`."
      )
  )
  .annotate(OpenApi.Title, "Model pool (Smart Routing)")
{}
