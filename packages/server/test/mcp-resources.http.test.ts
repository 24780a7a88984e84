/**
 * MCP resources and prompts (issue 23) through the SDK client: a pipeline's configuration and a knowledge
 * table's columns as resources, under the tools' scopes and workspace isolation; the two prompts, which name
 * only tools the server has.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { mcpSession } from "./support/McpClient.js"
import { createPipeline, createStage, ok, post } from "./support/Opportunities.js"
import { seedUser, TestServerLive, tokenFor } from "./support/TestServer.js"

/** A request's JSON-RPC error, as the client throws it. */
const failure = <A>(p: () => Promise<A>) =>
  Effect.promise((): Promise<unknown> => p().then(() => undefined, (e: unknown) => e))

/** The columns resource's fields this file reads. */
const Columns = Schema.Struct({
  columns: Schema.Array(Schema.Struct({ name: Schema.String, data_type: Schema.String, is_searchable: Schema.Boolean }))
})

layer(TestServerLive(), { excludeTestServices: true })("MCP resources and prompts", (it) => {
  it.scoped("a pipeline's configuration and a knowledge table's columns are resources, the same JSON as the tools answer", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const pipeline = yield* createPipeline(owner, "Resourced")
      yield* createStage(owner, pipeline.id, "Open", 1)
      const table = ok(
        yield* post(owner, "/api/user/knowledge-tables", {
          name: "Products",
          columns: [{ name: "name", data_type: "string", order: 1, is_searchable: true }, {
            name: "price",
            data_type: "number",
            order: 2
          }]
        }),
        "knowledge.create"
      )
      const mcp = yield* mcpSession(owner.token)

      const { resourceTemplates } = yield* Effect.promise(() => mcp.client.listResourceTemplates())
      expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual([
        "parley://pipelines/{pipeline_id}",
        "parley://knowledge-tables/{knowledge_table_id}/columns"
      ])
      const { resources } = yield* Effect.promise(() => mcp.client.listResources())
      expect(resources.map((r) => r.uri)).toEqual([
        `parley://pipelines/${pipeline.id}`,
        `parley://knowledge-tables/${table.id}/columns`
      ])

      const read = (uri: string) => Effect.promise(() => mcp.client.readResource({ uri }))
      const config = yield* read(`parley://pipelines/${pipeline.id}`)
      expect(config.contents).toHaveLength(1)
      expect(config.contents[0]).toMatchObject({
        uri: `parley://pipelines/${pipeline.id}`,
        mimeType: "application/json"
      })
      expect(JSON.parse((config.contents[0] as { text: string }).text)).toEqual(
        yield* mcp.ok("get_pipeline", { pipeline_id: pipeline.id })
      )

      const columns = Schema.decodeUnknownSync(Columns)(JSON.parse(
        ((yield* read(`parley://knowledge-tables/${table.id}/columns`)).contents[0] as { text: string }).text
      ))
      expect(columns.columns.map((c) => [c.name, c.data_type, c.is_searchable])).toEqual([
        ["name", "string", true],
        ["price", "number", false]
      ])

      // another workspace's ids and unknown addresses are not found; a token without knowledge:read reads no table
      const stranger = yield* seedUser()
      const theirs = yield* mcpSession(stranger.token)
      for (
        const uri of [
          `parley://pipelines/${pipeline.id}`,
          `parley://knowledge-tables/${table.id}/columns`,
          "parley://pipelines/x",
          "https://example.com/"
        ]
      ) {
        const refused = yield* failure(() => theirs.client.readResource({ uri }))
        expect(refused, uri).toMatchObject({ code: -32002, message: `MCP error -32002: Resource not found: ${uri}` })
      }
      expect((yield* Effect.promise(() => theirs.client.listResources())).resources).toEqual([])
      const limited = yield* mcpSession((yield* tokenFor(owner.email, ["mcp:use"])).token)
      expect((yield* Effect.promise(() => limited.client.listResources())).resources.map((r) => r.uri)).toEqual([
        `parley://pipelines/${pipeline.id}`
      ])
      const noKnowledge = yield* failure(() =>
        limited.client.readResource({ uri: `parley://knowledge-tables/${table.id}/columns` })
      )
      expect(noKnowledge).toMatchObject({
        code: -32003,
        message: "MCP error -32003: Missing required scope: knowledge:read"
      })
    }))

  it.scoped("the prompts write out the job with the server's own tools and refuse a missing argument", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const mcp = yield* mcpSession(owner.token)
      const { prompts } = yield* Effect.promise(() => mcp.client.listPrompts())
      expect(prompts.map((p) => [p.name, p.arguments?.map((a) => [a.name, a.required])])).toEqual([
        ["build_pipeline", [["purpose", true]]],
        ["review_conversation", [["conversation_id", true]]]
      ])
      const tools = new Set((yield* Effect.promise(() => mcp.client.listTools())).tools.map((t) => t.name))

      const build = yield* Effect.promise(() =>
        mcp.client.getPrompt({ name: "build_pipeline", arguments: { purpose: "booking test rides for a bike shop" } })
      )
      const review = yield* Effect.promise(() =>
        mcp.client.getPrompt({ name: "review_conversation", arguments: { conversation_id: "42" } })
      )
      for (
        const [result, must] of [[build, "booking test rides for a bike shop"], [review, "conversation_id 42"]] as const
      ) {
        expect(result.messages).toHaveLength(1)
        const text = (result.messages[0]!.content as { text: string }).text
        expect(text).toContain(must)
        // every snake_case word that looks like a tool is one
        const named = [
          ...new Set(text.match(/\b(?:get|list|create|update|upsert|delete|start|search|handoff)_[a-z_]+\b/g) ?? [])
        ]
        expect(named.length).toBeGreaterThan(3)
        expect(named.filter((n) => !tools.has(n) && !/_ids?$|_id$|_limit$|_condition$/.test(n))).toEqual([])
      }

      const missing = yield* failure(() => mcp.client.getPrompt({ name: "build_pipeline", arguments: {} }))
      expect(missing).toMatchObject({ code: -32602, message: "MCP error -32602: Missing required argument: purpose" })
      const unknown = yield* failure(() => mcp.client.getPrompt({ name: "write_a_poem" }))
      expect(unknown).toMatchObject({ code: -32602, message: "MCP error -32602: Unknown prompt: write_a_poem" })
    }))
})
