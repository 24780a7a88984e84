/**
 * Model providers and models managed at run time (docs/agent.md, "Models and providers"): an operator points Parley at
 * any server speaking OpenAI's, Anthropic's or Gemini's API (Ollama, vLLM, LM Studio, OpenRouter, Azure OpenAI...) and
 * names the models it may use, with their prices and what they can do. Keys and header values are write-only.
 */
import { Schema } from "effect"
import { ErrorResponse, FixedErrorResponse } from "./Envelope.js"
import { AiModelId, AiProviderId, WorkspaceId } from "./Ids.js"
import { isHttpUrl } from "./Network.js"
import { all, IntBetween, maxChars, NonEmptyString, Timestamp } from "./Schemas.js"

export const ProviderKinds = ["openai_compatible", "openai", "anthropic", "google"] as const
export const ProviderKind = Schema.Literal(...ProviderKinds)
export type ProviderKind = typeof ProviderKind.Type

export const ModelCapabilities = ["tools", "vision", "audio_input", "embeddings", "transcription"] as const
export const ModelCapabilityLiteral = Schema.Literal(...ModelCapabilities)

const BaseUrl = Schema.String.pipe(maxChars(2048), Schema.filter((s) => isHttpUrl(s) || "must be an http or https URL"))
const HeaderName = Schema.String.pipe(
  Schema.filter((s) => /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/.test(s) || "must be a valid HTTP header name")
)
const Headers = Schema.Record({ key: HeaderName, value: Schema.String.pipe(maxChars(4096)) }).pipe(
  Schema.filter((h) => Object.keys(h).length <= 20 || "may have at most 20 headers")
)
const Price = Schema.Number.pipe(
  Schema.filter((n) => (Number.isFinite(n) && n >= 0 && n <= 100_000) || "must be a number between 0 and 100000")
)

export class AiProviderRecord extends Schema.Class<AiProviderRecord>("AiProviderRecord")({
  id: AiProviderId,
  slug: Schema.String,
  kind: Schema.Literal("local", ...ProviderKinds),
  name: Schema.String,
  base_url: Schema.NullOr(Schema.String).annotations({ description: "null: the server's default for its kind" }),
  has_key: Schema.Boolean.annotations({ description: "Whether an API key is stored (it is never returned)" }),
  header_names: Schema.Array(Schema.String).annotations({
    description: "Extra headers sent (their values are not returned)"
  }),
  timeout_ms: Schema.NullOr(Schema.Int),
  workspace_id: Schema.NullOr(WorkspaceId).annotations({ description: "null: server-wide" }),
  server_wide: Schema.Boolean,
  charge_credits: Schema.Boolean.annotations({
    description: "Whether replies through this provider spend the workspace's credits"
  }),
  is_seeded: Schema.Boolean,
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

const providerFields = {
  name: Schema.optional(NonEmptyString(255)),
  base_url: Schema.optional(Schema.NullOr(BaseUrl)),
  api_key: Schema.optional(Schema.NullOr(Schema.String.pipe(maxChars(4096)))),
  headers: Schema.optional(Headers),
  timeout_ms: Schema.optional(Schema.NullOr(IntBetween(1000, 600_000))),
  charge_credits: Schema.optional(Schema.Boolean),
  /** Save without asking the server first (it may not be running yet). */
  skip_check: Schema.optional(Schema.Boolean)
}

export const CreateAiProvider = Schema.Struct({
  ...providerFields,
  kind: ProviderKind,
  name: NonEmptyString(255),
  workspace_id: Schema.optional(WorkspaceId),
  server_wide: Schema.optional(Schema.Boolean)
}).annotations({ ...all, identifier: "CreateAiProvider" })
export type CreateAiProvider = typeof CreateAiProvider.Type

export const UpdateAiProvider = Schema.Struct(providerFields).annotations({ ...all, identifier: "UpdateAiProvider" })
export type UpdateAiProvider = typeof UpdateAiProvider.Type

export class AiModelRecord extends Schema.Class<AiModelRecord>("AiModelRecord")({
  id: AiModelId,
  ai_provider_id: AiProviderId,
  name: Schema.String,
  model: Schema.String.annotations({ description: "The name sent to the provider" }),
  input_price: Schema.Number.annotations({ description: "USD per million input tokens" }),
  output_price: Schema.Number.annotations({ description: "USD per million output tokens" }),
  context_window: Schema.Int,
  capabilities: Schema.Array(ModelCapabilityLiteral),
  workspace_id: Schema.NullOr(WorkspaceId).annotations({ description: "null: a server-wide provider's model" }),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

const modelFields = {
  name: Schema.optional(NonEmptyString(255)),
  model: Schema.optional(NonEmptyString(255)),
  input_price: Schema.optional(Price),
  output_price: Schema.optional(Price),
  context_window: Schema.optional(IntBetween(256, 100_000_000)),
  capabilities: Schema.optional(Schema.Array(ModelCapabilityLiteral))
}

export const CreateAiModel = Schema.Struct({
  ...modelFields,
  ai_provider_id: AiProviderId,
  model: NonEmptyString(255)
}).annotations({ ...all, identifier: "CreateAiModel" })
export type CreateAiModel = typeof CreateAiModel.Type

export const UpdateAiModel = Schema.Struct(modelFields).annotations({ ...all, identifier: "UpdateAiModel" })
export type UpdateAiModel = typeof UpdateAiModel.Type

export const AiModelsQuery = Schema.Struct({
  ai_provider_id: Schema.optional(Schema.compose(Schema.NumberFromString, AiProviderId))
}).annotations(all)

/** `POST /api/user/ai-providers/{id}/check`: what the server answered, and what failed in one plain sentence. */
export class ProviderCheck extends Schema.Class<ProviderCheck>("ProviderCheck")({
  ok: Schema.Boolean,
  reachable: Schema.Boolean,
  models: Schema.Array(Schema.String).annotations({ description: "The models the server lists" }),
  model: Schema.NullOr(Schema.String).annotations({ description: "The model the tiny request was made with" }),
  reply: Schema.NullOr(Schema.String),
  tools: Schema.NullOr(Schema.Boolean).annotations({ description: "Whether the model accepted a tool definition" }),
  problem: Schema.NullOr(Schema.String)
}) {}

export const CheckAiProvider = Schema.Struct({ model: Schema.optional(NonEmptyString(255)) }).annotations({
  ...all,
  identifier: "CheckAiProvider"
})

/** 409: a model (or a provider's model) that pipelines still use. */
export class ModelInUse extends Schema.TaggedError<ModelInUse>()("ModelInUse", { message: Schema.String }) {}
export const ModelInUseResponse = ErrorResponse(ModelInUse, 409, "ModelInUse")

export class AiProviderNotFound extends Schema.TaggedError<AiProviderNotFound>()("AiProviderNotFound", {
  message: Schema.optionalWith(Schema.String, { default: () => "AI provider not found." })
}) {}
export const AiProviderNotFoundResponse = FixedErrorResponse(
  AiProviderNotFound,
  404,
  "AiProviderNotFound",
  "AI provider not found."
)
export class AiModelNotFound extends Schema.TaggedError<AiModelNotFound>()("AiModelNotFound", {
  message: Schema.optionalWith(Schema.String, { default: () => "AI model not found." })
}) {}
export const AiModelNotFoundResponse = FixedErrorResponse(
  AiModelNotFound,
  404,
  "AiModelNotFound",
  "AI model not found."
)
