import { Schema } from "effect"
import { ChannelKind } from "./Channels.js"
import { AgentTypeId, AiModelId, AiProviderId, ChannelId, DialectId, LanguageId, PipelineId } from "./Ids.js"
import { IntFromQuery } from "./Schemas.js"

export class AiProvider extends Schema.Class<AiProvider>("AiProvider")({
  id: AiProviderId,
  slug: Schema.String,
  name: Schema.String
}) {}

export class AiModel extends Schema.Class<AiModel>("AiModel")({
  id: AiModelId,
  ai_provider_id: AiProviderId,
  name: Schema.String,
  model: Schema.String.annotations({ description: "The provider's model identifier" }),
  input_price_per_million: Schema.Number.annotations({ description: "USD per million input tokens" }),
  output_price_per_million: Schema.Number.annotations({ description: "USD per million output tokens" }),
  context_window: Schema.Int
}) {}

export class AgentType extends Schema.Class<AgentType>("AgentType")({
  id: AgentTypeId,
  name: Schema.String,
  description: Schema.String
}) {}

export class Dialect extends Schema.Class<Dialect>("Dialect")({
  id: DialectId,
  language_id: LanguageId,
  code: Schema.String,
  name: Schema.String
}) {}

export class Language extends Schema.Class<Language>("Language")({
  id: LanguageId,
  code: Schema.String,
  name: Schema.String,
  dialects: Schema.Array(Dialect)
}) {}

export class ConnectedChannel extends Schema.Class<ConnectedChannel>("ConnectedChannel")({
  id: ChannelId,
  kind: ChannelKind,
  name: Schema.String,
  pipeline_id: Schema.NullOr(PipelineId),
  is_active: Schema.Boolean
}) {}

export class PipelineOptions extends Schema.Class<PipelineOptions>("PipelineOptions")({
  ai_providers: Schema.Array(AiProvider),
  ai_models: Schema.Array(AiModel).annotations({ description: "The models of `ai_provider_id`; empty without it" }),
  agent_types: Schema.Array(AgentType),
  languages: Schema.Array(Language),
  dialects: Schema.Array(Dialect).annotations({ description: "The dialects of `language_code`" }),
  channels: Schema.Array(ConnectedChannel)
}) {}

export const PipelineOptionsQuery = Schema.Struct({
  language_code: Schema.optionalWith(Schema.String, { default: () => "en" }),
  ai_provider_id: Schema.optional(IntFromQuery)
}).annotations({ parseOptions: { errors: "all" } })
