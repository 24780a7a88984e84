/**
 * `start_pipeline_journey` (SPEC.md 4.5): a guided plan for building a pipeline from the catalogue the
 * caller can choose from, and the questions to ask the user before the build tools are called.
 */
import type { PipelineOptions } from "@parley/domain"

const UNSET = "<ask the user>"

export interface JourneyInput {
  readonly language_code: string
  readonly ai_provider_id?: number | undefined
}

export const pipelineJourney = (input: JourneyInput, options: PipelineOptions) => {
  const language = options.languages.find((l) => l.code.toLowerCase() === input.language_code.toLowerCase())
  const provider = options.ai_providers.find((p) => p.id === input.ai_provider_id)
  const model = options.ai_models[0]
  const step = provider === undefined ? "choose_provider" : "configure_pipeline"

  // the ids to choose from are in `options`; a question names the list it is answered from
  const questions = [
    provider === undefined
      ? "Which AI provider should answer (options.ai_providers)? Then call start_pipeline_journey again with its ai_provider_id."
      : `Which ${provider.name} model should answer (options.ai_models: prices per million tokens)?`,
    "What should the pipeline be called (unique in the workspace)?",
    "What is the agent's job (options.agent_types)?",
    language === undefined
      ? "Which language should the agent speak (options.languages)?"
      : `The agent speaks ${language.name}${
        options.dialects.length > 0 ? "; which dialect, if any (options.dialects)?" : "."
      }`,
    "How should the agent sound (persona), and what must it always or never do (instructions)?",
    "What are the steps of the process, and what shows a contact has moved to the next (stages, enter_condition)?",
    "Should another system be told when a contact reaches a step: which URL, method and fields (actions, variables)?",
    "Should the agent follow up with contacts who stop answering, and after how long (followups)?",
    "Is there reference material to answer from, such as products, prices or FAQs (knowledge tables)?",
    options.channels.length > 0
      ? "Which channel should it answer on (options.channels)?"
      : "No channel is connected yet: build now, link a channel later."
  ]

  const plan = {
    pipeline: {
      tool: "create_pipeline",
      settings: {
        name: UNSET,
        agent_type_id: options.agent_types[0]?.id ?? UNSET,
        ai_model_id: model?.id ?? UNSET,
        language_id: language?.id ?? UNSET,
        dialect_id: null,
        persona: UNSET,
        instructions: UNSET,
        channel_id: options.channels.find((c) => c.pipeline_id === null)?.id ?? null,
        rag_mode: "hybrid",
        model_temperature: 0.7,
        followup_limit: 6,
        is_unknown_contacts_enabled: true,
        is_model_routing_enabled: false
      }
    },
    stages: [
      {
        tool: "create_stage",
        name: "New lead",
        nature: "neutral",
        order: 1,
        instructions: "Greet the contact, learn what they need and whether it fits.",
        is_opening_message: true,
        opening_message_type: "ai_generated"
      },
      {
        tool: "create_stage",
        name: "Qualified",
        nature: "neutral",
        order: 2,
        enter_condition: "The contact has said what they need, their budget and when they want to start.",
        instructions: "Answer questions and propose the next step (a call, a quote, a booking)."
      },
      {
        tool: "create_stage",
        name: "Won",
        nature: "won",
        order: 3,
        enter_condition: "The contact has agreed to buy, book or sign up."
      },
      {
        tool: "create_stage",
        name: "Lost",
        nature: "lost",
        order: 4,
        enter_condition: "The contact has said clearly that they are not interested."
      }
    ],
    variables: [
      {
        tool: "create_variable",
        name: "contact_name",
        type: "from_system",
        value: "opportunity.contact_name",
        is_required: false
      },
      {
        tool: "create_variable",
        name: "contact_email",
        type: "from_system",
        value: "opportunity.contact_email",
        is_required: false
      }
    ],
    actions: [
      {
        tool: "create_action",
        name: "notify_crm_won",
        stage: "Won",
        fixed_trigger: "stage_started",
        method: "POST",
        url: UNSET,
        is_active: false,
        payload: { name: "{{contact_name}}", email: "{{contact_email}}" },
        note: "Runtime values reach an action only through variables ({{variable_name}}); create the variables first."
      }
    ],
    followups: [
      {
        tool: "create_followup",
        stage: "New lead",
        is_active: false,
        intervals: [{ interval_value: 1, interval_unit: "day" }, { interval_value: 3, interval_unit: "day" }],
        instructions: "Remind the contact of what they asked about and offer help.",
        after_followup_stage: "Lost"
      }
    ],
    knowledge: {
      tools: ["create_knowledge_table", "upsert_knowledge_points", "update_pipeline (attach_knowledge_table_ids)"],
      note: "A new table is unreachable by the agent until it is attached to the pipeline."
    },
    order_of_calls: [
      "create_pipeline",
      "create_stage (one per stage, in order)",
      "create_variable (before the actions that use them)",
      "create_action",
      "create_followup (neutral stages only)",
      "create_knowledge_table, upsert_knowledge_points, update_pipeline with attach_knowledge_table_ids",
      "update_pipeline status active once the user has reviewed everything"
    ]
  }

  return {
    step,
    language_code: input.language_code,
    ai_provider_id: provider?.id ?? null,
    plan,
    options: {
      ai_providers: options.ai_providers,
      ai_models: options.ai_models,
      agent_types: options.agent_types,
      languages: options.languages.map((l) => ({ id: l.id, code: l.code, name: l.name })),
      dialects: options.dialects,
      channels: options.channels
    },
    questions
  }
}
