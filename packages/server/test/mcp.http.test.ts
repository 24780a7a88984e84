/**
 * The MCP server (SPEC.md 4.5, 5.3, 9) through the SDK's own client over Streamable HTTP: the catalogue,
 * every tool against real data (a pipeline built purely through MCP, then read back over REST), scope
 * inheritance, bearer authentication, argument validation, the Origin allowlist and the HTTP methods.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { bodyAs } from "./support/Contract.js"
import {
  jsonSchema,
  mcpSession,
  propertyOf,
  RpcError,
  RpcResult,
  textOf,
  type ToolName,
  validationOf
} from "./support/McpClient.js"
import {
  createOpportunity,
  createPipeline,
  createStage,
  get,
  linkWebChannel,
  ok,
  post,
  sqlRows
} from "./support/Opportunities.js"
import { fetchJson, giveCredits, seedUser, TestServer, TestServerLive, tokenFor } from "./support/TestServer.js"
import { basic, webCredentials } from "./support/WebChat.js"
import { eventually, webhookReceiver } from "./support/WebhookReceiver.js"

const TOOL_NAMES = [
  "get_account_summary",
  "get_ai_performance",
  "get_messaging_stats",
  "list_pipelines",
  "list_pipeline_stages",
  "list_actions",
  "list_action_results",
  "list_variables",
  "list_contacts",
  "list_opportunities",
  "list_messages",
  "list_knowledge_tables",
  "search_knowledge_table",
  "list_knowledge_points",
  "get_stage_followup",
  "list_model_pool",
  "get_pipeline_options",
  "start_pipeline_journey",
  "create_pipeline",
  "create_stage",
  "create_variable",
  "create_action",
  "create_followup",
  "create_knowledge_table",
  "upsert_knowledge_points",
  "update_pipeline",
  "update_model_pool",
  "update_stage",
  "update_action",
  "update_variable",
  "update_opportunities",
  "update_followup",
  "delete_knowledge_points",
  // SPEC.md 4.5's 33 above stay as they are; issue 19's conversation tools follow them
  "list_conversations",
  "get_conversation",
  "handoff_conversation",
  // issue 23: one pipeline whole
  "get_pipeline",
  // issue 24: evals
  "run_evals",
  "get_eval_run",
  "publish_pipeline",
  "list_pipeline_versions",
  "diff_pipeline_versions",
  // issue 41: knowledge sources
  "add_knowledge_source",
  "list_knowledge_sources",
  "sync_knowledge_source"
]

const connect = mcpSession

/** A JSON-RPC POST to /mcp by hand, for what the client hides (status codes, headers). */
const rawMcp = (init: { method?: string; token?: string; body?: unknown; headers?: Record<string, string> }) =>
  Effect.flatMap(TestServer, ({ baseUrl }) =>
    fetchJson(`${baseUrl}/mcp`, {
      method: init.method ?? "POST",
      headers: {
        accept: "application/json, text/event-stream",
        "content-type": "application/json",
        ...(init.token !== undefined ? { authorization: `Bearer ${init.token}` } : {}),
        ...init.headers
      },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {})
    }))

const initialize = (protocolVersion: string) => ({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion, capabilities: {}, clientInfo: { name: "raw", version: "1" } }
})

/** A real HTTP target for the action: records each request. */
const target = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ url: string; hits: Array<string>; server: Http.Server }>((resolve) => {
      const hits: Array<string> = []
      const server = Http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (c: Buffer) => chunks.push(c))
        req.on("end", () => {
          hits.push(Buffer.concat(chunks).toString("utf8"))
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ crm_id: 42 }))
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, server }))
    })
  ),
  ({ server }) =>
    Effect.promise(() =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      })
    )
)

/** Any other keys of a JSON object, kept as they are. */
const Rest = Schema.Record({ key: Schema.String, value: Schema.Unknown })
/** tools/list's answer, every key kept (its size is measured). */
const ToolsListed = RpcResult(
  Schema.Struct({ tools: Schema.Array(Schema.Struct({ name: Schema.String }, Rest)) }, Rest)
)
const Initialized = RpcResult(Schema.Struct({ protocolVersion: Schema.String }))

layer(
  TestServerLive({ OUTBOUND_ALLOW_PRIVATE: "true", ENGINE_SWEEP_INTERVAL_MS: "1000", WEBHOOK_TIMEOUT_MS: "2000" }),
  { excludeTestServices: true }
)("MCP server over Streamable HTTP", (it) => {
  it.scoped("tools/list returns the 33 tools of SPEC.md 4.5, the 3 conversation tools, get_pipeline, the eval and version tools, each with input and output schemas", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const mcp = yield* connect(owner.token)
      expect(mcp.client.getServerVersion()?.name).toBe("parley")
      const { tools } = yield* Effect.promise(() => mcp.client.listTools())
      expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES)
      for (const t of tools) {
        expect(t.inputSchema.type).toBe("object")
        expect(t.outputSchema?.type).toBe("object")
        expect(t.description!.length).toBeGreaterThan(40)
        expect(t.title).toEqual(expect.any(String))
      }
      const byName = new Map(tools.map((t) => [t.name, jsonSchema(t.inputSchema)]))
      expect(propertyOf(byName.get("list_action_results"), "limit")).toMatchObject({
        type: "integer",
        minimum: 1,
        maximum: 100,
        default: 50
      })
      expect(propertyOf(byName.get("list_messages"), "limit")).toMatchObject({ maximum: 500, default: 100 })
      expect(byName.get("search_knowledge_table")?.required).toEqual(["knowledge_table_id", "query"])
      expect(byName.get("create_stage")?.required).toEqual(["pipeline_id", "name", "nature", "order"])
      expect(propertyOf(byName.get("create_variable"), "type").enum).toEqual([
        "fixed",
        "from_system",
        "from_action",
        "from_ai"
      ])
      expect(byName.get("get_account_summary")).toEqual({ type: "object", properties: {}, additionalProperties: false })

      // what the catalogue costs a model's context, read into every conversation (issue 23; docs/mcp.md, "What it
      // costs a model's context"): per tool on average, so tools can be added but none may grow the schemas back
      const listed = yield* rawMcp({ token: owner.token, body: { jsonrpc: "2.0", id: 2, method: "tools/list" } })
      const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), "utf8")
      const catalogue = bodyAs(listed, ToolsListed).result
      expect(catalogue.tools.length).toBe(tools.length)
      expect(bytes(catalogue)).toBeLessThanOrEqual(1_350 * tools.length)
      for (const t of catalogue.tools) expect(bytes(t), t.name).toBeLessThanOrEqual(5_000)
    }))

  it.effect("initialize negotiates 2025-03-26 and accepts 2025-06-18 clients, answering JSON", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const current = yield* rawMcp({ token: owner.token, body: initialize("2025-06-18") })
      expect(current.status).toBe(200)
      expect(current.headers.get("content-type")).toContain("application/json")
      expect(bodyAs(current, Initialized).result.protocolVersion).toBe("2025-06-18")
      const newer = yield* rawMcp({ token: owner.token, body: initialize("2099-01-01") })
      expect(bodyAs(newer, Initialized).result.protocolVersion).toBe("2025-11-25")
      const ping = yield* rawMcp({
        token: owner.token,
        headers: { "mcp-protocol-version": "2025-03-26" },
        body: { jsonrpc: "2.0", id: 7, method: "ping" }
      })
      expect(ping.body).toEqual({ jsonrpc: "2.0", id: 7, result: {} })
    }))

  it.scoped("builds a pipeline purely through MCP, reads it back over REST, and calls every tool on real data", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* sqlRows`update workspaces set training_credits = 100 where id = ${owner.workspace_id}`
      yield* giveCredits(owner.workspace_id)
      const crm = yield* target
      const mcp = yield* connect(owner.token)
      const called = new Set<string>()
      const use = <N extends ToolName>(name: N, args: Record<string, unknown> = {}) => {
        called.add(name)
        return mcp.ok(name, args)
      }

      // options and the guided plan
      const first = yield* use("start_pipeline_journey", {})
      expect(first.step).toBe("choose_provider")
      expect(first.options.ai_providers.length).toBeGreaterThan(0)
      expect(first.options.ai_models).toEqual([])
      expect(first.questions.length).toBeGreaterThan(5)
      const provider = first.options.ai_providers[0]!
      const journey = yield* use("start_pipeline_journey", { ai_provider_id: provider.id })
      expect(journey.step).toBe("configure_pipeline")
      expect(journey.plan.stages.map((s) => s.nature)).toEqual(["neutral", "neutral", "won", "lost"])
      const options = yield* use("get_pipeline_options", { ai_provider_id: provider.id, language_code: "en" })
      expect(options.ai_models.length).toBeGreaterThan(0)
      expect(options.ai_models.every((m) => m.ai_provider_id === provider.id)).toBe(true)
      const model = options.ai_models[0]!
      const english = options.languages.find((l) => l.code === "en")!

      // build
      const { pipeline } = yield* use("create_pipeline", {
        name: "MCP sales",
        agent_type_id: options.agent_types[0]!.id,
        ai_model_id: model.id,
        language_id: english.id,
        persona: "Friendly and brief",
        model_temperature: 0.5
      })
      expect(pipeline).toMatchObject({
        name: "MCP sales",
        persona: "Friendly and brief",
        model_temperature: 0.5,
        stages: []
      })
      const lead =
        (yield* use("create_stage", { pipeline_id: pipeline.id, name: "New lead", nature: "neutral", order: 1 })).stage
      const won = (yield* use("create_stage", {
        pipeline_id: pipeline.id,
        name: "Won",
        nature: "won",
        order: 2,
        enter_condition: "The contact agreed to buy the product."
      })).stage
      const lost =
        (yield* use("create_stage", { pipeline_id: pipeline.id, name: "Lost", nature: "lost", order: 3 })).stage
      const email = (yield* use("create_variable", {
        pipeline_id: pipeline.id,
        name: "contact_email",
        value: "opportunity.contact_email",
        type: "from_system",
        is_required: false
      })).variable
      const crmAction = (yield* use("create_action", {
        pipeline_id: pipeline.id,
        stage_id: won.id,
        name: "notify_crm",
        method: "POST",
        url: `${crm.url}/won`,
        is_active: false,
        fixed_trigger: "stage_started",
        payload: { email: "{{contact_email}}" }
      })).action
      expect(crmAction).toMatchObject({ stage_id: won.id, fixed_trigger: "stage_started", is_active: false })
      const created = yield* use("create_followup", {
        stage_id: lead.id,
        is_active: false,
        intervals: [{ interval_value: 2, interval_unit: "day" }],
        instructions: "Ask whether they are still interested.",
        after_followup_stage_id: lost.id
      })
      expect(created.followup).toMatchObject({ is_active: false, after_followup_stage_id: lost.id, max_messages: 1 })
      const table = (yield* use("create_knowledge_table", {
        name: "MCP products",
        description: "What we sell",
        columns: [
          { name: "name", data_type: "string", order: 1, is_searchable: true },
          { name: "price", data_type: "number", order: 2 }
        ]
      })).knowledge_table
      const upserted = yield* use("upsert_knowledge_points", {
        knowledge_table_id: table.id,
        points: [
          { default_id: "sku-1", name: "Red bicycle with three gears", price: 300 },
          { default_id: "sku-2", name: "Blue kayak for two people", price: 900 },
          { default_id: "sku-3", name: "Green tent for four people", price: 250 }
        ]
      })
      expect(upserted).toMatchObject({ upserted: 3 })

      // update
      const updated = yield* use("update_pipeline", {
        pipeline_id: pipeline.id,
        description: "Sells outdoor gear",
        rag_mode: "hybrid",
        attach_knowledge_table_ids: [table.id]
      })
      expect(updated.pipeline).toMatchObject({ description: "Sells outdoor gear", rag_mode: "hybrid" })
      const tiers = ["router", "simple", "moderate", "complex"].map((tier) => ({ tier, ai_model_id: model.id }))
      const pool = yield* use("update_model_pool", { pipeline_id: pipeline.id, tiers, is_model_routing_enabled: true })
      expect(pool).toMatchObject({ is_model_routing_enabled: true })
      const staged = yield* use("update_stage", {
        stage_id: lost.id,
        instructions: "Thank them and close politely.",
        is_opening_message: true,
        opening_message_type: "static",
        static_opening_message: "Thanks for your time!"
      })
      expect(staged.stage).toMatchObject({ id: lost.id, is_opening_message: true, opening_message_type: "static" })
      const activated = yield* use("update_action", { action_id: crmAction.id, is_active: true, retries: 2 })
      expect(activated.action).toMatchObject({ is_active: true, retries: 2, fixed_trigger: "stage_started" })
      const described = yield* use("update_variable", { variable_id: email.id, description: "Where the CRM writes" })
      expect(described.variable).toMatchObject({ description: "Where the CRM writes" })
      const followup = yield* use("update_followup", {
        stage_id: lead.id,
        intervals: [{ interval_value: 2, interval_unit: "day" }, { interval_value: 1, interval_unit: "week" }]
      })
      expect(followup.followup!.intervals).toHaveLength(2)

      // read back over REST
      const rest = ok(yield* get(owner, `/api/user/pipelines/${pipeline.id}`), "pipelines.get")
      expect(rest).toMatchObject({ description: "Sells outdoor gear", is_model_routing_enabled: true })
      expect(rest.stages.map((s) => [s.name, s.nature, s.order])).toEqual([["New lead", "neutral", 1], [
        "Won",
        "won",
        2
      ], ["Lost", "lost", 3]])
      expect(rest.stages[2]!.static_opening_message).toBe("Thanks for your time!")
      expect(
        ok(yield* get(owner, `/api/user/pipelines/${pipeline.id}/variables`), "automation.listVariables").map((v) =>
          v.name
        )
      ).toEqual([
        "contact_email"
      ])
      expect(ok(yield* get(owner, `/api/user/pipelines/${pipeline.id}/actions`), "automation.listActions"))
        .toMatchObject([{
          name: "notify_crm",
          is_active: true
        }])
      expect(ok(yield* get(owner, `/api/user/stages/${lead.id}/followup`), "followups.get").followup!.intervals)
        .toHaveLength(2)
      expect(
        ok(yield* get(owner, `/api/user/pipelines/${pipeline.id}/model-pool`), "modelPool.get").tiers.map((t) =>
          t.ai_model_id
        )
      ).toEqual(
        [model.id, model.id, model.id, model.id]
      )
      const tables = ok(yield* get(owner, "/api/user/knowledge-tables"), "knowledge.list")
      expect(tables).toMatchObject([{ id: table.id, points_count: 3, pipeline_ids: [pipeline.id] }])
      // and whole, through MCP
      const whole = yield* use("get_pipeline", { pipeline_id: pipeline.id })
      expect(whole.pipeline).toMatchObject({
        id: pipeline.id,
        description: "Sells outdoor gear",
        is_model_routing_enabled: true
      })
      expect(whole.pipeline.stages.map((s) => s.id)).toEqual([lead.id, won.id, lost.id])
      expect(whole.variables.map((v) => v.id)).toEqual([email.id])
      expect(whole.actions.map((a) => a.id)).toEqual([crmAction.id])
      expect(whole.followups).toMatchObject([{ stage_id: lead.id, after_followup_stage_id: lost.id }])
      expect(whole.knowledge_table_ids).toEqual([table.id])

      // opportunities and contacts (made over REST), a web conversation with operator messages
      const alice = yield* createOpportunity(owner, {
        pipeline_id: pipeline.id,
        contact: { name: "Alice", email: "alice@example.com" }
      })
      const bob = yield* createOpportunity(owner, {
        pipeline_id: pipeline.id,
        contact: { name: "Bob", email: "bob@example.com" },
        tags: ["vip"]
      })
      const channel = yield* linkWebChannel(owner, pipeline.id)
      const { baseUrl } = yield* TestServer
      const session = ok(
        yield* fetchJson(`${baseUrl}/api/user/web-chat/initiate`, {
          method: "POST",
          headers: {
            authorization: basic(channel),
            "content-type": "application/json",
            accept: "application/json"
          },
          body: JSON.stringify({ contact_id: `visitor-${Date.now()}` })
        }),
        "webChat.initiate"
      )
      for (const message of ["First operator note", "Second operator note"]) {
        ok(yield* post(owner, `/api/user/${session.conversation_id}/messages`, { message }), "messages.send")
      }

      // discover
      expect(yield* use("list_pipelines")).toEqual({
        pipelines: [
          expect.objectContaining({ id: pipeline.id, name: "MCP sales", stages_count: 3, status: expect.any(String) })
        ],
        has_more: false,
        next_page: null
      })
      expect((yield* use("list_pipeline_stages", { pipeline_id: pipeline.id })).stages.map((s) => s.id)).toEqual([
        lead.id,
        won.id,
        lost.id
      ])
      expect((yield* use("list_actions", { pipeline_id: pipeline.id })).actions.map((a) => a.id)).toEqual([
        crmAction.id
      ])
      expect((yield* use("list_actions", { pipeline_id: pipeline.id, stage_id: lead.id })).actions).toEqual([])
      expect((yield* use("list_variables", { pipeline_id: pipeline.id, q: "EMAIL" })).variables.map((v) => v.id))
        .toEqual([email.id])
      expect((yield* use("list_model_pool", { pipeline_id: pipeline.id })).tiers.map((t) => t.tier)).toEqual(
        tiers.map((t) => t.tier)
      )
      expect(yield* use("get_stage_followup", { stage_id: lead.id })).toMatchObject({
        has_followup: true,
        followup: { max_messages: 2 }
      })
      expect(yield* use("get_stage_followup", { stage_id: won.id })).toEqual({ has_followup: false, followup: null })
      expect((yield* use("list_knowledge_tables")).knowledge_tables).toMatchObject([{
        id: table.id,
        columns_count: 2,
        pipeline_ids: [pipeline.id]
      }])
      const hits = yield* use("search_knowledge_table", {
        knowledge_table_id: table.id,
        query: "kayak for two",
        limit: 2
      })
      expect(hits.point_ids.length).toBeGreaterThan(0)
      expect(hits.results[0]!.data.name).toBe("Blue kayak for two people")
      const vector = yield* use("search_knowledge_table", {
        knowledge_table_id: table.id,
        query: "tent",
        use_hybrid: false
      })
      expect(vector.mode).toBe("vector")
      const page1 = yield* use("list_knowledge_points", { knowledge_table_id: table.id, per_page: 2 })
      expect(page1.points).toHaveLength(2)
      expect(page1.has_more).toBe(true)
      for (const p of page1.points) {
        expect(typeof p.point_id).toBe("string")
        expect(typeof p.default_id).toBe("string")
        expect(Object.keys(p).sort()).toEqual(["data", "default_id", "modified_date", "point_id"])
      }
      const page2 = yield* use("list_knowledge_points", {
        knowledge_table_id: table.id,
        per_page: 2,
        next_page_offset: page1.next_page_offset
      })
      expect(page2).toMatchObject({ has_more: false, next_page_offset: null })
      expect([...page1.points, ...page2.points].map((p) => p.default_id).sort()).toEqual([
        "sku-1",
        "sku-2",
        "sku-3"
      ])
      const contacts = yield* use("list_contacts", { pipeline_id: pipeline.id, per_page: 2 })
      expect(contacts).toMatchObject({ total: 3, per_page: 2, page: 1, has_more: true })
      expect(contacts.contacts).toHaveLength(2)
      // next_page is the arguments of the next page, as they are
      expect(contacts.next_page).toEqual({ pipeline_id: pipeline.id, page: 2, per_page: 2 })
      const lastContacts = yield* use("list_contacts", contacts.next_page!)
      expect(lastContacts).toMatchObject({ page: 2, has_more: false, next_page: null })
      expect([...contacts.contacts, ...lastContacts.contacts].map((c) => c.id)).toHaveLength(3)
      const vip = yield* use("list_opportunities", { pipeline_id: pipeline.id, tags: ["VIP"] })
      expect(vip.opportunities.map((o) => o.id)).toEqual([bob.id])
      expect(
        (yield* use("list_opportunities", { pipeline_id: pipeline.id, q: "alice" })).opportunities.map((o) => o.id)
      ).toEqual([alice.id])
      const newest = yield* use("list_messages", { pipeline_id: pipeline.id, limit: 1 })
      expect(newest.messages.map((m) => m.message)).toEqual(["Second operator note"])
      expect(newest.next_cursor).toEqual(expect.any(String))
      expect(newest.next_page).toEqual({ pipeline_id: pipeline.id, limit: 1, cursor: newest.next_cursor })
      const older = yield* use("list_messages", {
        pipeline_id: pipeline.id,
        role: "assistant",
        limit: 5,
        cursor: newest.next_cursor
      })
      expect(older.messages.map((m) => m.message)).toEqual(["First operator note"])
      expect(older.next_cursor).toBeNull()
      // issue 19's conversation tools on the web conversation (in depth in mcp-conversations.http.test.ts)
      const web = yield* use("list_conversations", { channel_id: channel.id })
      expect(web.conversations.map((c) => c.id)).toEqual([session.conversation_id])
      const latest = yield* use("get_conversation", { conversation_id: session.conversation_id, messages_limit: 1 })
      expect(latest.messages.map((m) => [m.sender, m.message])).toEqual([["operator", "Second operator note"]])
      const taken = yield* use("handoff_conversation", { conversation_id: session.conversation_id, action: "take" })
      expect(taken.conversation.handoff).toMatchObject({ state: "human", assignee_id: owner.user_id })

      // bulk update: moving into Won fires the action made through MCP
      const moved = yield* use("update_opportunities", {
        ids: [alice.id, bob.id],
        stage_id: won.id,
        tags: ["closed"],
        notes: "Closed via MCP"
      })
      expect(moved.updated.map((o) => o.stage_id)).toEqual([won.id, won.id])
      expect(moved.failed).toEqual([])
      const aliceNow = ok(yield* get(owner, `/api/user/opportunities/${alice.id}`), "opportunities.get")
      expect(aliceNow).toMatchObject({ stage_id: won.id, notes: "Closed via MCP" })
      expect(aliceNow.tags.map((t) => t.name)).toEqual(["closed"])
      const runs = yield* eventually(
        Effect.map(
          use("list_action_results", { pipeline_id: pipeline.id, action_id: crmAction.id }),
          (r) => r.results.filter((run) => run.status === "succeeded").length >= 2 ? r : undefined
        ),
        15_000
      )
      expect(runs.results[0]).toMatchObject({ action_id: crmAction.id, response_status: 200 })
      expect(crm.hits.map((h) => JSON.parse(h).email).sort()).toEqual(["alice@example.com", "bob@example.com"])

      // analytics
      const summary = yield* use("get_account_summary")
      expect(summary).toMatchObject({ pipelines: 1, opportunities: 3 })
      expect(summary.messages).toBeGreaterThanOrEqual(2)
      const performance = yield* use("get_ai_performance")
      expect(performance.manual_messages).toBe(2)
      const stats = yield* use("get_messaging_stats", { pipeline_id: pipeline.id, provider: "web" })
      expect(stats.totals.manual_messages).toBe(2)

      // and the cleanup of knowledge
      expect(yield* use("delete_knowledge_points", { knowledge_table_id: table.id, default_ids: ["sku-1", "sku-2"] }))
        .toMatchObject({ deleted: 2 })
      expect(
        ok(yield* get(owner, `/api/user/knowledge-tables/${table.id}/points`), "knowledge.points").records.map((p) =>
          p.default_id
        )
      ).toEqual(["sku-3"])

      // the evals tools play cases through the engine: evals.http.test.ts calls them; the knowledge source tools
      // fetch a site: mcp-knowledge-sources.http.test.ts calls them
      expect([...called].sort()).toEqual(
        TOOL_NAMES.filter((n) =>
          ![
            "run_evals",
            "get_eval_run",
            "publish_pipeline",
            "list_pipeline_versions",
            "diff_pipeline_versions",
            "add_knowledge_source",
            "list_knowledge_sources",
            "sync_knowledge_source"
          ].includes(n)
        ).sort()
      )
    }))

  it.scoped("the receiver's answered message_id comes back as external_message_id in list_messages and the web-chat history", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id)
      const receiver = yield* webhookReceiver(() => "ok")
      const pipeline = yield* createPipeline(owner, "Replies")
      yield* createStage(owner, pipeline.id, "Open", 1)
      const channel = webCredentials(ok(
        yield* post(owner, "/api/user/channels", { kind: "web", pipeline_id: pipeline.id, callback_url: receiver.url }),
        "channels.create"
      ))
      const { baseUrl } = yield* TestServer
      const session = ok(
        yield* fetchJson(`${baseUrl}/api/user/web-chat/initiate`, {
          method: "POST",
          headers: { authorization: basic(channel), "content-type": "application/json", accept: "application/json" },
          body: JSON.stringify({ contact_id: "visitor-ext" })
        }),
        "webChat.initiate"
      )
      const sent = ok(
        yield* post(owner, `/api/user/${session.conversation_id}/messages`, { message: "Your order shipped" }),
        "messages.send"
      )
      // the receiver answers {"message_id": "ext-1"}
      yield* eventually(Effect.sync(() => receiver.received.length === 1))

      const history = () =>
        Effect.map(
          fetchJson(`${baseUrl}/api/user/messages/webchat?contact_id=visitor-ext`, {
            headers: { authorization: basic(channel) }
          }),
          (r) => ok(r, "webChat.history").data
        )
      const records = yield* eventually(
        Effect.map(history(), (data) => data[0]?.external_message_id !== null ? data : undefined)
      )
      expect(records).toMatchObject([{ id: sent._id, role: "assistant", external_message_id: "ext-1" }])

      const mcp = yield* connect(owner.token)
      const listed = yield* mcp.ok("list_messages", { pipeline_id: pipeline.id })
      expect(listed.messages).toMatchObject([{ id: sent._id, role: "assistant", external_message_id: "ext-1" }])
    }))

  it.effect("a token without mcp:use gets 403 naming the scope; no token or a bad one gets 401 with WWW-Authenticate", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const restOnly = yield* tokenFor(owner.email, ["pipelines:read", "opportunities:read"])
      const forbidden = yield* rawMcp({ token: restOnly.token, body: initialize("2025-03-26") })
      expect(forbidden.status).toBe(403)
      expect(bodyAs(forbidden, RpcError).error.message).toBe("Missing required scope: mcp:use")
      expect(forbidden.headers.get("www-authenticate")).toContain(`error="insufficient_scope", scope="mcp:use"`)

      const { baseUrl } = yield* TestServer
      const metadata = `resource_metadata="${baseUrl}/.well-known/oauth-protected-resource/mcp"`
      for (const token of [undefined, "pat_not-a-real-token"]) {
        const refused = yield* rawMcp({ ...(token ? { token } : {}), body: initialize("2025-03-26") })
        expect(refused.status).toBe(401)
        // (the exact challenge is mcp-protocol.http.test.ts's)
        expect(refused.headers.get("www-authenticate")).toContain(metadata)
        expect(bodyAs(refused, RpcError).error).toMatchObject({ code: expect.any(Number), message: expect.any(String) })
      }
      // the same token works for REST
      expect(ok(yield* get({ token: restOnly.token }, "/api/user/pipelines"), "pipelines.list")).toEqual([])
    }))

  it.scoped("bad arguments are tool errors naming each argument; service errors carry their message; unknown tools are JSON-RPC errors", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const mcp = yield* connect(owner.token)
      const bad = yield* mcp.call("create_stage", {
        pipeline_id: "seven",
        name: "ab",
        nature: "maybe",
        order: 0,
        colour: "red"
      })
      expect(bad.isError).toBe(true)
      const fields = validationOf(bad).map((v) => v.field).sort()
      expect(fields).toEqual(["colour", "name", "nature", "order", "pipeline_id"])
      for (const field of fields) expect(textOf(bad)).toContain(`- ${field}:`)
      expect(textOf(bad)).toContain("The name field must be at least 3 characters.")

      const missing = yield* mcp.call("list_pipeline_stages", {})
      expect(textOf(missing)).toContain("The pipeline_id field is required.")
      const tooMany = yield* mcp.call("list_messages", { limit: 501 })
      expect(validationOf(tooMany).map((v) => v.field)).toEqual(["limit"])
      const badCursor = yield* mcp.call("list_messages", { cursor: "nonsense" })
      expect(validationOf(badCursor).map((v) => v.field)).toEqual(["cursor"])
      // the same period rule as the REST query
      const backwards = yield* mcp.call("get_messaging_stats", { start_date: "2026-03-02", end_date: "2026-03-01" })
      expect(backwards.isError).toBe(true)
      expect(backwards.structuredContent).toMatchObject({
        validation: [{ field: "end_date", message: "The end_date field must be a date after or equal to start_date." }]
      })

      const notFound = yield* mcp.call("list_pipeline_stages", { pipeline_id: 999_999 })
      expect(notFound.isError).toBe(true)
      expect(textOf(notFound)).toBe("Pipeline not found.")
      const duplicate = yield* mcp.call("create_pipeline", {
        name: "Twice",
        agent_type_id: 1,
        ai_model_id: 1,
        language_id: 1
      })
      expect(duplicate.isError).toBeFalsy()
      const again = yield* mcp.call("create_pipeline", {
        name: "Twice",
        agent_type_id: 1,
        ai_model_id: 1,
        language_id: 1
      })
      expect(validationOf(again)).toMatchObject([{ field: "name" }])
      // said once
      expect(textOf(again)).toBe("Invalid arguments for create_pipeline:\n- name: The name has already been taken.")

      const unknown = yield* Effect.promise(() =>
        mcp.client.callTool({ name: "drop_everything", arguments: {} }).then(() => undefined, (e: unknown) => e)
      )
      expect(unknown).toMatchObject({ code: -32602 })
      // the client puts "MCP error -32602: " in front of the server's message, once
      expect(unknown).toHaveProperty("message", "MCP error -32602: Unknown tool: drop_everything")
      const malformed = yield* rawMcp({ token: owner.token, body: { jsonrpc: "2.0", id: 3, method: "tools/call" } })
      expect(bodyAs(malformed, RpcError).error.code).toBe(-32602)
      expect(bodyAs(malformed, RpcError).error.message).toMatch(/^Invalid tools\/call request: /)
      const unknownMethod = yield* rawMcp({
        token: owner.token,
        body: { jsonrpc: "2.0", id: 4, method: "nonexistent/method" }
      })
      expect(bodyAs(unknownMethod, RpcError).error.code).toBe(-32601)
      const notJson = yield* Effect.flatMap(TestServer, ({ baseUrl }) =>
        fetchJson(`${baseUrl}/mcp`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${owner.token}`,
            accept: "application/json, text/event-stream",
            "content-type": "application/json"
          },
          body: "{not json"
        }))
      expect(notJson.status).toBe(400)
      expect(bodyAs(notJson, RpcError).error.code).toBe(-32700)
    }))

  it.effect("a browser Origin outside the allowlist is refused; loopback origins and clients without Origin are served", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const evil = yield* rawMcp({
        token: owner.token,
        headers: { origin: "http://evil.example" },
        body: initialize("2025-03-26")
      })
      expect(evil.status).toBe(403)
      expect(bodyAs(evil, RpcError).error.message).toBe("Origin not allowed: http://evil.example")
      const local = yield* rawMcp({
        token: owner.token,
        headers: { origin: "http://localhost:6274" },
        body: initialize("2025-03-26")
      })
      expect(local.status).toBe(200)
      expect(local.headers.get("access-control-allow-origin")).toBe("http://localhost:6274")
      const preflight = yield* rawMcp({
        method: "OPTIONS",
        headers: {
          origin: "http://localhost:6274",
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization"
        }
      })
      expect(preflight.status).toBe(204)
      expect(preflight.headers.get("access-control-allow-headers")).toContain("authorization")
      expect((yield* rawMcp({ method: "OPTIONS", headers: { origin: "http://evil.example" } })).status).toBe(403)
      expect((yield* rawMcp({ token: owner.token, body: initialize("2025-03-26") })).status).toBe(200)
    }))

  it.effect("GET /mcp is 405; DELETE /mcp ends the (stateless) session with 200", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const listen = yield* rawMcp({ method: "GET", token: owner.token, headers: { accept: "text/event-stream" } })
      expect(listen.status).toBe(405)
      expect(listen.headers.get("allow")).toBe("POST, DELETE")
      expect((yield* rawMcp({ method: "GET" })).status).toBe(405)
      const ended = yield* rawMcp({ method: "DELETE", token: owner.token })
      expect(ended.status).toBe(200)
    }))
})

layer(TestServerLive(), { excludeTestServices: true })("MCP without OUTBOUND_ALLOW_PRIVATE", (it) => {
  it.scoped("create_action and update_action refuse a url at a private address as a tool error naming url", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const mcp = yield* connect(owner.token)
      const pipeline =
        (yield* mcp.ok("create_pipeline", { name: "Guarded", agent_type_id: 1, ai_model_id: 1, language_id: 1 }))
          .pipeline
      const request = {
        pipeline_id: pipeline.id,
        name: "crm",
        method: "POST",
        is_active: true,
        fixed_trigger: "custom"
      }
      const refused = yield* mcp.call("create_action", { ...request, url: "http://169.254.169.254/latest/meta-data" })
      expect(refused.isError).toBe(true)
      expect(validationOf(refused)).toEqual([{
        field: "url",
        message:
          "The url field must point at a public address: 169.254.169.254 is a loopback, private or link-local address, " +
          "which this server calls only when OUTBOUND_ALLOW_PRIVATE=true."
      }])
      expect(textOf(refused)).toContain("- url: The url field must point at a public address")
      const action = (yield* mcp.ok("create_action", { ...request, url: "https://crm.example.com/leads" })).action
      const update = yield* mcp.call("update_action", { action_id: action.id, url: "http://[::ffff:10.0.0.1]/leads" })
      expect(validationOf(update)).toMatchObject([{ field: "url" }])
    }))
})
