import { Schema } from "effect"
import { HandoffBridgeMode, HandoffTimeoutAction } from "./Handoff.js"
import { AgentTypeId, AiModelId, ChannelId, DialectId, LanguageId, PipelineId, StageId, WorkspaceId } from "./Ids.js"
import { all, FiniteNumber, IntAtLeast, IntBetween, MinLength, NonEmptyString, Text, Timestamp } from "./Schemas.js"
import { MessageTemplate } from "./Templates.js"

export const RagMode = Schema.Literal("none", "vector", "hybrid")
export const PipelineStatus = Schema.Literal("active", "inactive")
export const RoutingTier = Schema.Literal("router", "simple", "moderate", "complex")
export type RoutingTier = typeof RoutingTier.Type
export const RoutingTiers: ReadonlyArray<RoutingTier> = ["router", "simple", "moderate", "complex"]

export class ModelPoolEntry extends Schema.Class<ModelPoolEntry>("ModelPoolEntry")({
  tier: Schema.propertySignature(RoutingTier).annotations({
    description: "router reads each message; simple, moderate, complex answer"
  }),
  ai_model_id: Schema.propertySignature(AiModelId).annotations({ description: "The tier's model" }),
  instructions: Schema.optionalWith(Schema.NullOr(Text(10_000)), { default: () => null }).annotations({
    description: "Extra instructions for this tier"
  })
}) {}

/** Smart Routing: exactly the four tiers, each once. */
export const ModelPool = Schema.Array(ModelPoolEntry).pipe(
  Schema.filter((entries) => {
    if (entries.length !== 4) return "must contain exactly 4 entries: router, simple, moderate and complex"
    const tiers = new Set(entries.map((e) => e.tier))
    return tiers.size === 4 || "must name each tier (router, simple, moderate, complex) exactly once"
  }, { jsonSchema: { minItems: 4, maxItems: 4 } })
)

export const StageNature = Schema.Literal("neutral", "won", "lost")
export type StageNature = typeof StageNature.Type
export const OpeningMessageType = Schema.Literal("ai_generated", "static")

export class Stage extends Schema.Class<Stage>("Stage")({
  id: StageId,
  pipeline_id: PipelineId,
  name: Schema.String,
  nature: StageNature,
  order: Schema.Int,
  description: Schema.NullOr(Schema.String),
  ai_persona: Schema.NullOr(Schema.String),
  instructions: Schema.NullOr(Schema.String),
  notes: Schema.NullOr(Schema.String),
  enter_condition: Schema.NullOr(Schema.String),
  parent_id: Schema.NullOr(StageId),
  is_opening_message: Schema.Boolean,
  opening_message_type: Schema.NullOr(OpeningMessageType),
  static_opening_message: Schema.NullOr(Schema.String),
  opening_template: Schema.NullOr(MessageTemplate),
  handoff_instructions: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export class Pipeline extends Schema.Class<Pipeline>("Pipeline")({
  id: PipelineId,
  workspace_id: WorkspaceId,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  persona: Schema.NullOr(Schema.String),
  instructions: Schema.NullOr(Schema.String),
  status: PipelineStatus,
  is_archived: Schema.Boolean,
  agent_type_id: AgentTypeId,
  ai_model_id: AiModelId,
  language_id: LanguageId,
  dialect_id: Schema.NullOr(DialectId),
  channel_id: Schema.NullOr(ChannelId),
  rag_mode: RagMode,
  model_temperature: Schema.Number,
  no_of_relevant_points: Schema.Int,
  agent_memory_window: Schema.Int,
  context_message_count: Schema.Int,
  max_conversation_cost: Schema.NullOr(Schema.Number),
  max_conversation_messages: Schema.NullOr(Schema.Int),
  reply_debounce_ms: Schema.Int,
  followup_limit: Schema.Int,
  is_unknown_contacts_enabled: Schema.Boolean,
  is_model_routing_enabled: Schema.Boolean,
  is_model_routing: Schema.Array(ModelPoolEntry),
  fallback_model_id: Schema.NullOr(AiModelId),
  vision_model_id: Schema.NullOr(AiModelId),
  transcription_model_id: Schema.NullOr(AiModelId),
  cite_sources: Schema.Boolean,
  handoff_instructions: Schema.NullOr(Schema.String),
  handoff_bridge_mode: HandoffBridgeMode,
  handoff_bridge_text: Schema.NullOr(Schema.String),
  handoff_bridge_template: Schema.NullOr(MessageTemplate),
  handoff_timeout_seconds: Schema.NullOr(Schema.Int),
  handoff_timeout_action: HandoffTimeoutAction,
  handoff_keywords: Schema.Array(Schema.String),
  handoff_after_failures: Schema.NullOr(Schema.Int),
  fallback_message: Schema.NullOr(Schema.String),
  handoff_on_failure: Schema.Boolean,
  stages_count: Schema.Int,
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export class PipelineWithStages extends Pipeline.extend<PipelineWithStages>("PipelineWithStages")({
  stages: Schema.Array(Stage)
}) {}

const Temperature = Schema.Number.pipe(Schema.between(0.1, 1.0, { message: () => "must be between 0.1 and 1.0" }))
const Cost = FiniteNumber.pipe(Schema.positive({ message: () => "must be a positive number" }))
const OptionalText = Schema.optional(Schema.NullOr(Text(20_000)))

/** When the agent asks for a person and what the contact is told meanwhile (docs/handoff.md). */
export const handoffFields = {
  handoff_instructions: OptionalText.annotations({
    description:
      "When the agent should ask for a person, besides the contact asking for one (\"refund requests over 100 euros\")"
  }),
  handoff_bridge_mode: Schema.optional(HandoffBridgeMode).annotations({
    description: "`static` (default): the contact is told handoff_bridge_text. `ai_generated`: the agent writes it"
  }),
  handoff_bridge_text: Schema.optional(Schema.NullOr(Text(2_000))).annotations({
    description: "The bridge message; null: the default text"
  }),
  handoff_bridge_template: Schema.optional(Schema.NullOr(MessageTemplate)).annotations({
    description:
      "The approved template sent as the bridge on a channel whose service window closed (WhatsApp); null: no bridge there"
  }),
  handoff_timeout_seconds: Schema.optional(Schema.NullOr(IntBetween(30, 7 * 24 * 3600))).annotations({
    description: "How long a conversation may wait for a person before handoff_timeout_action; null: no limit"
  }),
  handoff_timeout_action: Schema.optional(HandoffTimeoutAction).annotations({
    description: "`return` (default): the agent has it again. `second_bridge`: the contact is told once more to wait"
  }),
  handoff_keywords: Schema.optional(Schema.Array(Text(100)).pipe(Schema.maxItems(50))).annotations({
    description: "Words or phrases that, in a contact's message, ask for a person (a rule)"
  }),
  handoff_after_failures: Schema.optional(Schema.NullOr(IntBetween(1, 20))).annotations({
    description: "Ask for a person after this many replies in a row could not be made (a rule); null: never"
  }),
  fallback_message: Schema.optional(Schema.NullOr(Text(2_000))).annotations({
    description:
      "What the contact is told when a reply cannot be made (the provider failed, or the output guard withheld it); " +
      "null: \"Sorry, I could not answer that just now. A member of our team will get back to you.\""
  }),
  handoff_on_failure: Schema.optional(Schema.Boolean).annotations({
    description:
      "When a reply cannot be made, tell the contact fallback_message and ask for a person (default true); " +
      "false: the turn is recorded as failed and the contact hears nothing"
  })
}
export const handoffFieldNames = Object.keys(handoffFields) as ReadonlyArray<keyof typeof handoffFields>

/** Settings shared by create and update (SPEC.md 4.5 create_pipeline / update_pipeline), each with what it means. */
const settingsFields = {
  description: OptionalText.annotations({ description: "What the pipeline is for" }),
  persona: OptionalText.annotations({ description: "How the agent sounds" }),
  instructions: OptionalText.annotations({ description: "What the agent must always or never do" }),
  channel_id: Schema.optional(Schema.NullOr(ChannelId)).annotations({
    description: "A connected channel to answer on"
  }),
  rag_mode: Schema.optional(RagMode).annotations({
    description: "Knowledge search: none, vector, or hybrid (vector and keyword)"
  }),
  dialect_id: Schema.optional(Schema.NullOr(DialectId)).annotations({ description: "A dialect of the language" }),
  model_temperature: Schema.optional(Temperature).annotations({
    description: "Model temperature: low is focused, high is varied"
  }),
  no_of_relevant_points: Schema.optional(IntBetween(1, 50)).annotations({
    description: "Knowledge rows given to the agent per reply"
  }),
  agent_memory_window: Schema.optional(IntBetween(1, 200)).annotations({
    description: "Past messages the agent reads per reply"
  }),
  context_message_count: Schema.optional(IntBetween(1, 200)).annotations({
    description:
      "Messages before the contact's latest that Smart Routing's router reads to pick a tier (within agent_memory_window)"
  }),
  max_conversation_cost: Schema.optional(Schema.NullOr(Cost)).annotations({
    description: "USD a conversation may cost before the agent stops; null: no limit"
  }),
  max_conversation_messages: Schema.optional(Schema.NullOr(IntAtLeast(1))).annotations({
    description: "Messages a conversation may hold before the agent stops; null: no limit"
  }),
  reply_debounce_ms: Schema.optional(IntBetween(0, 60_000)).annotations({
    description:
      "Messages arriving within this many milliseconds of each other get one reply (0 answers each at once; default 3000)"
  }),
  followup_limit: Schema.optional(IntAtLeast(1)).annotations({
    description: "Most followup messages per conversation"
  }),
  is_unknown_contacts_enabled: Schema.optional(Schema.Boolean).annotations({
    description: "Open an opportunity for contacts who write in without one"
  }),
  is_model_routing_enabled: Schema.optional(Schema.Boolean).annotations({
    description: "Smart Routing: a router model picks a tier's model per message"
  }),
  is_model_routing: Schema.optional(ModelPool).annotations({
    description: "The four tiers, each once; required with is_model_routing_enabled"
  }),
  fallback_model_id: Schema.optional(Schema.NullOr(AiModelId)).annotations({
    description: "Answers when the model fails after its retries"
  }),
  vision_model_id: Schema.optional(Schema.NullOr(AiModelId)).annotations({
    description: "A vision model that describes images for a model without vision"
  }),
  transcription_model_id: Schema.optional(Schema.NullOr(AiModelId)).annotations({
    description: "A transcription model for voice notes"
  }),
  cite_sources: Schema.optional(Schema.Boolean).annotations({
    description: "End replies with the links of the knowledge sources they used (default false)"
  }),
  ...handoffFields
}

/** What create fills in for a setting left out (migration 0003), shown to callers as JSON Schema defaults. */
const createDefaults = {
  rag_mode: settingsFields.rag_mode.annotations({ default: "none" }),
  model_temperature: settingsFields.model_temperature.annotations({ default: 0.7 }),
  no_of_relevant_points: settingsFields.no_of_relevant_points.annotations({ default: 5 }),
  agent_memory_window: settingsFields.agent_memory_window.annotations({ default: 20 }),
  context_message_count: settingsFields.context_message_count.annotations({ default: 10 }),
  followup_limit: settingsFields.followup_limit.annotations({ default: 6 }),
  is_unknown_contacts_enabled: settingsFields.is_unknown_contacts_enabled.annotations({ default: true }),
  is_model_routing_enabled: settingsFields.is_model_routing_enabled.annotations({ default: false })
}

const identityFields = {
  name: Schema.propertySignature(NonEmptyString(255)).annotations({ description: "Name, unique in the workspace" }),
  agent_type_id: Schema.propertySignature(AgentTypeId).annotations({
    description: "The agent's job (pipeline options' agent_types)"
  }),
  ai_model_id: Schema.propertySignature(AiModelId).annotations({
    description: "The model that answers (pipeline options' ai_models)"
  }),
  language_id: Schema.propertySignature(LanguageId).annotations({
    description: "The language it speaks (pipeline options' languages)"
  })
}

/** Smart Routing on needs the four tiers (create pipeline, and the MCP tool built on the same fields). */
export const modelRoutingRule = (p: {
  readonly is_model_routing_enabled?: boolean | undefined
  readonly is_model_routing?: ReadonlyArray<unknown> | undefined
}) =>
  p.is_model_routing_enabled === true && p.is_model_routing === undefined
    ? { path: ["is_model_routing"], message: "is required when is_model_routing_enabled is true" }
    : undefined

export const CreatePipeline = Schema.Struct({
  workspace_id: Schema.optional(WorkspaceId).annotations({
    description: "Workspace to create in; defaults to the caller's own workspace"
  }),
  ...identityFields,
  ...settingsFields,
  ...createDefaults
}).pipe(Schema.filter(modelRoutingRule)).annotations({ ...all, identifier: "CreatePipeline" })
export type CreatePipeline = typeof CreatePipeline.Type

export const UpdatePipeline = Schema.Struct({
  name: Schema.optional(NonEmptyString(255)).annotations({ description: "Name, unique in the workspace" }),
  status: Schema.optional(PipelineStatus).annotations({
    description: "active: the agent replies; inactive: it does not"
  }),
  is_archived: Schema.optional(Schema.Boolean).annotations({
    description: "An archived pipeline's agent does not reply"
  }),
  agent_type_id: Schema.optional(AgentTypeId).annotations({
    description: "The agent's job (pipeline options' agent_types)"
  }),
  ai_model_id: Schema.optional(AiModelId).annotations({
    description: "The model that answers (pipeline options' ai_models)"
  }),
  language_id: Schema.optional(LanguageId).annotations({
    description: "The language it speaks (pipeline options' languages)"
  }),
  ...settingsFields,
  attach_knowledge_table_ids: Schema.optional(Schema.Array(IntAtLeast(1))).annotations({
    description: "Knowledge tables of the pipeline's workspace to attach (additive)"
  }),
  detach_knowledge_table_ids: Schema.optional(Schema.Array(IntAtLeast(1))).annotations({
    description: "Knowledge tables to detach"
  })
}).annotations({ ...all, identifier: "UpdatePipeline" })
export type UpdatePipeline = typeof UpdatePipeline.Type

const stageFields = {
  description: OptionalText.annotations({ description: "What the stage is" }),
  ai_persona: OptionalText.annotations({ description: "How the agent sounds in this stage" }),
  instructions: OptionalText.annotations({ description: "What the agent does in this stage" }),
  notes: OptionalText.annotations({ description: "Internal notes, not shown to the agent" }),
  enter_condition: Schema.optional(Schema.NullOr(MinLength(20))).annotations({
    description: "When the AI moves an opportunity into this stage, in words"
  }),
  parent_id: Schema.optional(Schema.NullOr(StageId)).annotations({
    description: "A stage of the same pipeline this one belongs under"
  }),
  is_opening_message: Schema.optional(Schema.Boolean).annotations({
    description: "Send a message when an opportunity enters"
  }),
  opening_message_type: Schema.optional(Schema.NullOr(OpeningMessageType)).annotations({
    description: "Required with is_opening_message: ai_generated, or static"
  }),
  static_opening_message: Schema.optional(Schema.NullOr(Text(10_000))).annotations({
    description: "The text of a static opening message"
  }),
  opening_template: Schema.optional(Schema.NullOr(MessageTemplate)).annotations({
    description:
      "The approved template sent instead on a channel whose service window closed (WhatsApp); null: no opening there"
  }),
  handoff_instructions: OptionalText.annotations({
    description: "When the agent should ask for a person in this stage (docs/handoff.md)"
  })
}

/** `opening_message_type` is required with an opening message; a static one needs its text. */
const openingMessageRule = (s: {
  readonly is_opening_message?: boolean | undefined
  readonly opening_message_type?: "ai_generated" | "static" | null | undefined
  readonly static_opening_message?: string | null | undefined
}) => {
  if (s.is_opening_message === true && !s.opening_message_type) {
    return { path: ["opening_message_type"], message: "is required when is_opening_message is true" }
  }
  if (s.opening_message_type === "static" && s.is_opening_message === true && !s.static_opening_message?.trim()) {
    return { path: ["static_opening_message"], message: "is required when opening_message_type is static" }
  }
  return undefined
}

const stageName = "The stage's name"
const stageNature = "neutral: in progress; won or lost: closed"
const stageOrder = "Position, 1 = first; the stages after it move down"

export const CreateStage = Schema.Struct({
  name: Schema.propertySignature(MinLength(3, 255)).annotations({ description: stageName }),
  nature: Schema.propertySignature(StageNature).annotations({ description: stageNature }),
  order: Schema.propertySignature(IntAtLeast(1)).annotations({ description: stageOrder }),
  ...stageFields
}).pipe(Schema.filter(openingMessageRule)).annotations({ ...all, identifier: "CreateStage" })
export type CreateStage = typeof CreateStage.Type

export const UpdateStage = Schema.Struct({
  name: Schema.optional(MinLength(3, 255)).annotations({ description: stageName }),
  nature: Schema.optional(StageNature).annotations({ description: stageNature }),
  order: Schema.optional(IntAtLeast(1)).annotations({ description: stageOrder }),
  ...stageFields
}).annotations({ ...all, identifier: "UpdateStage" })
export type UpdateStage = typeof UpdateStage.Type

export { openingMessageRule }
