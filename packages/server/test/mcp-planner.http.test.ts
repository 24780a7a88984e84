/**
 * Can a model build and try a pipeline knowing only what the server tells it (issue 23)? A small planner
 * stands in for the model. It knows no tool of ours: it reads `tools/list` (titles, descriptions, input
 * schemas, read-only hints), picks the tool whose words best match what the user asked, and fills the
 * arguments from the user's words, from the ids and names earlier results returned, from the plans a
 * result offers (entries naming a tool) and from `next_steps`. A required argument it cannot fill fails the
 * test, as a model would have to ask. The user's words come keyed by the parameter they answer (a model
 * maps "call it Test rides" to `name` by reading the schema; the planner does not parse English), and
 * names stand for ids (`ai_model: "Parley Local"` for `ai_model_id`), which the planner looks up in what
 * earlier results listed. The user then tries the agent as a contact on the web chat, and the planner reads
 * the conversation back.
 */
import { expect, layer } from "@effect/vitest"
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Schema } from "effect"
import { type McpSession, mcpSession, toolResult } from "./support/McpClient.js"
import { ok, post } from "./support/Opportunities.js"
import { giveCredits, seedUser, TestServerLive } from "./support/TestServer.js"
import { say, webCredentials } from "./support/WebChat.js"
import { eventually, webhookReceiver } from "./support/WebhookReceiver.js"

type Json = Record<string, unknown>

/** What the planner reads of a tool's input schema (tools/list). */
const InputSchema = Schema.Struct({
  properties: Schema.optional(Schema.Record({
    key: Schema.String,
    value: Schema.Struct({ default: Schema.optional(Schema.Unknown), description: Schema.optional(Schema.String) })
  })),
  required: Schema.optional(Schema.Array(Schema.String))
})

const STOP = new Set([
  "a",
  "an",
  "the",
  "to",
  "of",
  "for",
  "and",
  "or",
  "it",
  "its",
  "my",
  "me",
  "i",
  "with",
  "that",
  "this",
  "on",
  "in",
  "is",
  "be",
  "as",
  "by",
  "want",
  "new",
  "from"
])
const words = (text: string) =>
  text.toLowerCase().split(/[^a-z]+/).filter((w) => w.length > 1 && !STOP.has(w)).map((w) =>
    w.replace(/(ies)$/, "y").replace(/s$/, "")
  )
/** The same word, or one a form of the other (build, building; attach, attaches). */
const same = (a: string, b: string) =>
  a === b || (Math.min(a.length, b.length) >= 4 && (a.startsWith(b) || b.startsWith(a)))
const overlap = (asked: ReadonlyArray<string>, text: string) => {
  const theirs = words(text)
  return asked.filter((w) => theirs.some((t) => same(w, t))).length
}
const READ = /^(show|review|find|list|read|look)\b/i
const CHANGE = /^(add|create|make|tell|fill|mark|let|attach|set|change|update|move)\b/i
const placeholder = (v: unknown) => typeof v === "string" && /^<.*>$/.test(v)
const singular = (key: string) => key.replace(/ies$/, "y").replace(/s$/, "")

/** What a model keeps from the conversation: objects by kind, plans naming a tool, and next steps. */
class Memory {
  readonly things = new Map<string, Array<Json>>()
  readonly plans: Array<Json> = []
  hints: Array<string> = []
  constructor(readonly toolNames: ReadonlySet<string>) {}
  remember(result: Json) {
    const walk = (value: unknown, key: string, depth: number) => {
      if (depth > 4 || value === null || typeof value !== "object") return
      if (Array.isArray(value)) {
        for (const v of value) walk(v, singular(key), depth + 1)
        return
      }
      const obj = value as Json
      if (typeof obj.tool === "string" && this.toolNames.has(obj.tool)) this.plans.push(obj)
      if ("id" in obj && key !== "") this.things.set(key, [obj, ...(this.things.get(key) ?? [])])
      for (const [k, v] of Object.entries(obj)) walk(v, k, depth + 1)
    }
    const plans = this.plans.length
    walk(result, "", 0)
    // a result's plan replaces an earlier one
    if (this.plans.length > plans) this.plans.splice(0, plans)
    if (Array.isArray(result.next_steps)) this.hints = result.next_steps.filter((h) => typeof h === "string")
  }
  /**
   * The object of the kind a `<kind>_id` argument names, by the name the user (or a plan) gave, else the latest one.
   */
  id(argument: string, name: unknown): unknown {
    const kinds = [...this.things.keys()].filter((k) => argument === `${k}_id` || argument.endsWith(`_${k}_id`))
    for (const kind of kinds.sort((a, b) => b.length - a.length)) {
      const found = this.things.get(kind)!
      if (typeof name === "string") {
        const named = found.find((o) =>
          [o.name, o.code].some((n) => typeof n === "string" && n.toLowerCase() === name.toLowerCase())
        )
        if (named) return named.id
      } else if (name === undefined) return found[0]!.id
    }
    return undefined
  }
  /** A value `next_steps` gives for an argument: "... attach_knowledge_table_ids [7] ...", "pipeline_id 12". */
  hinted(argument: string): unknown {
    for (const hint of this.hints) {
      const m = new RegExp(`\\b${argument} (\\[[^\\]]*\\]|\\d+)`).exec(hint)
      if (m) return JSON.parse(m[1]!)
    }
    return undefined
  }
}

const choose = (tools: ReadonlyArray<Tool>, request: string, hints: ReadonlyArray<string>) => {
  const asked = words(request)
  const candidates = tools.filter((t) =>
    READ.test(request)
      ? t.annotations?.readOnlyHint === true
      : CHANGE.test(request)
      ? t.annotations?.readOnlyHint !== true
      : true
  )
  // the title weighs most, then the description, then a next step of the last result that names the tool and
  // says more than one of the words asked
  const hinted = (t: Tool) =>
    Math.max(0, ...hints.filter((h) => h.includes(t.name)).map((h) => overlap(asked, h)).filter((n) => n > 1))
  const score = (t: Tool) => 3 * overlap(asked, t.title ?? t.name) + overlap(asked, t.description ?? "") + 2 * hinted(t)
  return [...candidates].sort((a, b) => score(b) - score(a))[0]!
}

/** Arguments for `tool` from the user's values, a plan's entry, names resolved to ids, and next steps. */
const fill = (tool: Tool, memory: Memory, values: Json, entry: Json = {}) => {
  const args: Json = {}
  const schema = Schema.decodeUnknownSync(InputSchema)(tool.inputSchema)
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    if (name in values) args[name] = values[name]
    else if (name in entry && !placeholder(entry[name])) args[name] = entry[name]
    else if (name.endsWith("_id")) {
      const base = name.slice(0, -3)
      const given = values[base] ?? entry[base]
      const id = memory.id(name, given) ?? memory.hinted(name)
      if (id !== undefined && (given !== undefined || schema.required?.includes(name))) args[name] = id
    } else if (name.endsWith("_ids")) {
      const hinted = memory.hinted(name)
      if (hinted !== undefined) args[name] = hinted
    }
    if (args[name] === undefined && schema.required?.includes(name) && property.default === undefined) {
      throw new Error(`${tool.name} needs ${name}: a model would have to ask the user (${property.description})`)
    }
  }
  return args
}

const planner = (mcp: McpSession, tools: ReadonlyArray<Tool>) => {
  const memory = new Memory(new Set(tools.map((t) => t.name)))
  const called: Array<string> = []
  const run = (tool: Tool, args: Json) =>
    Effect.map(mcp.ok(tool.name, args), (result): Json => {
      called.push(tool.name)
      memory.remember(result)
      return result
    })
  return {
    called,
    /** Does what the user asks once. */
    ask: (request: string, values: Json = {}) =>
      Effect.suspend(() => {
        const tool = choose(tools, request, memory.hints)
        return run(tool, fill(tool, memory, values))
      }),
    /** Does what the user asks once per entry a result's plan has for the chosen tool. */
    askForEach: (request: string, values: Json = {}) =>
      Effect.suspend(() => {
        const tool = choose(tools, request, memory.hints)
        const entries = memory.plans.filter((p) => p.tool === tool.name)
        expect(entries.length, `a plan with ${tool.name} entries`).toBeGreaterThan(0)
        return Effect.forEach(entries, (entry) => Effect.suspend(() => run(tool, fill(tool, memory, values, entry))))
      })
  }
}

layer(TestServerLive({ OUTBOUND_ALLOW_PRIVATE: "true" }), { excludeTestServices: true })(
  "a model that knows only tools/list",
  (it) => {
    it.scoped("builds a pipeline from the tools' descriptions and results, and the pipeline answers a contact", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        yield* giveCredits(owner.workspace_id, { credits: 100, training_credits: 100 })
        const crm = yield* webhookReceiver(() => "ok")
        const channel = webCredentials(ok(
          yield* post(owner, "/api/user/channels", { kind: "web", name: "Shop chat" }),
          "channels.create"
        ))
        const mcp = yield* mcpSession(owner.token)
        const { tools } = yield* Effect.promise(() => mcp.client.listTools())
        const model = planner(mcp, tools)

        const journey = toolResult(
          "start_pipeline_journey",
          yield* model.ask("I want to build an AI agent that books test rides for my bike shop")
        )
        expect(journey.questions.length).toBeGreaterThan(3)
        yield* model.ask("Start building the agent with the provider I chose", { ai_provider: "Parley local model" })
        const { pipeline } = toolResult(
          "create_pipeline",
          yield* model.ask("Create the pipeline", {
            name: "Test rides",
            agent_type: "Appointment setter",
            ai_model: "Parley Local",
            language: "en",
            channel: "Shop chat",
            persona: "Cheerful and brief.",
            instructions: "Help the visitor pick a bike and book a test ride."
          })
        )
        expect(pipeline).toMatchObject({ name: "Test rides", channel_id: channel.id })
        const stages = (yield* model.askForEach("Add the stages the plan suggests")).map((r) =>
          toolResult("create_stage", r)
        )
        expect(stages.map((s) => [s.stage.name, s.stage.nature])).toEqual([
          ["New lead", "neutral"],
          ["Qualified", "neutral"],
          ["Won", "won"],
          ["Lost", "lost"]
        ])
        yield* model.askForEach("Add the variables the plan suggests")
        const [action] = (yield* model.askForEach("Add the action the plan suggests, to tell my CRM", {
          url: crm.url,
          is_active: true
        })).map((r) => toolResult("create_action", r))
        expect(action!.action).toMatchObject({
          stage_id: stages[2]!.stage.id,
          fixed_trigger: "stage_started",
          is_active: true
        })
        const table = toolResult(
          "create_knowledge_table",
          yield* model.ask("Create a knowledge table with the bikes we rent", {
            name: "Bikes",
            columns: [{ name: "bike", data_type: "string", order: 1, is_searchable: true }, {
              name: "price",
              data_type: "number",
              order: 2
            }]
          })
        )
        yield* model.ask("Fill the knowledge table with points", {
          points: [{ default_id: "gravel", bike: "Gravel bike, light and fast on dirt roads", price: 40 }, {
            default_id: "city",
            bike: "City bike with a basket",
            price: 20
          }]
        })
        yield* model.ask("Let the agent search the knowledge table: attach it to the pipeline", { rag_mode: "hybrid" })
        const whole = toolResult("get_pipeline", yield* model.ask("Review the whole pipeline"))
        expect(whole.knowledge_table_ids).toEqual([table.knowledge_table.id])
        expect(whole.pipeline.stages).toHaveLength(4)

        // the user tries it as a contact; then the model reads what happened
        const visitor = `rider-${Date.now()}`
        yield* say(channel, visitor, "Hello! Do you rent a gravel bike for dirt roads?")
        const listed = yield* eventually(
          Effect.delay(model.ask("Show the conversations of the pipeline"), "250 millis").pipe(
            Effect.map((r) => toolResult("list_conversations", r)),
            Effect.map((r) => ((r.conversations[0]?.messages_count ?? 0) >= 2 ? r : undefined))
          ),
          20_000
        )
        expect(listed.conversations[0]!.contact.identifier).toBe(visitor)
        const read = toolResult(
          "get_conversation",
          yield* model.ask("Show the conversation with its latest messages")
        )
        expect(read.conversation.id).toBe(listed.conversations[0]!.id)
        const reply = read.messages.find((m) => m.sender === "ai" && /gravel/i.test(m.message ?? ""))
        expect(reply, JSON.stringify(read.messages.map((m) => [m.sender, m.message]))).toBeDefined()
        // agreeing to book enters the Won stage, whose action (made by the model) tells the CRM
        yield* say(channel, visitor, "Great, I have agreed to book the gravel bike, please sign me up.")
        yield* eventually(Effect.sync(() => crm.received.length > 0 || undefined), 20_000)
        // the plan's payload, its variables filled from the opportunity
        expect(Object.keys(JSON.parse(crm.received[0]!.rawBody)).sort()).toEqual(["email", "name"])

        expect(model.called).toEqual([
          "start_pipeline_journey",
          "start_pipeline_journey",
          "create_pipeline",
          ...Array<string>(4).fill("create_stage"),
          "create_variable",
          "create_variable",
          "create_action",
          "create_knowledge_table",
          "upsert_knowledge_points",
          "update_pipeline",
          "get_pipeline",
          ...model.called.slice(14, -1).map(() => "list_conversations"),
          "get_conversation"
        ])
      }))
  }
)
