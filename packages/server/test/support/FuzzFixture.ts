/**
 * What the fuzz suite aims at: two workspaces with a pipeline of each kind of resource, and a known-good
 * request for every operation and MCP tool (the cases spoil one thing of it). Destructive requests aim
 * at spare rows so the rest of the run keeps its targets.
 */
import { ReceiverAnswer } from "@parley/domain"
import { Effect } from "effect"
import { bodyAs, ok } from "./Contract.js"
import { createStage, freshPhone, fullOpportunity, funnel, linkWebChannel, post, put } from "./Opportunities.js"
import { fetchJson, giveCredits, seedUser, TestServer } from "./TestServer.js"
import { basic } from "./WebChat.js"

export interface Party {
  readonly bearer: string
  readonly basic: string
  readonly widgetClientId: string
  readonly widgetSession: string
  readonly pipelineId: number
  readonly stageId: number
  readonly wonStageId: number
  readonly spareStageId: number
  readonly channelId: number
  readonly spareChannelId: number
  readonly conversationId: number
  readonly opportunityId: number
  readonly contactId: number
  readonly tagId: number
  readonly tableId: number
  readonly variableId: number
  readonly spareVariableId: number
  readonly actionId: number
  readonly spareActionId: number
  readonly messageId: string
  /** Every path parameter of the API, by name, pointing at this party's rows. */
  readonly pathValues: Record<string, string>
}

export interface Fixture {
  readonly a: Party
  readonly b: Party
}

const ORIGIN = "https://shop.example.com"

const party = (label: string) =>
  Effect.gen(function*() {
    const { baseUrl, receiverUrl } = yield* TestServer
    const user = yield* seedUser()
    yield* giveCredits(user.workspace_id, { credits: 100, is_subscription_active: true })
    const f = yield* funnel(user, `Fuzz ${label}`)
    const spareStage = yield* createStage(user, f.pipeline.id, "Spare stage", 9)
    const channel = yield* linkWebChannel(user, f.pipeline.id)
    const spareChannel = ok(yield* post(user, "/api/user/channels", { kind: "web", name: "Spare" }), "channels.create")
    const widget = ok(
      yield* post(user, "/api/user/channels", {
        kind: "widget",
        pipeline_id: f.pipeline.id,
        allowed_origins: [ORIGIN]
      }),
      "channels.create"
    )
    const channelAuth = basic(channel)
    const opportunity = ok(
      yield* post(user, "/api/user/opportunities", {
        pipeline_id: f.pipeline.id,
        tags: ["fuzz"],
        contact: { name: `Fuzz ${label}`, phone: freshPhone() }
      }),
      "opportunities.create"
    )
    const session = yield* fetchJson(`${baseUrl}/api/user/web-chat/initiate`, {
      method: "POST",
      headers: { authorization: channelAuth, "content-type": "application/json" },
      body: JSON.stringify({ contact_id: `fuzz-${label}` })
    })
    const inbound = yield* fetchJson(`${receiverUrl}/web-chat/message`, {
      method: "POST",
      headers: { authorization: channelAuth, "content-type": "application/json" },
      body: JSON.stringify({ contact_id: `fuzz-${label}`, message: "Hello, what does the Growth plan cost?" })
    })
    const widgetSession = yield* fetchJson(`${baseUrl}/api/widget/session`, {
      method: "POST",
      headers: { origin: ORIGIN, "content-type": "application/json" },
      body: JSON.stringify({ client_id: widget.client_id })
    })
    const table = ok(
      yield* post(user, "/api/user/knowledge-tables", {
        name: `Fuzz table ${label}`,
        columns: [
          { name: "title", data_type: "string", order: 1, is_searchable: true },
          { name: "price", data_type: "number", order: 2, is_filterable: true }
        ]
      }),
      "knowledge.create"
    )
    yield* put(user, `/api/user/knowledge-tables/${table.id}/points`, {
      points: [{ default_id: "p1", title: "Growth plan", price: 49 }]
    })
    const variable = (name: string) =>
      Effect.map(
        post(user, `/api/user/pipelines/${f.pipeline.id}/variables`, {
          name,
          value: "abc",
          type: "fixed",
          is_required: false
        }),
        (r) => ok(r, "automation.createVariable")
      )
    const action = (name: string) =>
      Effect.map(
        post(user, `/api/user/pipelines/${f.pipeline.id}/actions`, {
          name,
          method: "POST",
          url: "https://crm.example.com/hook",
          is_active: false,
          fixed_trigger: "stage_started",
          stage_id: f.qualified.id
        }),
        (r) => ok(r, "automation.createAction")
      )
    const crmKey = yield* variable("crm_key")
    const spareVariable = yield* variable("spare_key")
    const notify = yield* action("Notify CRM")
    const spareAction = yield* action("Spare action")
    ok(
      yield* put(user, `/api/user/stages/${f.qualified.id}/followup`, {
        is_active: false,
        intervals: [{ interval_value: 1, interval_unit: "day" }]
      }),
      "followups.save"
    )
    ok(
      yield* put(user, `/api/user/stages/${spareStage.id}/followup`, {
        is_active: false,
        intervals: [{ interval_value: 1, interval_unit: "day" }]
      }),
      "followups.save"
    )

    const p = {
      bearer: `Bearer ${user.token}`,
      basic: channelAuth,
      widgetClientId: widget.client_id!,
      widgetSession: ok(widgetSession, "widget.session").session,
      pipelineId: f.pipeline.id,
      stageId: f.inbound.id,
      wonStageId: f.won.id,
      spareStageId: spareStage.id,
      channelId: channel.id,
      spareChannelId: spareChannel.id,
      conversationId: ok(session, "webChat.initiate").conversation_id,
      opportunityId: opportunity.id,
      contactId: opportunity.contact_id,
      tagId: fullOpportunity(opportunity).tags[0]!.id,
      tableId: table.id,
      variableId: crmKey.id,
      spareVariableId: spareVariable.id,
      actionId: notify.id,
      spareActionId: spareAction.id,
      messageId: bodyAs(inbound, ReceiverAnswer).data!.message_id
    }
    const pathValues: Record<string, string> = {
      pipeline: String(p.pipelineId),
      stage: String(p.stageId),
      channel: String(p.channelId),
      conversation: String(p.conversationId),
      id: String(p.conversationId),
      identifier: String(p.opportunityId),
      knowledgeTable: String(p.tableId),
      variable: String(p.variableId),
      action: String(p.actionId),
      message: p.messageId
    }
    return { ...p, pathValues } satisfies Party
  })

export const seedFixture = Effect.gen(function*() {
  const a = yield* party("A")
  const b = yield* party("B")
  return { a, b } satisfies Fixture
})

export interface BaseRequest {
  readonly path: Record<string, string>
  readonly query: Record<string, string>
  /** A function where each request needs fresh values (unique names). */
  readonly body: unknown
  readonly authorization: string | undefined
  readonly headers?: Record<string, string>
}

let unique = 0
const fresh = (prefix: string) => `${prefix} ${++unique}-${Date.now() % 100_000}`

/** A known-good request per `METHOD /path` of the OpenAPI document. */
export const baseRequests = ({ a }: Fixture): Record<string, BaseRequest> => {
  const r = (
    body: unknown,
    options: {
      path?: Record<string, string>
      query?: Record<string, string>
      authorization?: string
      headers?: Record<string, string>
    } = {}
  ): BaseRequest => ({
    path: { ...a.pathValues, ...options.path },
    query: options.query ?? {},
    body,
    authorization: options.authorization ?? a.bearer,
    ...(options.headers ? { headers: options.headers } : {})
  })
  const pipeline = String(a.pipelineId)
  return {
    "GET /api/user/me": r(undefined),
    "GET /api/user/pipeline-options": r(undefined, { query: { language_code: "en", ai_provider_id: "1" } }),
    "GET /api/user/pipelines": r(undefined),
    "POST /api/user/pipelines": r(() => ({
      name: fresh("Pipeline"),
      agent_type_id: 1,
      ai_model_id: 1,
      language_id: 1,
      description: "A pipeline",
      rag_mode: "hybrid",
      model_temperature: 0.5,
      max_conversation_messages: 50,
      max_conversation_cost: 5,
      followup_limit: 3
    })),
    "GET /api/user/pipelines/{pipeline}": r(undefined),
    "PUT /api/user/pipelines/{pipeline}": r(() => ({
      name: fresh("Renamed"),
      instructions: "Be kind",
      max_conversation_messages: 20,
      attach_knowledge_table_ids: [a.tableId]
    })),
    "GET /api/user/pipelines/{pipeline}/stages": r(undefined),
    "POST /api/user/pipelines/{pipeline}/stages": r(() => ({
      name: fresh("Stage"),
      nature: "neutral",
      order: 5,
      enter_condition: "The contact asks about pricing twice",
      is_opening_message: false
    })),
    "PUT /api/user/stages/{stage}": r({ instructions: "Ask for the budget", order: 1 }),
    "DELETE /api/user/stages/{stage}": r(undefined, { path: { stage: String(a.spareStageId) } }),
    "GET /api/user/channels": r(undefined),
    "POST /api/user/channels": r(() => ({
      kind: "web",
      name: fresh("Channel"),
      pipeline_id: a.pipelineId,
      callback_url: "https://hooks.example.com/parley",
      allowed_origins: ["https://a.example.com"]
    })),
    "GET /api/user/channels/{channel}": r(undefined),
    "PUT /api/user/channels/{channel}": r({ name: "Renamed", callback_url: "https://hooks.example.com/v2" }, {
      path: { channel: String(a.spareChannelId) }
    }),
    "POST /api/user/channels/{channel}/rotate": r(undefined, { path: { channel: String(a.spareChannelId) } }),
    "GET /api/user/channels/{channel}/deliveries": r(undefined, { query: { limit: "10" } }),
    "POST /api/user/channels/{channel}/deliveries/{message}/replay": r(undefined),
    "POST /api/user/opportunities": r(() => ({
      pipeline_id: a.pipelineId,
      stage_id: a.stageId,
      name: "Deal",
      notes: "Notes",
      status: "active",
      context: { plan: "growth" },
      tags: ["vip"],
      contact: {
        name: "Fuzz Contact",
        email: `${fresh("c").replace(/\s/g, "")}@example.com`,
        phone: freshPhone(),
        priority: "high"
      }
    })),
    "GET /api/user/opportunities": r(undefined, {
      query: { pipeline_id: pipeline, status: "active", q: "Fuzz", page: "1", per_page: "10" }
    }),
    "GET /api/user/opportunities/{identifier}": r(undefined, { query: { pipeline_id: pipeline } }),
    "PUT /api/user/opportunities/{identifier}": r({
      name: "Updated",
      notes: "More notes",
      status: "active",
      context: { step: 2 },
      tags: ["hot"],
      deleted_tags: [a.tagId],
      stage_id: a.stageId,
      contact: { name: "Renamed", email: "renamed@example.com", phone: "4915112345678", priority: "low" }
    }),
    "GET /api/user/contacts": r(undefined, { query: { pipeline_id: pipeline, q: "Fuzz", per_page: "10" } }),
    "GET /api/user/contacts/{identifier}/opportunities": r(undefined, {
      path: { identifier: String(a.contactId) },
      query: { pipeline_id: pipeline }
    }),
    "PUT /api/user/conversations/{id}": r({ status: "active", notes: ["A note"] }),
    "POST /api/user/web-chat/initiate": r(
      () => ({
        contact_id: fresh("visitor").replace(/\s/g, "-"),
        name: "Visitor",
        email: "visitor@example.com",
        phone: "4915198765432"
      }),
      {
        authorization: a.basic
      }
    ),
    "GET /api/user/messages/webchat": r(undefined, {
      query: { conversation_id: String(a.conversationId), per_page: "5", page: "1" },
      authorization: a.basic
    }),
    "POST /api/widget/session": r({ client_id: a.widgetClientId }, {
      authorization: undefined as never,
      headers: { origin: ORIGIN }
    }),
    "GET /api/widget/messages": r(undefined, {
      authorization: `Bearer ${a.widgetSession}`,
      headers: { origin: ORIGIN }
    }),
    "POST /api/user/{conversation}/messages": r({ message: "Hello from an operator" }),
    "GET /api/user/pipelines/{pipeline}/model-pool": r(undefined),
    "PUT /api/user/pipelines/{pipeline}/model-pool": r({
      is_model_routing_enabled: false,
      tiers: ["router", "simple", "moderate", "complex"].map((tier) => ({
        tier,
        ai_model_id: 1,
        instructions: "Route well"
      }))
    }),
    "GET /api/user/analytics/summary": r(undefined, { query: { include_test: "true" } }),
    "GET /api/user/analytics/ai-performance": r(undefined, { query: { include_test: "false" } }),
    "GET /api/user/analytics/messaging-stats": r(undefined, {
      query: { start_date: "2026-01-01", end_date: "2026-12-31", pipeline_id: pipeline, provider: "web" }
    }),
    "GET /api/user/knowledge-tables": r(undefined),
    "POST /api/user/knowledge-tables": r(() => ({
      name: fresh("Table"),
      description: "Plans",
      columns: [{ name: "title", data_type: "string", order: 1, is_searchable: true }, {
        name: "price",
        data_type: "number",
        order: 2
      }]
    })),
    "GET /api/user/knowledge-tables/{knowledgeTable}/columns": r(undefined),
    "GET /api/user/knowledge-tables/{knowledgeTable}/points": r(undefined, { query: { per_page: "10" } }),
    "PUT /api/user/knowledge-tables/{knowledgeTable}/points": r({
      points: [{ default_id: "p2", title: "Starter plan", price: 19 }]
    }),
    "DELETE /api/user/knowledge-tables/{knowledgeTable}/points": r({ ids: ["no-such-point"] }),
    "POST /api/user/knowledge-tables/{knowledgeTable}/search": r({
      query: "growth plan price",
      limit: 5,
      use_hybrid: true,
      filters: { price: 49 }
    }),
    "GET /api/user/stages/{stage}/followup": r(undefined),
    "PUT /api/user/stages/{stage}/followup": r({
      is_active: false,
      intervals: [{ interval_value: 2, interval_unit: "hour" }],
      instructions: "Nudge kindly",
      after_followup_stage_id: a.wonStageId
    }),
    "DELETE /api/user/stages/{stage}/followup": r(undefined, { path: { stage: String(a.spareStageId) } }),
    "GET /api/user/pipelines/{pipeline}/variables": r(undefined, { query: { q: "crm" } }),
    "POST /api/user/pipelines/{pipeline}/variables": r(() => ({
      name: fresh("var").replace(/\W/g, "_"),
      value: "abc",
      type: "fixed",
      is_required: false,
      data_type: "string"
    })),
    "PUT /api/user/variables/{variable}": r({ value: "def", description: "A key" }),
    "DELETE /api/user/variables/{variable}": r(undefined, { path: { variable: String(a.spareVariableId) } }),
    "GET /api/user/pipelines/{pipeline}/actions": r(undefined, { query: { stage_id: String(a.stageId) } }),
    "POST /api/user/pipelines/{pipeline}/actions": r(() => ({
      name: fresh("Action"),
      method: "POST",
      url: "https://crm.example.com/hook/{{crm_key}}",
      is_active: false,
      fixed_trigger: "stage_started",
      stage_id: a.stageId,
      headers: { "X-Key": "{{crm_key}}" },
      payload: { source: "parley" },
      max_fires: 3,
      retries: 2,
      order: 1
    })),
    "PUT /api/user/actions/{action}": r({ url: "https://crm.example.com/v2", retries: 3 }),
    "DELETE /api/user/actions/{action}": r(undefined, { path: { action: String(a.spareActionId) } }),
    "GET /api/user/pipelines/{pipeline}/action-results": r(undefined, {
      query: { limit: "10", offset: "0", opportunity_id: String(a.opportunityId) }
    })
  }
}

const intervals = [{ interval_value: 1, interval_unit: "day" }]

/** A known-good `arguments` object per MCP tool. */
export const baseArguments = ({ a }: Fixture): Record<string, () => Record<string, unknown>> => ({
  get_messaging_stats: () => ({
    start_date: "2026-01-01",
    end_date: "2026-12-31",
    pipeline_id: a.pipelineId,
    provider: "web"
  }),
  list_pipeline_stages: () => ({ pipeline_id: a.pipelineId }),
  list_actions: () => ({ pipeline_id: a.pipelineId, stage_id: a.stageId }),
  list_action_results: () => ({ pipeline_id: a.pipelineId, opportunity_id: a.opportunityId, limit: 10, offset: 0 }),
  list_variables: () => ({ pipeline_id: a.pipelineId, q: "crm" }),
  list_contacts: () => ({ pipeline_id: a.pipelineId, status: "active", q: "Fuzz", page: 1, per_page: 10 }),
  list_opportunities: () => ({ pipeline_id: a.pipelineId, stage_id: a.stageId, tags: ["fuzz"], page: 1, per_page: 10 }),
  list_messages: () => ({ pipeline_id: a.pipelineId, role: "user", limit: 10 }),
  search_knowledge_table: () => ({ knowledge_table_id: a.tableId, query: "growth", limit: 5, use_hybrid: true }),
  list_knowledge_points: () => ({ knowledge_table_id: a.tableId, per_page: 10 }),
  get_stage_followup: () => ({ stage_id: a.stageId }),
  list_model_pool: () => ({ pipeline_id: a.pipelineId }),
  get_pipeline_options: () => ({ language_code: "en", ai_provider_id: 1 }),
  start_pipeline_journey: () => ({ language_code: "en" }),
  create_pipeline: () => ({
    name: fresh("MCP pipeline"),
    agent_type_id: 1,
    ai_model_id: 1,
    language_id: 1,
    followup_limit: 2
  }),
  create_stage: () => ({ pipeline_id: a.pipelineId, name: fresh("MCP stage"), nature: "neutral", order: 3 }),
  create_variable: () => ({
    pipeline_id: a.pipelineId,
    name: fresh("mcp_var").replace(/\W/g, "_"),
    value: "x",
    type: "fixed",
    is_required: false
  }),
  create_action: () => ({
    pipeline_id: a.pipelineId,
    name: fresh("MCP action"),
    method: "POST",
    url: "https://crm.example.com/a",
    is_active: false,
    fixed_trigger: "custom",
    headers: { a: "b" },
    max_fires: 2
  }),
  create_followup: () => ({ stage_id: a.wonStageId, is_active: false, intervals }),
  create_knowledge_table: () => ({
    name: fresh("MCP table"),
    columns: [{ name: "title", data_type: "string", order: 1, is_searchable: true }]
  }),
  upsert_knowledge_points: () => ({
    knowledge_table_id: a.tableId,
    points: [{ default_id: "m1", title: "Pro plan", price: 99 }]
  }),
  update_pipeline: () => ({ pipeline_id: a.pipelineId, description: "Updated", followup_limit: 4 }),
  update_model_pool: () => ({
    pipeline_id: a.pipelineId,
    tiers: ["router", "simple", "moderate", "complex"].map((tier) => ({ tier, ai_model_id: 1 }))
  }),
  update_stage: () => ({ stage_id: a.stageId, instructions: "Be brief" }),
  update_action: () => ({ action_id: a.actionId, url: "https://crm.example.com/b", retries: 2 }),
  update_variable: () => ({ variable_id: a.variableId, value: "ghi" }),
  update_opportunities: () => ({ ids: [a.opportunityId], status: "active", notes: "Bulk", tags: ["bulk"] }),
  update_followup: () => ({ stage_id: a.stageId, is_active: false, intervals }),
  delete_knowledge_points: () => ({ knowledge_table_id: a.tableId, default_ids: ["no-such-point"] })
})
