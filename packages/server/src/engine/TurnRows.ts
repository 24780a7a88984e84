/**
 * The rows a turn reads (TurnsRepo): a conversation as the agent sees it, and its pipeline's whole
 * configuration with the memory window, read in one statement.
 */
import {
  ChannelId,
  ContactId,
  ConversationId,
  ModelCapabilityLiteral,
  OpportunityId,
  PipelineId,
  StageId,
  WorkspaceId
} from "@parley/domain"
import { Schema } from "effect"

const NullableString = Schema.NullOr(Schema.String)
const NullableNumber = Schema.NullOr(Schema.Number)

/** A conversation with its workspace's balance, its newest opportunity and its contact. */
export const ConversationRow = Schema.Struct({
  id: ConversationId,
  workspace_id: WorkspaceId,
  contact_id: ContactId,
  channel_id: Schema.NullOr(ChannelId),
  external_chat_id: NullableString,
  status: Schema.String,
  cost: Schema.Number,
  /** AI replies so far (not operators', not failed): the message limit counts these (0 when the pipeline sets none) */
  ai_replies: Schema.Number,
  credits: Schema.Number,
  is_subscription_active: Schema.Boolean,
  /** an eval's sandbox (docs/evals.md): its turns are left out of the reply metrics */
  is_eval: Schema.Boolean,
  channel_pipeline_id: Schema.NullOr(PipelineId),
  channel_kind: NullableString,
  /** when the contact's latest message was sent, by the provider's clock (ms): a service window counts from it */
  contact_sent_at_ms: NullableNumber,
  service_window_ms: NullableNumber,
  opportunity_id: Schema.NullOr(OpportunityId),
  opportunity_status: NullableString,
  opportunity_stage_id: Schema.NullOr(StageId),
  opportunity_pipeline_id: Schema.NullOr(PipelineId),
  opportunity_context: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  contact_name: NullableString,
  contact_email: NullableString,
  contact_phone: NullableString,
  contact_identifier: NullableString,
  handoff_state: Schema.Literal("ai", "waiting", "human"),
  handoff_return_note: NullableString,
  handoff_returned_upto: NullableString,
  stage_handoff_instructions: NullableString,
  /** the configuration the statement read: 0 the tables, else a version's id (docs/versions.md) */
  config_version: Schema.Number
})
export type ConversationRow = typeof ConversationRow.Type

export const StageRow = Schema.Struct({
  id: Schema.Number,
  name: Schema.String,
  nature: Schema.Literal("neutral", "won", "lost"),
  ai_persona: NullableString,
  instructions: NullableString,
  enter_condition: NullableString
})

export const ModelRow = Schema.Struct({
  id: Schema.Number,
  provider: Schema.String,
  kind: Schema.String,
  provider_id: Schema.Number,
  revision: Schema.String,
  model: Schema.String,
  input_price: Schema.Number,
  output_price: Schema.Number,
  context_window: Schema.Number,
  capabilities: Schema.Array(ModelCapabilityLiteral),
  charge_credits: Schema.Boolean,
  has_key: Schema.Boolean
})
export type ModelRow = typeof ModelRow.Type

/** An action the model may call in a turn (`on_user_message` or `custom`). */
export const ActionRow = Schema.Struct({
  id: Schema.Number,
  name: Schema.String,
  fixed_trigger: Schema.Literal("on_user_message", "custom"),
  description: NullableString,
  instructions: NullableString,
  url: Schema.String,
  headers: Schema.Record({ key: Schema.String, value: Schema.String }),
  payload: Schema.Unknown
})

export const PipelineRow = Schema.Struct({
  id: Schema.Number,
  name: Schema.String,
  status: Schema.String,
  is_archived: Schema.Boolean,
  persona: NullableString,
  instructions: NullableString,
  model_temperature: Schema.Number,
  agent_memory_window: Schema.Number,
  context_message_count: Schema.Number,
  rag_mode: Schema.Literal("none", "vector", "hybrid"),
  no_of_relevant_points: Schema.Number,
  max_conversation_cost: NullableNumber,
  max_conversation_messages: NullableNumber,
  ai_model_id: Schema.Number,
  fallback_model_id: NullableNumber,
  vision_model_id: NullableNumber,
  transcription_model_id: NullableNumber,
  cite_sources: Schema.Boolean,
  is_model_routing_enabled: Schema.Boolean,
  model_pool: Schema.Array(Schema.Struct({
    tier: Schema.Literal("router", "simple", "moderate", "complex"),
    ai_model_id: Schema.Number,
    instructions: Schema.optional(NullableString)
  })),
  agent_type_name: Schema.String,
  agent_type_description: NullableString,
  language: Schema.String,
  dialect: NullableString,
  handoff_instructions: NullableString,
  handoff_bridge_mode: Schema.Literal("static", "ai_generated"),
  handoff_bridge_text: NullableString,
  handoff_keywords: Schema.Array(Schema.String),
  handoff_after_failures: NullableNumber
})
export type PipelineRow = typeof PipelineRow.Type

/** The pipeline with what a turn uses of it: stages, the models it may call, actions, AI variables. */
export const PipelineConfig = Schema.Struct({
  ...PipelineRow.fields,
  stages: Schema.Array(StageRow),
  models: Schema.Array(ModelRow),
  actions: Schema.Array(ActionRow),
  ai_variables: Schema.Array(Schema.Struct({ name: Schema.String, value: Schema.String })),
  /** the attached knowledge tables (empty when `rag_mode` is none) */
  knowledge_table_ids: Schema.Array(Schema.Number)
})
export type PipelineConfig = typeof PipelineConfig.Type

export const HistoryRow = Schema.Struct({
  id: Schema.String,
  role: Schema.Literal("user", "assistant"),
  message: NullableString,
  files: Schema.Array(Schema.Unknown)
})

/** Everything a turn reads, in one row: no pipeline when the conversation has none (or it is gone). */
export const TurnSnapshot = Schema.Struct({
  ...ConversationRow.fields,
  pipeline: Schema.NullOr(PipelineConfig),
  /** the memory window, oldest first */
  history: Schema.Array(HistoryRow)
})
export type TurnSnapshot = typeof TurnSnapshot.Type
