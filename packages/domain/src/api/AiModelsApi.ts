import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import {
  AiModelNotFoundResponse,
  AiModelRecord,
  AiModelsQuery,
  AiProviderNotFoundResponse,
  AiProviderRecord,
  CheckAiProvider,
  CreateAiModel,
  CreateAiProvider,
  ModelInUseResponse,
  ProviderCheck,
  UpdateAiModel,
  UpdateAiProvider
} from "../AiModels.js"
import { Ok } from "../Envelope.js"
import { ForbiddenResponse, UnprocessableResponse } from "../Errors.js"
import { AiModelId, AiProviderId, IdFromString } from "../Ids.js"
import { Authorized } from "./Auth.js"

const providerPath = Schema.Struct({ provider: IdFromString(AiProviderId) })
const modelPath = Schema.Struct({ model: IdFromString(AiModelId) })
const Deleted = Schema.Struct({ id: Schema.Number, deleted: Schema.Boolean })

export class AiModelsApi extends HttpApiGroup.make("aiModels")
  .add(
    HttpApiEndpoint.get("listProviders", "/api/user/ai-providers")
      .addSuccess(Ok(Schema.Array(AiProviderRecord)))
      .middleware(Authorized["models:read"])
      .annotate(OpenApi.Summary, "List the model providers: server-wide ones and the caller's workspaces' own")
  )
  .add(
    HttpApiEndpoint.post("createProvider", "/api/user/ai-providers")
      .setPayload(CreateAiProvider)
      .addSuccess(Ok(AiProviderRecord, { message: "AI provider created successfully." }))
      .addError(UnprocessableResponse)
      .addError(ForbiddenResponse)
      .middleware(Authorized["models:write"])
      .annotate(
        OpenApi.Summary,
        "Add a provider (OpenAI-compatible server, OpenAI, Anthropic, Gemini); the key is stored encrypted and never returned"
      )
  )
  .add(
    HttpApiEndpoint.get("getProvider", "/api/user/ai-providers/:provider")
      .setPath(providerPath)
      .addSuccess(Ok(AiProviderRecord))
      .addError(AiProviderNotFoundResponse)
      .middleware(Authorized["models:read"])
      .annotate(OpenApi.Summary, "Retrieve a provider (never its key)")
  )
  .add(
    HttpApiEndpoint.put("updateProvider", "/api/user/ai-providers/:provider")
      .setPath(providerPath)
      .setPayload(UpdateAiProvider)
      .addSuccess(Ok(AiProviderRecord, { message: "AI provider updated successfully." }))
      .addError(AiProviderNotFoundResponse)
      .addError(UnprocessableResponse)
      .addError(ForbiddenResponse)
      .middleware(Authorized["models:write"])
      .annotate(
        OpenApi.Summary,
        "Change a provider's name, URL, key, headers or timeout (`api_key: null` removes the key)"
      )
  )
  .add(
    HttpApiEndpoint.del("deleteProvider", "/api/user/ai-providers/:provider")
      .setPath(providerPath)
      .addSuccess(Ok(Deleted, { message: "AI provider deleted." }))
      .addError(AiProviderNotFoundResponse)
      .addError(ModelInUseResponse)
      .addError(UnprocessableResponse)
      .addError(ForbiddenResponse)
      .middleware(Authorized["models:write"])
      .annotate(OpenApi.Summary, "Delete a provider and its models (409 while a pipeline uses one of them)")
  )
  .add(
    HttpApiEndpoint.post("checkProvider", "/api/user/ai-providers/:provider/check")
      .setPath(providerPath)
      .setPayload(CheckAiProvider)
      .addSuccess(Ok(ProviderCheck))
      .addError(AiProviderNotFoundResponse)
      .middleware(Authorized["models:write"])
      .annotate(
        OpenApi.Summary,
        "List the provider's models and make one tiny request; says plainly what failed (unreachable, 401, model missing, no tools)"
      )
  )
  .add(
    HttpApiEndpoint.get("listModels", "/api/user/ai-models")
      .setUrlParams(AiModelsQuery)
      .addSuccess(Ok(Schema.Array(AiModelRecord)))
      .middleware(Authorized["models:read"])
      .annotate(OpenApi.Summary, "List the models the caller's pipelines may use")
  )
  .add(
    HttpApiEndpoint.post("createModel", "/api/user/ai-models")
      .setPayload(CreateAiModel)
      .addSuccess(Ok(AiModelRecord, { message: "AI model created successfully." }))
      .addError(UnprocessableResponse)
      .addError(ForbiddenResponse)
      .middleware(Authorized["models:write"])
      .annotate(OpenApi.Summary, "Add a model of a provider, with its prices, context window and capabilities")
  )
  .add(
    HttpApiEndpoint.get("getModel", "/api/user/ai-models/:model")
      .setPath(modelPath)
      .addSuccess(Ok(AiModelRecord))
      .addError(AiModelNotFoundResponse)
      .middleware(Authorized["models:read"])
      .annotate(OpenApi.Summary, "Retrieve a model")
  )
  .add(
    HttpApiEndpoint.put("updateModel", "/api/user/ai-models/:model")
      .setPath(modelPath)
      .setPayload(UpdateAiModel)
      .addSuccess(Ok(AiModelRecord, { message: "AI model updated successfully." }))
      .addError(AiModelNotFoundResponse)
      .addError(UnprocessableResponse)
      .addError(ForbiddenResponse)
      .middleware(Authorized["models:write"])
      .annotate(OpenApi.Summary, "Change a model's name, prices, context window or capabilities")
  )
  .add(
    HttpApiEndpoint.del("deleteModel", "/api/user/ai-models/:model")
      .setPath(modelPath)
      .addSuccess(Ok(Deleted, { message: "AI model deleted." }))
      .addError(AiModelNotFoundResponse)
      .addError(ModelInUseResponse)
      .addError(UnprocessableResponse)
      .addError(ForbiddenResponse)
      .middleware(Authorized["models:write"])
      .annotate(OpenApi.Summary, "Delete a model (409 naming the pipelines that use it)")
  )
  .annotate(OpenApi.Title, "AI models")
  .annotate(
    OpenApi.Description,
    "Model providers and models managed at run time (docs/agent.md, \"Models and providers\"). Scopes `models:read` and `models:write`."
  )
{}
