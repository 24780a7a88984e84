import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { PipelineOptions, PipelineOptionsQuery } from "../Catalogue.js"
import { Ok, OkWithWarning } from "../Envelope.js"
import {
  BadRequestResponse,
  PipelineNotFoundResponse,
  StageNotFoundResponse,
  UnprocessableResponse
} from "../Errors.js"
import { PipelineIdFromString, StageId, StageIdFromString } from "../Ids.js"
import {
  CreatePipeline,
  CreateStage,
  Pipeline,
  PipelineWithStages,
  Stage,
  UpdatePipeline,
  UpdateStage
} from "../Pipelines.js"
import { Authorized } from "./Auth.js"

const pipelinePath = Schema.Struct({ pipeline: PipelineIdFromString })
const stagePath = Schema.Struct({ stage: StageIdFromString })

const modelWarning =
  "When the pipeline's model (or, with Smart Routing on, a tier's model) belongs to a provider whose key is not set on the server, the pipeline is saved and `message` goes on with a warning, e.g. `Pipeline created successfully. Warning: the model gpt-4o needs OPENAI_API_KEY; replies will not be made until it is set.`"

export class PipelinesApi extends HttpApiGroup.make("pipelines")
  .add(
    HttpApiEndpoint.get("options", "/api/user/pipeline-options")
      .setUrlParams(PipelineOptionsQuery)
      .addSuccess(Ok(PipelineOptions))
      .middleware(Authorized["pipelines:read"])
      .annotate(OpenApi.Summary, "Catalogue for building a pipeline")
      .annotate(
        OpenApi.Description,
        "AI providers, models with prices (for `ai_provider_id`), agent types, languages with dialects and the workspace's channels. Scope `pipelines:read`."
      )
  )
  .add(
    HttpApiEndpoint.get("list", "/api/user/pipelines")
      .addSuccess(Ok(Schema.Array(Pipeline)))
      .middleware(Authorized["pipelines:read"])
      .annotate(OpenApi.Summary, "List pipelines")
  )
  .add(
    HttpApiEndpoint.post("create", "/api/user/pipelines")
      .setPayload(CreatePipeline)
      .addSuccess(OkWithWarning(PipelineWithStages, { message: "Pipeline created successfully." }))
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Create a pipeline")
      .annotate(OpenApi.Description, modelWarning)
  )
  .add(
    HttpApiEndpoint.get("get", "/api/user/pipelines/:pipeline")
      .setPath(pipelinePath)
      .addSuccess(Ok(PipelineWithStages))
      .addError(PipelineNotFoundResponse)
      .middleware(Authorized["pipelines:read"])
      .annotate(OpenApi.Summary, "Retrieve a pipeline with its stages")
  )
  .add(
    HttpApiEndpoint.put("update", "/api/user/pipelines/:pipeline")
      .setPath(pipelinePath)
      .setPayload(UpdatePipeline)
      .addSuccess(OkWithWarning(PipelineWithStages, { message: "Pipeline updated successfully." }))
      .addError(PipelineNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Update a pipeline (only the fields sent change)")
      .annotate(OpenApi.Description, modelWarning)
  )
  .add(
    HttpApiEndpoint.get("listStages", "/api/user/pipelines/:pipeline/stages")
      .setPath(pipelinePath)
      .addSuccess(Ok(Schema.Array(Stage)))
      .addError(PipelineNotFoundResponse)
      .middleware(Authorized["pipelines:read"])
      .annotate(OpenApi.Summary, "List a pipeline's stages in stage order")
  )
  .add(
    HttpApiEndpoint.post("createStage", "/api/user/pipelines/:pipeline/stages")
      .setPath(pipelinePath)
      .setPayload(CreateStage)
      .addSuccess(Ok(Stage, { message: "Stage created successfully." }))
      .addError(PipelineNotFoundResponse)
      .addError(StageNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Create a stage; later stages shift down to make room at `order`")
  )
  .add(
    HttpApiEndpoint.put("updateStage", "/api/user/stages/:stage")
      .setPath(stagePath)
      .setPayload(UpdateStage)
      .addSuccess(Ok(Stage, { message: "Stage updated successfully." }))
      .addError(StageNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Update a stage; changing `order` re-numbers its siblings")
  )
  .add(
    HttpApiEndpoint.del("deleteStage", "/api/user/stages/:stage")
      .setPath(stagePath)
      .addSuccess(
        Ok(Schema.Struct({ id: StageId, deleted: Schema.Boolean }), { message: "Stage deleted successfully." })
      )
      .addError(StageNotFoundResponse)
      .addError(BadRequestResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Delete a stage; the remaining stages are re-numbered")
  )
  .annotate(OpenApi.Title, "Pipelines and stages")
  .annotate(
    OpenApi.Description,
    "Agent configurations and their ordered stages. Scopes `pipelines:read` and `pipelines:write`."
  )
{}
