/**
 * The knowledge source tools over MCP (issue 41): a page of a local site (support/TestSite.ts) added with
 * add_knowledge_source becomes searchable points, list_knowledge_sources shows its state, sync_knowledge_source
 * asks a sync; the same scopes as REST, files refused (they are uploaded over REST or the CLI), and another
 * workspace's table or source is "not found" as over REST.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { ok } from "./support/Contract.js"
import { documentColumns, SOURCES_ENV } from "./support/KnowledgeSources.js"
import { type McpSession, mcpSession, textOf, toolError, validationOf } from "./support/McpClient.js"
import { post } from "./support/Opportunities.js"
import { giveCredits, seedUser, TestServerLive, tokenFor } from "./support/TestServer.js"
import { startTestSite } from "./support/TestSite.js"
import { eventually } from "./support/WebhookReceiver.js"

/** A user with training credits and a document table. */
const fixture = Effect.gen(function*() {
  const owner = yield* seedUser()
  yield* giveCredits(owner.workspace_id, { training_credits: 1_000 })
  const table = ok(
    yield* post(owner, "/api/user/knowledge-tables", { name: "Help center", columns: documentColumns }),
    "knowledge.create"
  )
  return { owner, table: table.id }
})

const site = Effect.acquireRelease(Effect.promise(() => startTestSite()), (s) => Effect.promise(() => s.close()))

/** The source as list_knowledge_sources shows it once its sync ended and it was synced after `since`. */
const settled = (mcp: McpSession, table: number, source: number, since = "") =>
  eventually(
    Effect.map(mcp.ok("list_knowledge_sources", { knowledge_table_id: table }), (r) => {
      const s = r.knowledge_sources.find((x) => x.id === source)
      return s !== undefined && (s.status === "ready" || s.status === "failed") && (s.last_synced_at ?? "") > since
        ? s
        : undefined
    })
  )

layer(
  TestServerLive(SOURCES_ENV),
  { excludeTestServices: true }
)("knowledge source tools over MCP", (it) => {
  it.scoped("a page added with add_knowledge_source becomes searchable points; sync_knowledge_source syncs it again", () =>
    Effect.gen(function*() {
      const { owner, table } = yield* fixture
      const { origin } = yield* site
      const mcp = yield* mcpSession(owner.token)

      const added = yield* mcp.ok("add_knowledge_source", {
        knowledge_table_id: table,
        kind: "url",
        url: `${origin}/pricing`,
        sync: "weekly"
      })
      const source = added.knowledge_source
      expect(source).toMatchObject({ kind: "url", url: `${origin}/pricing`, status: "pending", sync: "weekly" })
      expect(added.next_steps[0]).toContain(`list_knowledge_sources with knowledge_table_id ${table}`)

      const ready = yield* settled(mcp, table, source.id)
      expect(ready).toMatchObject({ status: "ready", pages: 1, error: null, name: `${origin}/pricing` })
      expect(ready.points).toBeGreaterThan(0)
      const found = yield* mcp.ok("search_knowledge_table", { knowledge_table_id: table, query: "annual plan price" })
      expect(found.results.length).toBeGreaterThan(0)

      const synced = yield* mcp.ok("sync_knowledge_source", {
        knowledge_table_id: table,
        knowledge_source_id: source.id
      })
      expect(synced.knowledge_source.id).toBe(source.id)
      const again = yield* settled(mcp, table, source.id, ready.last_synced_at!)
      // the page did not change: the same chunks, kept
      expect(again).toMatchObject({ status: "ready", points: ready.points })

      // a file cannot be sent as a tool's JSON: the kinds are the web ones
      const file = yield* mcp.call("add_knowledge_source", { knowledge_table_id: table, kind: "file", url: "x.pdf" })
      expect(validationOf(file).map((v) => v.field)).toEqual(["kind"])
    }))

  it.scoped("the tools need the REST scopes, and another workspace's table or source is not found", () =>
    Effect.gen(function*() {
      const { owner, table } = yield* fixture
      const { origin } = yield* site
      const source = (yield* (yield* mcpSession(owner.token)).ok("add_knowledge_source", {
        knowledge_table_id: table,
        kind: "url",
        url: `${origin}/`
      })).knowledge_source

      const reader = yield* mcpSession((yield* tokenFor(owner.email, ["mcp:use", "knowledge:read"])).token)
      expect(
        (yield* reader.ok("list_knowledge_sources", { knowledge_table_id: table })).knowledge_sources.map((s) => s.id)
      )
        .toEqual([source.id])
      for (
        const [tool, args] of [
          ["add_knowledge_source", { knowledge_table_id: table, kind: "url", url: `${origin}/pricing` }],
          ["sync_knowledge_source", { knowledge_table_id: table, knowledge_source_id: source.id }]
        ] as const
      ) {
        const refused = yield* reader.call(tool, args)
        expect(toolError(refused), tool).toMatchObject({ error: "Forbidden", scope: "knowledge:write" })
        expect(textOf(refused)).toBe("Missing required scope: knowledge:write")
      }
      const bare = yield* mcpSession((yield* tokenFor(owner.email, ["mcp:use"])).token)
      expect(textOf(yield* bare.call("list_knowledge_sources", { knowledge_table_id: table })))
        .toBe("Missing required scope: knowledge:read")

      const { owner: stranger, table: theirs } = yield* fixture
      const them = yield* mcpSession(stranger.token)
      for (
        const [tool, args] of [
          ["list_knowledge_sources", { knowledge_table_id: table }],
          ["add_knowledge_source", { knowledge_table_id: table, kind: "url", url: `${origin}/pricing` }],
          ["sync_knowledge_source", { knowledge_table_id: table, knowledge_source_id: source.id }]
        ] as const
      ) {
        expect(toolError(yield* them.call(tool, args)), tool).toEqual({
          error: "NotFound",
          message: "Knowledge table not found."
        })
      }
      // the source id through their own table
      expect(
        toolError(
          yield* them.call("sync_knowledge_source", { knowledge_table_id: theirs, knowledge_source_id: source.id })
        )
      )
        .toEqual({ error: "NotFound", message: "Knowledge source not found." })
      expect((yield* them.ok("list_knowledge_sources", { knowledge_table_id: theirs })).knowledge_sources).toEqual([])
    }))
})
