/**
 * What the MCP server costs a model's context (issue 23): the bytes of `tools/list`, and of every result of a
 * fixed workload of tool calls (three pipelines built and read back through MCP, 117 calls), as the SDK
 * client receives them: the text content a text-only client reads, `structuredContent` as compact JSON, and
 * their ratio. Prints one table; the numbers go to docs/benchmarks.md.
 * Run: npx tsx bench/mcp.ts
 */
// the SDK is a dependency of the server package, not of the workspace root
import { Client } from "../packages/server/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js"
import { StreamableHTTPClientTransport } from "../packages/server/node_modules/@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js"
import type { CallToolResult } from "../packages/server/node_modules/@modelcontextprotocol/sdk/dist/esm/types.js"
import { startServer } from "./support.js"

const bytes = (s: string) => Buffer.byteLength(s, "utf8")

const server = await startServer()
try {
  const { api, demo } = server
  const headers = { authorization: `Bearer ${demo.token}` }
  // tools/list exactly as it comes over the wire
  const raw = await fetch(`${api}/mcp`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" })
  }).then((r) => r.text())

  const client = new Client({ name: "bench", version: "1" })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${api}/mcp`), { requestInit: { headers } }))
  const rows: Array<{ tool: string; text: number; compact: number }> = []
  const call = async (name: string, args: Record<string, unknown> = {}): Promise<any> => {
    const result = await client.callTool({ name, arguments: args }) as CallToolResult
    const text = result.content.map((c) => (c.type === "text" ? c.text : "")).join("\n")
    if (result.isError) throw new Error(`${name}: ${text}`)
    rows.push({ tool: name, text: bytes(text), compact: bytes(JSON.stringify(result.structuredContent)) })
    return result.structuredContent
  }

  const first = await call("start_pipeline_journey")
  const provider = first.options.ai_providers[0].id
  await call("start_pipeline_journey", { ai_provider_id: provider })
  const options = await call("get_pipeline_options", { ai_provider_id: provider })
  const model = options.ai_models[0].id
  const language = options.languages.find((l: any) => l.code === "en").id
  for (let n = 1; n <= 3; n++) {
    const { pipeline } = await call("create_pipeline", {
      name: `Bench ${n}`,
      agent_type_id: options.agent_types[0].id,
      ai_model_id: model,
      language_id: language,
      persona: "Friendly and brief",
      instructions: "Help the visitor choose a product and book a call."
    })
    const stages = []
    for (
      const [order, [name, nature]] of [["New lead", "neutral"], ["Qualified", "neutral"], ["Won", "won"], [
        "Lost",
        "lost"
      ]].entries()
    ) {
      stages.push(
        (await call("create_stage", {
          pipeline_id: pipeline.id,
          name,
          nature,
          order: order + 1,
          ...(order > 0 ? { enter_condition: `The contact is ready for the ${name} step of the process.` } : {})
        })).stage
      )
    }
    const variable = (await call("create_variable", {
      pipeline_id: pipeline.id,
      name: "contact_email",
      value: "opportunity.contact_email",
      type: "from_system",
      is_required: false
    })).variable
    const action = (await call("create_action", {
      pipeline_id: pipeline.id,
      stage_id: stages[2].id,
      name: "notify_crm",
      method: "POST",
      url: "https://crm.example.com/won",
      is_active: false,
      fixed_trigger: "stage_started",
      payload: { email: "{{contact_email}}" }
    })).action
    await call("create_followup", {
      stage_id: stages[0].id,
      is_active: false,
      intervals: [{ interval_value: 1, interval_unit: "day" }],
      after_followup_stage_id: stages[3].id
    })
    const table = (await call("create_knowledge_table", {
      name: `Bench products ${n}`,
      columns: [{ name: "name", data_type: "string", order: 1, is_searchable: true }, {
        name: "price",
        data_type: "number",
        order: 2
      }]
    })).knowledge_table
    await call("upsert_knowledge_points", {
      knowledge_table_id: table.id,
      points: Array.from(
        { length: 10 },
        (_, i) => ({ default_id: `sku-${i}`, name: `Product number ${i}`, price: 10 * i })
      )
    })
    await call("update_pipeline", {
      pipeline_id: pipeline.id,
      rag_mode: "hybrid",
      attach_knowledge_table_ids: [table.id]
    })
    await call("update_model_pool", {
      pipeline_id: pipeline.id,
      tiers: ["router", "simple", "moderate", "complex"].map((tier) => ({ tier, ai_model_id: model }))
    })
    await call("update_stage", { stage_id: stages[1].id, instructions: "Propose a call." })
    await call("update_action", { action_id: action.id, retries: 2 })
    await call("update_variable", { variable_id: variable.id, description: "The contact's email" })
    await call("update_followup", { stage_id: stages[0].id, instructions: "Remind them politely." })
    await call("list_pipelines")
    await call("get_pipeline_options")
    await call("list_variables", { pipeline_id: pipeline.id, q: "email" })
    await call("list_pipeline_stages", { pipeline_id: pipeline.id })
    await call("list_actions", { pipeline_id: pipeline.id })
    await call("list_action_results", { pipeline_id: pipeline.id })
    await call("list_variables", { pipeline_id: pipeline.id })
    await call("list_model_pool", { pipeline_id: pipeline.id })
    await call("get_stage_followup", { stage_id: stages[0].id })
    await call("list_knowledge_tables")
    await call("search_knowledge_table", { knowledge_table_id: table.id, query: "product number 3" })
    const points = await call("list_knowledge_points", { knowledge_table_id: table.id, per_page: 5 })
    await call("list_knowledge_points", {
      knowledge_table_id: table.id,
      per_page: 5,
      next_page_offset: points.next_page_offset
    })
    await call("search_knowledge_table", { knowledge_table_id: table.id, query: "product", use_hybrid: false })
    await call("list_contacts", { per_page: 5 })
    await call("list_opportunities", { per_page: 5 })
    await call("list_messages", { limit: 5 })
    await call("list_opportunities", { pipeline_id: pipeline.id })
    await call("list_conversations", { limit: 5 })
    await call("get_account_summary")
    await call("get_ai_performance")
    await call("get_messaging_stats", { pipeline_id: pipeline.id })
  }
  await client.close()

  const sum = (f: (r: (typeof rows)[number]) => number) => rows.reduce((s, r) => s + f(r), 0)
  const text = sum((r) => r.text)
  const compact = sum((r) => r.compact)
  const largest = [...rows].sort((a, b) => b.text - a.text).slice(0, 5)
  console.log(`tools/list: ${bytes(raw)} bytes (${JSON.parse(raw).result.tools.length} tools)`)
  console.log(
    `${rows.length} calls: text ${text} bytes, structuredContent as compact JSON ${compact} bytes, ratio ${
      (text / compact).toFixed(2)
    }`
  )
  console.log(`largest texts: ${largest.map((r) => `${r.tool} ${r.text}`).join(", ")}`)
} finally {
  await server.stop()
}
