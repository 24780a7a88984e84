/**
 * Issue 19's conversation tools over MCP, through the SDK's own client against the real server with the
 * deterministic local model: list_conversations finds what the web-chat receiver opened, get_conversation
 * reads it with its latest messages and who sent each, handoff_conversation makes the REST moves with the
 * same rules (a move that does not apply is a HandoffConflict tool error, an assignee outside the
 * workspace a validation error), other workspaces' conversations answer like any tool's not-found, and
 * the tools need the same scopes as `/api/user/conversations`.
 */
import { expect, layer } from "@effect/vitest"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import { mcpClient, textOf, toolError, type ToolName, toolResult } from "./support/McpClient.js"
import { createStage, get, linkWebChannel, ok, post, sqlRows } from "./support/Opportunities.js"
import { giveCredits, seedUser, TestServerLive, tokenFor } from "./support/TestServer.js"
import { say, type WebCredentials } from "./support/WebChat.js"
import { eventually } from "./support/WebhookReceiver.js"

type Caller = {
  readonly token: string
  readonly workspace_id: number
  readonly user_id: number
  readonly email: string
}

/** A pipeline answering at once on the local model, one stage, a web channel. */
const agent = (owner: Caller) =>
  Effect.gen(function*() {
    yield* giveCredits(owner.workspace_id, { credits: 100, is_subscription_active: true })
    const pipeline = ok(
      yield* post(owner, "/api/user/pipelines", {
        name: `Support ${Math.random().toString(36).slice(2, 8)}`,
        agent_type_id: 1,
        ai_model_id: 1,
        language_id: 1,
        reply_debounce_ms: 0,
        instructions: "We sell bicycles. Delivery takes three days."
      }),
      "pipelines.create"
    )
    const stage = yield* createStage(owner, pipeline.id, "Open", 1)
    const channel = yield* linkWebChannel(owner, pipeline.id)
    return { pipeline, stage, channel }
  })

/** The contact says something and the agent answers: the conversation's id. */
const answeredConversation = (
  channel: WebCredentials,
  contactKey: string,
  text: string
) =>
  Effect.gen(function*() {
    yield* say(channel, contactKey, text)
    return yield* eventually(
      Effect.map(
        sqlRows<{ conversation_id: number; n: number }>`
        select conversation_id, count(*) filter (where role = 'assistant' and status <> 'ai_generated')::int as n
        from messages where external_chat_id = ${contactKey} group by conversation_id`,
        (rows) => rows[0] !== undefined && rows[0].n >= 1 ? Number(rows[0].conversation_id) : undefined
      ),
      20_000
    )
  })

/** The SDK's client over Streamable HTTP with the token as a bearer header; closed with the scope. */
const connect = (token: string) =>
  Effect.gen(function*() {
    const client = yield* mcpClient(token)
    const call = (name: string, args: Record<string, unknown> = {}) =>
      Effect.promise(() => client.callTool({ name, arguments: args }) as Promise<CallToolResult>)
    /** A successful call: its structured result (checked against the tool's `ToolResults` schema) and text. */
    const use = <N extends ToolName>(name: N, args: Record<string, unknown> = {}) =>
      Effect.map(call(name, args), (result) => {
        if (result.isError) expect(textOf(result)).toBe(`a successful ${name}`)
        return { structured: toolResult(name, result.structuredContent), text: textOf(result) }
      })
    /** A refused call: its structured error and text. */
    const refused = (name: string, args: Record<string, unknown> = {}) =>
      Effect.map(call(name, args), (result) => {
        expect(result.isError, `${name} should be a tool error: ${textOf(result)}`).toBe(true)
        return { structured: toolError(result), text: textOf(result) }
      })
    return { client, use, refused }
  })

// the live clock: the agent's replies take real time
layer(TestServerLive(), { excludeTestServices: true })("MCP conversation tools", (it) => {
  it.scoped("list_conversations shows a conversation opened through the web-chat receiver; get_conversation reads it with its latest messages and senders", () =>
    Effect.gen(function*() {
      const owner = (yield* seedUser()) as Caller
      const { channel, pipeline, stage } = yield* agent(owner)
      const id = yield* answeredConversation(channel, "mcp-reader-1", "Hello, how long does delivery take?")
      const mcp = yield* connect(owner.token)

      const { structured: page, text } = yield* mcp.use("list_conversations")
      expect(page.next_cursor).toBeNull()
      expect(page.conversations).toHaveLength(1)
      expect(page.conversations[0]).toMatchObject({
        id,
        status: "active",
        channel_id: channel.id,
        channel_kind: "web",
        contact: { identifier: "mcp-reader-1" },
        opportunity: { pipeline_id: pipeline.id, stage_id: stage.id, stage_name: "Open" },
        handoff: { state: "ai", assignee_id: null },
        messages_count: 2,
        unread_count: 1
      })
      // the text is the same JSON, for clients that read text only
      expect(JSON.parse(text)).toEqual(page)
      // the REST filters
      const filtered = yield* mcp.use("list_conversations", {
        pipeline_id: pipeline.id,
        handoff: "ai",
        q: "delivery",
        unread: true,
        limit: 5
      })
      expect(filtered.structured.conversations.map((c) => c.id)).toEqual([id])
      expect((yield* mcp.use("list_conversations", { handoff: "human" })).structured.conversations).toEqual([])
      expect(
        (yield* mcp.use("list_conversations", { channel_id: channel.id, status: "paused" })).structured.conversations
      ).toEqual([])

      const { structured: read, text: readText } = yield* mcp.use("get_conversation", { conversation_id: id })
      expect(read.conversation).toMatchObject({
        id,
        contact: { identifier: "mcp-reader-1" },
        handoff: { state: "ai" },
        handoff_events: []
      })
      expect(read.messages.map((m) => [m.role, m.sender])).toEqual([["assistant", "ai"], ["user", "contact"]])
      expect(read.messages[1]).toMatchObject({
        message: "Hello, how long does delivery take?",
        sender_id: null,
        no_reply_reason: null
      })
      expect(read.has_more_messages).toBe(false)
      expect(JSON.parse(readText)).toEqual(read)
      // the same conversation and messages as REST
      expect(read.conversation).toEqual(ok(yield* get(owner, `/api/user/conversations/${id}`), "conversations.get"))
      expect(read.messages).toEqual(
        ok(yield* get(owner, `/api/user/conversations/${id}/messages`), "conversations.messages").messages
      )

      const newest = yield* mcp.use("get_conversation", { conversation_id: id, messages_limit: 1 })
      expect(newest.structured.messages.map((m) => m.sender)).toEqual(["ai"])
      expect(newest.structured.has_more_messages).toBe(true)
      const earlier = yield* mcp.use("get_conversation", {
        conversation_id: id,
        messages_limit: 1,
        messages_cursor: newest.structured.messages_cursor
      })
      expect(earlier.structured.messages.map((m) => m.sender)).toEqual(["contact"])
      expect(earlier.structured).toMatchObject({ has_more_messages: false, messages_cursor: null })
    }))

  it.scoped("handoff_conversation takes over, and taking again is a HandoffConflict tool error; assign needs a member; the operator's message and the hand-back show in get_conversation", () =>
    Effect.gen(function*() {
      const owner = (yield* seedUser()) as Caller
      const stranger = (yield* seedUser()) as Caller
      const { channel } = yield* agent(owner)
      const id = yield* answeredConversation(channel, "mcp-taker-1", "Hello, I need help with my order")
      const mcp = yield* connect(owner.token)

      const returnEarly = yield* mcp.refused("handoff_conversation", { conversation_id: id, action: "return" })
      expect(returnEarly.structured).toEqual({
        error: "HandoffConflict",
        message: "The agent already has this conversation."
      })

      const taken = yield* mcp.use("handoff_conversation", { conversation_id: id, action: "take" })
      expect(taken.structured.conversation).toMatchObject({
        id,
        status: "paused",
        handoff: { state: "human", assignee_id: owner.user_id }
      })
      const again = yield* mcp.refused("handoff_conversation", { conversation_id: id, action: "take" })
      expect(again.structured).toEqual({ error: "HandoffConflict", message: "You already have this conversation." })
      expect(again.text).toBe("You already have this conversation.")
      // REST sees the same state
      expect(ok(yield* get(owner, `/api/user/conversations/${id}`), "conversations.get").handoff).toMatchObject({
        state: "human",
        assignee_id: owner.user_id
      })

      const outsider = yield* mcp.refused("handoff_conversation", {
        conversation_id: id,
        action: "assign",
        assignee_id: stranger.user_id
      })
      expect(outsider.structured).toMatchObject({ error: "validation", validation: [{ field: "assignee_id" }] })
      const missing = yield* mcp.refused("handoff_conversation", { conversation_id: id, action: "assign" })
      expect(missing.structured.validation!.map((v) => v.field)).toEqual(["assignee_id"])
      const bad = yield* mcp.refused("handoff_conversation", { conversation_id: id, action: "dance" })
      expect(bad.structured).toMatchObject({ error: "validation", validation: [{ field: "action" }] })

      ok(yield* post(owner, `/api/user/${id}/messages`, { message: "A replacement is on its way." }), "messages.send")
      const returned = yield* mcp.use("handoff_conversation", {
        conversation_id: id,
        action: "return",
        note: "Replacement sent."
      })
      expect(returned.structured.conversation).toMatchObject({
        status: "active",
        handoff: { state: "ai", assignee_id: null, return_note: "Replacement sent." }
      })

      const { structured: read } = yield* mcp.use("get_conversation", { conversation_id: id })
      expect(read.messages.map((m) => m.sender)).toEqual(["operator", "ai", "contact"])
      expect(read.messages[0]).toMatchObject({ sender_id: owner.user_id, message: "A replacement is on its way." })
      expect(read.conversation.handoff_events.map((e) => [e.action, e.to_state])).toEqual([["take", "human"], [
        "return",
        "ai"
      ]])
      expect((yield* mcp.use("list_conversations", { handoff: "ai" })).structured.conversations.map((c) => c.id))
        .toEqual([id])
    }))

  it.scoped("another workspace's conversation is a not-found like any tool's; the tools need conversations:read and conversations:write", () =>
    Effect.gen(function*() {
      const owner = (yield* seedUser()) as Caller
      const other = (yield* seedUser()) as Caller
      const { channel, pipeline } = yield* agent(owner)
      const id = yield* answeredConversation(channel, "mcp-private-1", "Hello")
      const outsider = yield* connect(other.token)

      const notFound = { error: "NotFound", message: "Conversation not found." }
      expect((yield* outsider.refused("get_conversation", { conversation_id: id })).structured).toEqual(notFound)
      expect((yield* outsider.refused("handoff_conversation", { conversation_id: id, action: "take" })).structured)
        .toEqual(notFound)
      expect((yield* outsider.use("list_conversations")).structured.conversations).toEqual([])
      // as another tool answers another workspace's pipeline
      expect((yield* outsider.refused("list_pipeline_stages", { pipeline_id: pipeline.id })).structured.error).toBe(
        "NotFound"
      )
      expect((yield* outsider.refused("get_conversation", { conversation_id: 9_007_199_254_740_991 })).structured)
        .toEqual(notFound)

      const bare = yield* connect((yield* tokenFor(owner.email, ["mcp:use"])).token)
      for (const [name, args] of [["list_conversations", {}], ["get_conversation", { conversation_id: id }]] as const) {
        const denied = yield* bare.refused(name, args)
        expect(denied.text).toBe("Missing required scope: conversations:read")
        expect(denied.structured).toEqual({
          error: "Forbidden",
          message: "Missing required scope: conversations:read",
          scope: "conversations:read"
        })
      }
      const reader = yield* connect((yield* tokenFor(owner.email, ["mcp:use", "conversations:read"])).token)
      expect((yield* reader.use("list_conversations")).structured.conversations.map((c) => c.id)).toEqual([id])
      expect((yield* reader.refused("handoff_conversation", { conversation_id: id, action: "take" })).text).toBe(
        "Missing required scope: conversations:write"
      )
      expect(ok(yield* get(owner, `/api/user/conversations/${id}`), "conversations.get").handoff.state).toBe("ai")
      const writer = yield* connect((yield* tokenFor(owner.email, ["mcp:use", "conversations:write"])).token)
      expect(
        (yield* writer.use("handoff_conversation", { conversation_id: id, action: "take" })).structured.conversation
          .handoff.state
      ).toBe("human")
    }))

  it.scoped("bad arguments are validation errors: a limit over 100, a cursor no call returned, an id that is not one", () =>
    Effect.gen(function*() {
      const owner = (yield* seedUser()) as Caller
      const mcp = yield* connect(owner.token)
      expect((yield* mcp.refused("list_conversations", { limit: 101 })).structured.validation!.map((v) => v.field))
        .toEqual(["limit"])
      expect((yield* mcp.refused("list_conversations", { cursor: "nope" })).structured.validation).toEqual([
        { field: "cursor", message: "The cursor field is not a cursor this endpoint returned." }
      ])
      expect(
        (yield* mcp.refused("get_conversation", { conversation_id: "12" })).structured.validation!.map((v) => v.field)
      ).toEqual(["conversation_id"])
      expect(
        (yield* mcp.refused("get_conversation", { conversation_id: 1, messages_limit: 0 })).structured.validation!.map((
          v
        ) => v.field)
      )
        .toEqual(["messages_limit"])
      expect(
        (yield* mcp.refused("handoff_conversation", { conversation_id: 1, action: "take", extra: 1 })).structured.error
      ).toBe("validation")
    }))
})
