/**
 * One scope rule on both surfaces (issue 23, docs/mcp.md "Scopes"): `mcp:use` reads pipeline configuration,
 * as `pipelines:read` does, over MCP and REST alike; every change, and every read of contacts, conversations
 * or knowledge, needs the scope its REST twin needs. A token gets the same answer from a tool and its REST twin.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { failure } from "./support/Contract.js"
import { mcpSession, textOf } from "./support/McpClient.js"
import { createPipeline, createStage, get, ok, post, put } from "./support/Opportunities.js"
import { seedUser, TestServerLive, tokenFor } from "./support/TestServer.js"

layer(TestServerLive(), { excludeTestServices: true })("MCP tools and REST share one scope rule", (it) => {
  it.scoped("mcp:use alone reads pipeline configuration on both surfaces and changes nothing on either", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const pipeline = yield* createPipeline(owner, "Scoped")
      const stage = yield* createStage(owner, pipeline.id, "Open", 1)
      const table = ok(
        yield* post(owner, "/api/user/knowledge-tables", {
          name: "Scoped facts",
          columns: [{ name: "q", data_type: "string", order: 1, is_searchable: true }]
        }),
        "knowledge.create"
      )
      const limited = yield* tokenFor(owner.email, ["mcp:use"])
      const mcp = yield* mcpSession(limited.token)

      // reads of configuration: MCP and REST
      expect((yield* mcp.ok("list_pipelines")).pipelines.map((p) => p.id)).toEqual([pipeline.id])
      expect((yield* mcp.ok("get_pipeline", { pipeline_id: pipeline.id })).pipeline.stages.map((s) => s.id))
        .toEqual([stage.id])
      expect((yield* mcp.ok("list_pipeline_stages", { pipeline_id: pipeline.id })).stages).toHaveLength(1)
      expect(ok(yield* get(limited, `/api/user/pipelines/${pipeline.id}`), "pipelines.get").id).toBe(pipeline.id)
      expect(ok(yield* get(limited, `/api/user/pipelines/${pipeline.id}/stages`), "pipelines.listStages"))
        .toHaveLength(1)

      // changes: refused on both, with the same scope named
      const writes: ReadonlyArray<readonly [string, Record<string, unknown>, string, string, unknown]> = [
        [
          "create_stage",
          { pipeline_id: pipeline.id, name: "Won", nature: "won", order: 2 },
          "POST",
          `/api/user/pipelines/${pipeline.id}/stages`,
          { name: "Won", nature: "won", order: 2 }
        ],
        [
          "create_action",
          {
            pipeline_id: pipeline.id,
            name: "hook",
            method: "POST",
            url: "https://crm.example.com/x",
            is_active: false,
            fixed_trigger: "custom"
          },
          "POST",
          `/api/user/pipelines/${pipeline.id}/actions`,
          { name: "hook", method: "POST", url: "https://crm.example.com/x", is_active: false, fixed_trigger: "custom" }
        ],
        [
          "update_pipeline",
          { pipeline_id: pipeline.id, persona: "Brief" },
          "PUT",
          `/api/user/pipelines/${pipeline.id}`,
          { persona: "Brief" }
        ],
        [
          "create_knowledge_table",
          { name: "More", columns: [{ name: "q", data_type: "string", order: 1, is_searchable: true }] },
          "POST",
          "/api/user/knowledge-tables",
          { name: "More", columns: [{ name: "q", data_type: "string", order: 1, is_searchable: true }] }
        ]
      ]
      for (const [tool, args, method, path, body] of writes) {
        const refused = yield* mcp.call(tool, args)
        const scope = tool === "create_knowledge_table" ? "knowledge:write" : "pipelines:write"
        expect(refused.isError, tool).toBe(true)
        expect(textOf(refused)).toBe(`Missing required scope: ${scope}`)
        expect(refused.structuredContent).toMatchObject({ error: "Forbidden", scope })
        const rest = yield* (method === "PUT" ? put(limited, path, body) : post(limited, path, body))
        expect(rest.status, `${method} ${path}`).toBe(403)
        expect(failure(rest).message).toBe(`Missing required scope: ${scope}`)
      }
      // nothing was made
      expect(ok(yield* get(owner, `/api/user/pipelines/${pipeline.id}/stages`), "pipelines.listStages")).toHaveLength(1)
      expect(ok(yield* get(owner, `/api/user/pipelines/${pipeline.id}/actions`), "automation.listActions")).toEqual([])
      expect(ok(yield* get(owner, `/api/user/pipelines/${pipeline.id}`), "pipelines.get").persona).toBeNull()

      // reads of data beyond configuration need their own scope on both
      for (
        const [tool, args, path, scope] of [
          ["list_opportunities", {}, "/api/user/contacts/1/opportunities", "opportunities:read"],
          ["list_knowledge_tables", {}, "/api/user/knowledge-tables", "knowledge:read"],
          [
            "search_knowledge_table",
            { knowledge_table_id: table.id, query: "x" },
            `/api/user/knowledge-tables/${table.id}/columns`,
            "knowledge:read"
          ],
          ["get_account_summary", {}, "/api/user/analytics/summary", "opportunities:read"]
        ] as const
      ) {
        expect(textOf(yield* mcp.call(tool, args)), tool).toBe(`Missing required scope: ${scope}`)
        expect((yield* get(limited, path)).status, path).toBe(403)
      }
    }))

  it.scoped("a token with the write scope builds through MCP what it could build over REST", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const builder = yield* tokenFor(owner.email, ["mcp:use", "pipelines:write"])
      const mcp = yield* mcpSession(builder.token)
      const { pipeline } = yield* mcp.ok("create_pipeline", {
        name: "Built",
        agent_type_id: 1,
        ai_model_id: 1,
        language_id: 1
      })
      const { stage } = yield* mcp.ok("create_stage", {
        pipeline_id: pipeline.id,
        name: "Open",
        nature: "neutral",
        order: 1
      })
      expect(
        (yield* createStage(builder, pipeline.id, "Won", 2, "won")).order
      ).toBe(2)
      expect((yield* mcp.ok("list_pipeline_stages", { pipeline_id: pipeline.id })).stages.map((s) => s.id)[0])
        .toBe(stage.id)
      // knowledge is another scope
      const refused = yield* mcp.call("create_knowledge_table", {
        name: "Facts",
        columns: [{ name: "q", data_type: "string", order: 1, is_searchable: true }]
      })
      expect(textOf(refused)).toBe("Missing required scope: knowledge:write")
    }))
})
