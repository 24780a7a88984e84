/**
 * The MCP tool catalogue of SPEC.md 4.5: 3 analytics, 14 discover, 8 build and 8 update tools, then the
 * three conversation tools of issue 19 (ConversationTools.ts). Every input schema is composed from the
 * domain's field schemas (the ones the REST payloads use), so REST and MCP validate alike; tool-only
 * parameters (ids that REST carries in the path, paging) are added here.
 */
import {
  ActionId,
  AiProviderId,
  ContactId,
  CreateAction,
  CreateKnowledgeTable,
  CreatePipeline,
  handoffFieldNames,
  CreateStage,
  CreateVariable,
  decodeMessagesCursor,
  DeletePoints,
  endNotBeforeStart,
  FollowupIntervals,
  IsoDate,
  KnowledgeTableId,
  ListContactsQuery,
  ListOpportunitiesQuery,
  MessagingStatsQuery,
  modelRoutingRule,
  NotFound,
  openingMessageRule,
  OpportunityId,
  parseIsoDate,
  PipelineId,
  SaveFollowup,
  SearchKnowledge,
  StageId,
  TagId,
  Unprocessable,
  UpdateAction,
  UpdateModelPool,
  UpdateOpportunity,
  UpdatePipeline,
  UpdateStage,
  UpdateVariable,
  UpsertPoints,
  VariableId
} from "@parley/domain"
import { IntAtLeast, IntBetween } from "@parley/domain/Schemas"
import { Effect, Schema, Struct } from "effect"
import { McpBackend } from "./Backend.js"
import { conversationTools } from "./ConversationTools.js"
import { pipelineJourney } from "./Journey.js"
import { output, type Tool, tool } from "./Tool.js"
import { optional, plural, required, withDefault } from "./ToolFields.js"

const backend = McpBackend

const pipelineId = required(PipelineId, "The pipeline's id (from list_pipelines)")
const stageId = required(StageId, "The stage's id (from list_pipeline_stages)")
const knowledgeTableId = required(KnowledgeTableId, "The knowledge table's id (from list_knowledge_tables)")
const none = Schema.Struct({})

/** A save's summary, with the warning the REST envelope's `message` carries too. */
const withWarning = (summary: string, warning: string | null) => warning === null ? summary : `${summary} Warning: ${warning}`

/** A bare end date covers that whole day (UTC), as on the REST list endpoints. */
const endBound = (value: string | undefined) => {
  const parsed = value === undefined ? undefined : parseIsoDate(value)
  if (parsed === undefined) return {}
  return parsed.dateOnly
    ? { end: new Date(parsed.date.getTime() + 86_400_000), endExclusive: true }
    : { end: parsed.date, endExclusive: false }
}

const pageOf = <A>(key: string, page: {
  readonly data: ReadonlyArray<A>
  readonly current_page: number
  readonly per_page: number
  readonly last_page: number
  readonly total: number
}) => ({
  [key]: page.data,
  page: page.current_page,
  per_page: page.per_page,
  last_page: page.last_page,
  total: page.total,
  has_more: page.current_page < page.last_page
})

// -------------------------------------------------------------------------------------------------
// Analytics

const analytics: ReadonlyArray<Tool> = [
  tool({
    name: "get_account_summary",
    title: "Account summary",
    group: "analytics",
    description:
      "Totals for the whole account: pipelines, opportunities (by status), conversations and messages (by role). Use it for a quick overview or before comparing periods.",
    input: none,
    run: () =>
      Effect.flatMap(backend, (b) => b.accountSummary()).pipe(
        Effect.map((s) =>
          output(
            { ...s },
            `${plural(s.pipelines, "pipeline")}, ${plural(s.opportunities, "opportunity", "opportunities")}, ${
              plural(s.conversations, "conversation")
            }, ${plural(s.messages, "message")}.`
          )
        )
      )
  }),
  tool({
    name: "get_ai_performance",
    title: "AI performance",
    group: "analytics",
    description:
      "How the AI agents perform: AI-written messages, operator messages, average response time in seconds and total cost. Use it to judge speed and spend.",
    input: none,
    run: () =>
      Effect.flatMap(backend, (b) => b.aiPerformance()).pipe(
        Effect.map((p) =>
          output(
            { ...p },
            `${plural(p.ai_messages, "AI message")}, average response ${
              p.average_response_seconds === null ? "n/a" : `${p.average_response_seconds} s`
            }, total cost ${p.total_cost}.`
          )
        )
      )
  }),
  tool({
    name: "get_messaging_stats",
    title: "Messaging statistics",
    group: "analytics",
    description:
      "Message counts and cost per day for a period, optionally for one pipeline or one channel provider. Use it for trends (volume per day, user versus assistant messages).",
    input: Schema.Struct({
      ...Struct.pick(MessagingStatsQuery.from.fields, "start_date", "end_date"),
      pipeline_id: optional(PipelineId, "Only this pipeline's messages"),
      provider: optional(MessagingStatsQuery.from.fields.provider.from, "Only messages of channels of this kind")
    }).pipe(Schema.filter((q) => endNotBeforeStart(q))),
    run: (input) =>
      Effect.flatMap(backend, (b) => b.messagingStats({ ...input, include_test: false })).pipe(
        Effect.map((s) => output({ ...s }, `${plural(s.totals.messages, "message")} over ${plural(s.series.length, "day")}, cost ${s.totals.cost}.`))
      )
  })
]

// -------------------------------------------------------------------------------------------------
// Discover

const discover: ReadonlyArray<Tool> = [
  tool({
    name: "list_pipelines",
    title: "List pipelines",
    group: "discover",
    description:
      "Every pipeline (AI agent configuration) of the account with its status, description and number of stages. Start here to find a pipeline_id.",
    input: none,
    run: () =>
      Effect.flatMap(backend, (b) => b.listPipelines()).pipe(
        Effect.map((pipelines) =>
          output(
            { pipelines },
            [`${plural(pipelines.length, "pipeline")}:`, ...pipelines.map((p) => `- #${p.id} ${p.name} (${p.status}, ${plural(p.stages_count, "stage")})`)]
              .join("\n")
          )
        )
      )
  }),
  tool({
    name: "list_pipeline_stages",
    title: "List stages",
    group: "discover",
    description: "The stages of a pipeline in stage order, with nature (neutral, won, lost), instructions, entry condition and opening message.",
    input: Schema.Struct({ pipeline_id: pipelineId }),
    run: ({ pipeline_id }) =>
      Effect.flatMap(backend, (b) => b.listStages(pipeline_id)).pipe(
        Effect.map((stages) =>
          output(
            { pipeline_id, stages },
            [`${plural(stages.length, "stage")}:`, ...stages.map((s) => `${s.order}. #${s.id} ${s.name} (${s.nature})`)].join("\n")
          )
        )
      )
  }),
  tool({
    name: "list_actions",
    title: "List actions",
    group: "discover",
    description:
      "The webhook actions of a pipeline: method, URL, trigger, whether active. Without stage_id every action is listed (pipeline-level and stage-level); with it, that stage's only.",
    input: Schema.Struct({
      pipeline_id: pipelineId,
      stage_id: optional(StageId, "Only this stage's actions; omit to include pipeline-level actions")
    }),
    run: ({ pipeline_id, stage_id }) =>
      Effect.flatMap(backend, (b) => b.listActions(pipeline_id, stage_id)).pipe(
        Effect.map((actions) =>
          output(
            { pipeline_id, actions },
            [
              `${plural(actions.length, "action")}:`,
              ...actions.map((a) => `- #${a.id} ${a.name}: ${a.method} ${a.url} on ${a.fixed_trigger}${a.is_active ? "" : " (draft)"}`)
            ].join("\n")
          )
        )
      )
  }),
  tool({
    name: "list_action_results",
    title: "List action runs",
    group: "discover",
    description:
      "Recorded runs of a pipeline's actions, newest first: the request sent, the response status and every attempt. Use it to debug a webhook. One row per run.",
    input: Schema.Struct({
      pipeline_id: pipelineId,
      opportunity_id: optional(OpportunityId, "Only runs for this opportunity"),
      conversation_id: optional(IntAtLeast(1), "Only runs in this conversation"),
      action_id: optional(ActionId, "Only runs of this action"),
      limit: withDefault(IntBetween(1, 100), 50, "Rows to return, 1 to 100 (default 50)"),
      offset: withDefault(IntAtLeast(0), 0, "Rows to skip (default 0)")
    }),
    run: ({ pipeline_id, ...query }) =>
      Effect.flatMap(backend, (b) => b.actionResults(pipeline_id, query)).pipe(
        Effect.map((results) =>
          output(
            { pipeline_id, results, limit: query.limit, offset: query.offset },
            [
              `${plural(results.length, "run")}:`,
              ...results.map((r) => `- #${r.id} ${r.action_name}: ${r.status}${r.response_status === null ? "" : ` (HTTP ${r.response_status})`}`)
            ].join("\n")
          )
        )
      )
  }),
  tool({
    name: "list_variables",
    title: "List variables",
    group: "discover",
    description: "The variables of a pipeline (values injected into actions as {{name}}), optionally those whose name contains q.",
    input: Schema.Struct({ pipeline_id: pipelineId, q: optional(Schema.String, "Part of the variable name (case-insensitive)") }),
    run: ({ pipeline_id, q }) =>
      Effect.flatMap(backend, (b) => b.listVariables(pipeline_id, q)).pipe(
        Effect.map((variables) =>
          output(
            { pipeline_id, variables },
            [`${plural(variables.length, "variable")}:`, ...variables.map((v) => `- #${v.id} {{${v.name}}} ${v.type}: ${v.value}`)].join("\n")
          )
        )
      )
  }),
  tool({
    name: "list_contacts",
    title: "List contacts",
    group: "discover",
    scope: "opportunities:read",
    description:
      "Contacts (people the agents talk to), newest first, one row per contact, filtered by pipeline, status and priority of their opportunities, tags, a search text or creation dates. Needs scope opportunities:read.",
    input: Schema.Struct({
      pipeline_id: optional(PipelineId, "Contacts with an opportunity in this pipeline"),
      ...Struct.pick(ListContactsQuery.fields, "status", "priority"),
      q: optional(ListContactsQuery.fields.q.from, "Part of the name, email, phone or identifier"),
      tag_ids: optional(Schema.Array(TagId), "Tag ids; a contact matches with any of them"),
      start_date: optional(IsoDate, "Created on or after (ISO 8601)"),
      end_date: optional(IsoDate, "Created on or before (ISO 8601; a bare date includes that day)"),
      page: withDefault(IntAtLeast(1), 1, "Page number (default 1)"),
      per_page: withDefault(IntBetween(1, 100), 25, "Rows per page, 1 to 100 (default 25)")
    }),
    run: ({ tag_ids, ...query }) =>
      Effect.flatMap(backend, (b) => b.listContacts({ ...query, ...(tag_ids ? { tag_ids: tag_ids.map(String) } : {}) })).pipe(
        Effect.map((page) =>
          output(
            pageOf("contacts", page),
            [
              `${plural(page.total, "contact")} (page ${page.current_page} of ${page.last_page}):`,
              ...page.data.map((c) => `- #${c.id} ${c.custom_name ?? c.name ?? c.email ?? c.phone ?? "(no name)"}`)
            ].join("\n")
          )
        )
      )
  }),
  tool({
    name: "list_opportunities",
    title: "List opportunities",
    group: "discover",
    scope: "opportunities:read",
    description:
      "Opportunities (leads or deals), newest first, one row per opportunity (a contact can repeat), with contact, stage, tags and conversations. Filter by pipeline, stage, status, priority, tags, search text or creation dates. Needs scope opportunities:read.",
    input: Schema.Struct({
      pipeline_id: optional(PipelineId, "Only this pipeline"),
      stage_id: optional(StageId, "Only this stage"),
      ...Struct.pick(ListOpportunitiesQuery.fields, "status", "priority"),
      q: optional(ListOpportunitiesQuery.fields.q.from, "Part of the contact's name, email, phone, identifier or custom name"),
      tag_ids: optional(Schema.Array(TagId), "Tag ids; an opportunity matches with any of them"),
      tags: optional(Schema.Array(Schema.String), "Tag names (case-insensitive); an opportunity matches with any of them"),
      start_date: optional(IsoDate, "Created on or after (ISO 8601)"),
      end_date: optional(IsoDate, "Created on or before (ISO 8601; a bare date includes that day)"),
      page: withDefault(IntAtLeast(1), 1, "Page number (default 1)"),
      per_page: withDefault(IntBetween(1, 100), 25, "Rows per page, 1 to 100 (default 25)")
    }),
    run: ({ tag_ids, ...query }) =>
      Effect.flatMap(backend, (b) => b.listOpportunities({ ...query, ...(tag_ids ? { tag_ids: tag_ids.map(String) } : {}) })).pipe(
        Effect.map((page) =>
          output(
            pageOf("opportunities", page),
            [
              `${plural(page.total, "opportunity", "opportunities")} (page ${page.current_page} of ${page.last_page}):`,
              ...page.data.map((o) =>
                `- #${o.id} ${o.name ?? o.contact_custom_name ?? o.contact_name ?? o.contact_email ?? "(no name)"}: ${o.status}, stage ${o.stage_name}`
              )
            ].join("\n")
          )
        )
      )
  }),
  tool({
    name: "list_messages",
    title: "List messages",
    group: "discover",
    scope: "opportunities:read",
    description:
      "Messages exchanged with contacts, newest first, filtered by pipeline, contact, role or date. A contact message the agent did not answer has no_reply_reason (no_credits, no_subscription, paused, message_limit, cost_limit, model_not_configured, provider_error, no_agent); null otherwise. Pass next_cursor from the answer back as cursor for the next page. Needs scope opportunities:read.",
    input: Schema.Struct({
      pipeline_id: optional(PipelineId, "Only this pipeline's messages"),
      contact_id: optional(ContactId, "Only messages with this contact"),
      role: optional(Schema.Literal("user", "assistant"), "user = from the contact, assistant = from the AI or an operator"),
      start_date: optional(IsoDate, "Sent on or after (ISO 8601)"),
      end_date: optional(IsoDate, "Sent on or before (ISO 8601; a bare date includes that day)"),
      cursor: optional(Schema.String, "next_cursor of the previous call; omit for the first page"),
      limit: withDefault(IntBetween(1, 500), 100, "Messages per page, 1 to 500 (default 100)")
    }),
    run: (input) =>
      Effect.gen(function*() {
        const cursor = input.cursor === undefined ? undefined : decodeMessagesCursor(input.cursor)
        if (input.cursor !== undefined && cursor === undefined) {
          return yield* Unprocessable.of([{ field: "cursor", message: "is not a next_cursor of a previous call" }])
        }
        const start = input.start_date === undefined ? undefined : parseIsoDate(input.start_date)?.date
        const page = yield* (yield* backend).listMessages({
          pipelineId: input.pipeline_id,
          contactId: input.contact_id,
          role: input.role,
          start,
          ...endBound(input.end_date),
          cursor,
          limit: input.limit
        })
        return output(
          { ...page },
          `${plural(page.messages.length, "message")}${page.next_cursor === null ? " (last page)" : "; more with cursor = next_cursor"}.`
        )
      })
  }),
  tool({
    name: "list_knowledge_tables",
    title: "List knowledge tables",
    group: "discover",
    description:
      "Knowledge tables (reference data the agents search) with their columns, column and point counts, and the pipelines each is attached to.",
    input: none,
    run: () =>
      Effect.flatMap(backend, (b) => b.listKnowledgeTables()).pipe(
        Effect.map((tables) =>
          output(
            { knowledge_tables: tables },
            [
              `${plural(tables.length, "knowledge table")}:`,
              ...tables.map((t) =>
                `- #${t.id} ${t.name}: ${plural(t.columns_count, "column")}, ${plural(t.points_count, "point")}, attached to ${
                  plural(t.pipeline_ids.length, "pipeline")
                }`
              )
            ].join("\n")
          )
        )
      )
  }),
  tool({
    name: "search_knowledge_table",
    title: "Search a knowledge table",
    group: "discover",
    scope: "knowledge:read",
    description:
      "Searches a knowledge table in natural language the way agents do. Hybrid (default) fuses vector and keyword matches; use_hybrid false is pure vector search. Results carry point_ids. Needs scope knowledge:read.",
    input: Schema.Struct({
      knowledge_table_id: knowledgeTableId,
      query: required(SearchKnowledge.fields.query, "What to look for, in natural language"),
      limit: withDefault(IntBetween(1, 20), 5, "Results, 1 to 20 (default 5)"),
      use_hybrid: withDefault(Schema.Boolean, true, "true = vector plus keyword (default), false = pure vector")
    }),
    run: ({ knowledge_table_id, ...search }) =>
      Effect.flatMap(backend, (b) => b.searchKnowledge(knowledge_table_id, search)).pipe(
        Effect.map((r) => output({ knowledge_table_id, ...r }, `${plural(r.results.length, "result")} (${r.mode}) for "${r.query}".`))
      )
  }),
  tool({
    name: "list_knowledge_points",
    title: "List knowledge points",
    group: "discover",
    scope: "knowledge:read",
    description:
      "The rows (points) of a knowledge table, a page at a time. Pass next_page_offset back for the next page while has_more is true. All ids are strings. Needs scope knowledge:read.",
    input: Schema.Struct({
      knowledge_table_id: knowledgeTableId,
      per_page: withDefault(IntBetween(1, 100), 20, "Points per page, 1 to 100 (default 20)"),
      next_page_offset: optional(Schema.String, "next_page_offset of the previous call; omit for the first page")
    }),
    run: ({ knowledge_table_id, next_page_offset, per_page }) =>
      Effect.flatMap(backend, (b) => b.knowledgePoints(knowledge_table_id, per_page, next_page_offset)).pipe(
        Effect.map((page) =>
          output(
            {
              knowledge_table_id: String(knowledge_table_id),
              points: page.records.map((p) => ({
                point_id: String(p.point_id),
                default_id: String(p.default_id),
                data: p.data,
                modified_date: p.modified_date
              })),
              next_page_offset: page.next_page_offset,
              has_more: page.next_page_offset !== null
            },
            `${plural(page.count, "point")}${page.next_page_offset === null ? " (last page)" : "; more with next_page_offset"}.`
          )
        )
      )
  }),
  tool({
    name: "get_stage_followup",
    title: "Get a stage's followup",
    group: "discover",
    description:
      "Whether a stage has a followup sequence, and if so its intervals, instructions, activation, the stage entered afterwards and the most messages one run sends.",
    input: Schema.Struct({ stage_id: stageId }),
    run: ({ stage_id }) =>
      Effect.flatMap(backend, (b) => b.stageFollowup(stage_id)).pipe(
        Effect.map((f) =>
          output(
            { ...f },
            f.followup === null
              ? "This stage has no followup."
              : `Followup #${f.followup.id} (${f.followup.is_active ? "active" : "draft"}): ${plural(f.followup.intervals.length, "interval")}.`
          )
        )
      )
  }),
  tool({
    name: "list_model_pool",
    title: "List the model pool",
    group: "discover",
    description:
      "A pipeline's Smart Routing assignments: the router model and the simple, moderate and complex worker models, and whether routing is on.",
    input: Schema.Struct({ pipeline_id: pipelineId }),
    run: ({ pipeline_id }) =>
      Effect.flatMap(backend, (b) => b.modelPool(pipeline_id)).pipe(
        Effect.map((pool) =>
          output(
            { ...pool },
            `Smart Routing ${pool.is_model_routing_enabled ? "on" : "off"}: ${
              pool.tiers.map((t) => `${t.tier} = ${t.ai_model_id ?? "none"}`).join(", ")
            }.`
          )
        )
      )
  }),
  tool({
    name: "get_pipeline_options",
    title: "Pipeline options",
    group: "discover",
    description:
      "The catalogue for building or changing a pipeline: AI providers, the models of ai_provider_id (empty without it), agent types, languages, the dialects of language_code and the connected channels.",
    input: Schema.Struct({
      language_code: withDefault(Schema.String, "en", "Language whose dialects to list (default en)"),
      ai_provider_id: optional(AiProviderId, "Provider whose models to list; omit to get the providers first")
    }),
    run: (query) =>
      Effect.flatMap(backend, (b) => b.pipelineOptions(query)).pipe(
        Effect.map((o) =>
          output(
            { ...o },
            `${plural(o.ai_providers.length, "provider")}, ${plural(o.ai_models.length, "model")}, ${plural(o.agent_types.length, "agent type")}, ${
              plural(o.languages.length, "language")
            }, ${plural(o.channels.length, "channel")}.`
          )
        )
      )
  })
]

// -------------------------------------------------------------------------------------------------
// Build

const build: ReadonlyArray<Tool> = [
  tool({
    name: "start_pipeline_journey",
    title: "Start building a pipeline",
    group: "build",
    description:
      "Call first when the user wants a new AI agent. Returns a guided plan (pipeline settings, stages, variables, actions, followups, knowledge), every option to choose from, and the questions to ask the user. Call without ai_provider_id to get the providers, then again with the chosen one to get its models.",
    input: Schema.Struct({
      language_code: withDefault(Schema.String, "en", "The agent's language (default en)"),
      ai_provider_id: optional(AiProviderId, "The chosen AI provider; omit on the first call")
    }),
    run: (input) =>
      Effect.flatMap(backend, (b) => b.pipelineOptions(input)).pipe(
        Effect.map((options) => {
          const journey = pipelineJourney(input, options)
          return output(journey, `Plan ready (${journey.step}). Ask the user:\n${journey.questions.map((q) => `- ${q}`).join("\n")}`)
        })
      )
  }),
  tool({
    name: "create_pipeline",
    title: "Create a pipeline",
    group: "build",
    description:
      "Creates a pipeline (AI agent): agent type, model, language, persona, instructions and limits. Get the ids from get_pipeline_options or start_pipeline_journey. Add stages with create_stage afterwards. With is_model_routing_enabled, is_model_routing needs the four tiers.",
    input: Schema.Struct(Struct.omit(CreatePipeline.from.fields, "workspace_id", "reply_debounce_ms", ...handoffFieldNames)).pipe(Schema.filter(modelRoutingRule)),
    run: (input) =>
      Effect.flatMap(backend, (b) => b.createPipeline(input)).pipe(
        Effect.map(({ data: p, warning }) =>
          output({ pipeline: p, warning }, withWarning(`Pipeline #${p.id} ${p.name} created (${p.status}).`, warning))
        )
      )
  }),
  tool({
    name: "create_stage",
    title: "Create a stage",
    group: "build",
    description:
      "Adds a stage to a pipeline at position order (1 = first; later stages shift down). nature is neutral, won or lost. enter_condition tells the AI when to move an opportunity here; an opening message can greet on entry.",
    input: Schema.Struct({ pipeline_id: pipelineId, ...Struct.omit(CreateStage.from.fields, "handoff_instructions") }).pipe(Schema.filter(openingMessageRule)),
    run: ({ pipeline_id, ...input }) =>
      Effect.flatMap(backend, (b) => b.createStage(pipeline_id, input)).pipe(
        Effect.map((s) => output({ stage: s }, `Stage #${s.id} ${s.name} created at position ${s.order}.`))
      )
  }),
  tool({
    name: "create_variable",
    title: "Create a variable",
    group: "build",
    description:
      "Creates a variable that actions use as {{name}}. type fixed: a literal value; from_system: entity.field (opportunity.id, opportunity.contact_email, stage.name, message.message, ...); from_action: action_name.response.path or action_name.status; from_ai: a short extraction instruction (not usable by stage_started or on_any_message actions). Raw placeholders never go straight into an action.",
    input: Schema.Struct({ pipeline_id: pipelineId, ...CreateVariable.fields }),
    run: ({ pipeline_id, ...input }) =>
      Effect.flatMap(backend, (b) => b.createVariable(pipeline_id, input)).pipe(
        Effect.map((v) => output({ variable: v }, `Variable #${v.id} {{${v.name}}} created (${v.type}).`))
      )
  }),
  tool({
    name: "create_action",
    title: "Create an action",
    group: "build",
    description:
      "Creates an outbound HTTP webhook fired on a trigger: stage_started (an opportunity enters stage_id), on_any_message (every message), on_user_message (the AI decides per user message) or custom (the AI decides by instructions). URL, headers and payload may use {{variable_name}} of existing variables. Omit stage_id for a pipeline-level action.",
    input: Schema.Struct({ pipeline_id: pipelineId, ...CreateAction.fields }),
    run: ({ pipeline_id, ...input }) =>
      Effect.flatMap(backend, (b) => b.createAction(pipeline_id, input)).pipe(
        Effect.map((a) => output({ action: a }, `Action #${a.id} ${a.name} created: ${a.method} ${a.url} on ${a.fixed_trigger}.`))
      )
  }),
  tool({
    name: "create_followup",
    title: "Create a stage's followup",
    group: "build",
    description:
      "Creates the followup sequence of a stage (one per stage; meant for neutral stages): after each interval without an answer the agent writes a followup per instructions; once the intervals are exhausted the opportunity may move to after_followup_stage_id. Change it later with update_followup.",
    input: Schema.Struct({
      stage_id: stageId,
      is_active: required(Schema.Boolean, "true = running, false = draft"),
      intervals: required(FollowupIntervals, "1 to 100 waits in sequence order, each {interval_value 1-100, interval_unit}"),
      ...Struct.pick(SaveFollowup.fields, "instructions", "after_followup_stage_id", "assets")
    }),
    run: ({ stage_id, ...input }) =>
      Effect.gen(function*() {
        const b = yield* backend
        if ((yield* b.stageFollowup(stage_id)).has_followup) {
          return yield* Unprocessable.of([{ field: "stage_id", message: "already has a followup; change it with update_followup" }])
        }
        const saved = yield* b.saveFollowup(stage_id, input)
        return output({ ...saved }, `Followup created on stage #${stage_id} with ${plural(input.intervals.length, "interval")}.`)
      })
  }),
  tool({
    name: "create_knowledge_table",
    title: "Create a knowledge table",
    group: "build",
    description:
      "Creates a knowledge table and its typed columns (at least one is_searchable). Fill it with upsert_knowledge_points; agents reach it only once it is attached with update_pipeline attach_knowledge_table_ids.",
    input: Schema.Struct(Struct.omit(CreateKnowledgeTable.fields, "workspace_id")),
    run: (input) =>
      Effect.flatMap(backend, (b) => b.createKnowledgeTable(input)).pipe(
        Effect.map((t) => output({ knowledge_table: t }, `Knowledge table #${t.id} ${t.name} created with ${plural(t.columns.length, "column")}.`))
      )
  }),
  tool({
    name: "upsert_knowledge_points",
    title: "Upsert knowledge points",
    group: "build",
    scope: "knowledge:write",
    description:
      "Creates or updates rows of a knowledge table, matched by default_id: each point has default_id (string) plus a value per column. Each point whose searchable text changed costs one training credit. Needs scope knowledge:write.",
    input: Schema.Struct({ knowledge_table_id: knowledgeTableId, ...UpsertPoints.fields }),
    run: ({ knowledge_table_id, points }) =>
      Effect.flatMap(backend, (b) => b.upsertPoints(knowledge_table_id, points)).pipe(
        Effect.map((r) => output({ knowledge_table_id, ...r }, `${plural(r.upserted, "point")} upserted.`))
      )
  })
]

// -------------------------------------------------------------------------------------------------
// Update

const update: ReadonlyArray<Tool> = [
  tool({
    name: "update_pipeline",
    title: "Update a pipeline",
    group: "update",
    description:
      "Changes a pipeline's settings; only the fields sent change. Also attaches knowledge tables (attach_knowledge_table_ids, additive) or detaches them. Set status active to let the agent run.",
    input: Schema.Struct({
      pipeline_id: pipelineId,
      ...Struct.pick(
        UpdatePipeline.fields,
        "name",
        "description",
        "persona",
        "instructions",
        "status",
        "is_archived",
        "ai_model_id",
        "language_id",
        "dialect_id",
        "model_temperature",
        "rag_mode",
        "no_of_relevant_points",
        "agent_memory_window",
        "context_message_count",
        "max_conversation_messages",
        "max_conversation_cost",
        "followup_limit",
        "is_unknown_contacts_enabled",
        "is_model_routing_enabled",
        "attach_knowledge_table_ids",
        "detach_knowledge_table_ids"
      )
    }),
    run: ({ pipeline_id, ...input }) =>
      Effect.flatMap(backend, (b) => b.updatePipeline(pipeline_id, input)).pipe(
        Effect.map(({ data: p, warning }) =>
          output({ pipeline: p, warning }, withWarning(`Pipeline #${p.id} ${p.name} updated (${p.status}).`, warning))
        )
      )
  }),
  tool({
    name: "update_model_pool",
    title: "Update the model pool",
    group: "update",
    description:
      "Sets the four Smart Routing tiers of a pipeline: router (reads each request) and the simple, moderate and complex worker models, each once with an ai_model_id (from get_pipeline_options). Optionally turns routing on or off.",
    input: Schema.Struct({ pipeline_id: pipelineId, ...UpdateModelPool.fields }),
    run: ({ pipeline_id, ...input }) =>
      Effect.flatMap(backend, (b) => b.updateModelPool(pipeline_id, input)).pipe(
        Effect.map((pool) => output({ ...pool }, `Model pool of pipeline #${pipeline_id} set; Smart Routing ${pool.is_model_routing_enabled ? "on" : "off"}.`))
      )
  }),
  tool({
    name: "update_stage",
    title: "Update a stage",
    group: "update",
    description:
      "Changes a stage: name, nature, instructions, AI persona, entry condition, order (siblings re-number) or opening message. Only the fields sent change.",
    input: Schema.Struct({ stage_id: stageId, ...Struct.omit(UpdateStage.fields, "handoff_instructions") }),
    run: ({ stage_id, ...input }) =>
      Effect.flatMap(backend, (b) => b.updateStage(stage_id, input)).pipe(
        Effect.map((s) => output({ stage: s }, `Stage #${s.id} ${s.name} updated (position ${s.order}).`))
      )
  }),
  tool({
    name: "update_action",
    title: "Update an action",
    group: "update",
    description:
      "Changes an action's request (method, url, headers, payload), activation, limits or trigger. Only the fields sent change. A stage_started or on_any_message trigger is fixed after creation; on_user_message and custom may switch between each other.",
    input: Schema.Struct({ action_id: required(ActionId, "The action's id (from list_actions)"), ...UpdateAction.fields }),
    run: ({ action_id, ...input }) =>
      Effect.flatMap(backend, (b) => b.updateAction(action_id, input)).pipe(
        Effect.map((a) => output({ action: a }, `Action #${a.id} ${a.name} updated: ${a.method} ${a.url} on ${a.fixed_trigger}.`))
      )
  }),
  tool({
    name: "update_variable",
    title: "Update a variable",
    group: "update",
    description: "Changes a variable's value, type, data type, description or requirement. Only the fields sent change; a name an action uses cannot change.",
    input: Schema.Struct({ variable_id: required(VariableId, "The variable's id (from list_variables)"), ...UpdateVariable.fields }),
    run: ({ variable_id, ...input }) =>
      Effect.flatMap(backend, (b) => b.updateVariable(variable_id, input)).pipe(
        Effect.map((v) => output({ variable: v }, `Variable #${v.id} {{${v.name}}} updated.`))
      )
  }),
  tool({
    name: "update_opportunities",
    title: "Update opportunities",
    group: "update",
    scope: "opportunities:write",
    description:
      "Changes several opportunities at once: status (active, won, lost), stage (a stage of the same pipeline), tags to add by name, tags to remove by id, notes. Each id is updated on its own; the answer lists the updated ones and the ones that failed. Needs scope opportunities:write.",
    input: Schema.Struct({
      ids: required(
        Schema.Array(OpportunityId).pipe(Schema.minItems(1), Schema.maxItems(100)),
        "Opportunity ids to change (1 to 100)"
      ),
      ...Struct.pick(UpdateOpportunity.fields, "status", "stage_id", "notes"),
      tags: optional(UpdateOpportunity.fields.tags.from, "Tag names to add"),
      deleted_tags: optional(UpdateOpportunity.fields.deleted_tags.from, "Tag ids to remove")
    }),
    run: ({ ids, ...input }) =>
      Effect.gen(function*() {
        const b = yield* backend
        const outcomes = yield* Effect.forEach(ids, (id) => Effect.either(b.updateOpportunity(id, input)))
        const updated = outcomes.flatMap((o) => (o._tag === "Right" ? [o.right] : []))
        const failed = outcomes.flatMap((o, i) =>
          o._tag === "Left" ? [{ id: ids[i]!, message: o.left.message, ...(o.left._tag === "Unprocessable" ? { validation: o.left.validation } : {}) }] : []
        )
        // nothing changed: the one error as it is, or every id's error
        const only = outcomes.length === 1 ? outcomes[0] : undefined
        if (only?._tag === "Left") return yield* only.left
        if (updated.length === 0) return yield* Unprocessable.of(failed.map((f) => ({ field: `ids.${ids.indexOf(f.id)}`, message: f.message })))
        return output(
          { updated, failed },
          `${plural(updated.length, "opportunity", "opportunities")} updated${failed.length > 0 ? `, ${failed.length} failed` : ""}.`
        )
      })
  }),
  tool({
    name: "update_followup",
    title: "Update a stage's followup",
    group: "update",
    description:
      "Changes a stage's existing followup: intervals (replaced as a whole), instructions, assets, the stage entered afterwards, or activation (is_active). Only the fields sent change. Create one first with create_followup.",
    input: Schema.Struct({ stage_id: stageId, ...SaveFollowup.fields }),
    run: ({ stage_id, ...input }) =>
      Effect.gen(function*() {
        const b = yield* backend
        if (!(yield* b.stageFollowup(stage_id)).has_followup) {
          return yield* new NotFound({ message: "This stage has no followup; create one with create_followup." })
        }
        const saved = yield* b.saveFollowup(stage_id, input)
        return output({ ...saved }, `Followup of stage #${stage_id} updated (${saved.followup?.is_active ? "active" : "draft"}).`)
      })
  }),
  tool({
    name: "delete_knowledge_points",
    title: "Delete knowledge points",
    group: "update",
    scope: "knowledge:write",
    destructive: true,
    description: "Removes rows of a knowledge table by their default_id values. Needs scope knowledge:write.",
    input: Schema.Struct({
      knowledge_table_id: knowledgeTableId,
      default_ids: required(DeletePoints.fields.ids, "default_id values of the points to delete (1 to 1000)")
    }),
    run: ({ default_ids, knowledge_table_id }) =>
      Effect.flatMap(backend, (b) => b.deletePoints(knowledge_table_id, default_ids)).pipe(
        Effect.map((r) => output({ knowledge_table_id, ...r }, `${plural(r.deleted, "point")} deleted.`))
      )
  })
]

/** Every tool: SPEC.md 4.5's 33 in its order, then the conversation tools of issue 19. */
export const Tools: ReadonlyArray<Tool> = [...analytics, ...discover, ...build, ...update, ...conversationTools]

export const toolByName: ReadonlyMap<string, Tool> = new Map(Tools.map((t) => [t.name, t]))
