/**
 * Issue 19, human handoff, through the real server with the deterministic local model: operators read
 * conversations (list, one, messages, read markers), the agent asks for a person when the contact asks
 * for one (bridge message, summary, silence while waiting or taken), operators take over, write, hand back
 * with a note the agent then uses, rules (keywords) ask for a person, timeouts fire, moves that do not
 * apply are 409, other workspaces' conversations are 404, and operators see it all live on the socket
 * (the agent typing included).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { io, type Socket } from "socket.io-client"
import { failure } from "./support/Contract.js"
import { withKnowledge } from "./support/Knowledge.js"
import { createStage, get, ok, post, put, sqlRows } from "./support/Opportunities.js"
import { fetchJson, giveCredits, seedUser, TestServer, TestServerLive, tokenFor } from "./support/TestServer.js"
import { basic, say, webCredentials } from "./support/WebChat.js"
import { eventually, webhookReceiver } from "./support/WebhookReceiver.js"

type Caller = {
  readonly token: string
  readonly workspace_id: number
  readonly user_id: number
  readonly email: string
}

/**
 * A pipeline answering at once, two stages (one won), a web channel with a callback URL; `settings` for the pipeline.
 */
const agent = (owner: Caller, callbackUrl: string | null, settings: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    yield* giveCredits(owner.workspace_id, { credits: 100, is_subscription_active: true })
    const pipeline = ok(
      yield* post(owner, "/api/user/pipelines", {
        name: `Support ${Math.random().toString(36).slice(2, 8)}`,
        agent_type_id: 1,
        ai_model_id: 1,
        language_id: 1,
        reply_debounce_ms: 0,
        instructions: "Help customers with their bicycle orders.",
        ...settings
      }),
      "pipelines.create"
    )
    yield* withKnowledge(owner as Caller & { workspace_id: number }, pipeline.id, [
      "We sell bicycles.",
      "Delivery takes three days."
    ])
    const stage = yield* createStage(owner, pipeline.id, "Open", 1)
    const won = yield* createStage(owner, pipeline.id, "Closed won", 2, "won")
    const channel = webCredentials(ok(
      yield* post(owner, "/api/user/channels", {
        kind: "web",
        pipeline_id: pipeline.id,
        ...(callbackUrl === null ? {} : { callback_url: callbackUrl })
      }),
      "channels.create"
    ))
    return { pipeline, stage, won, channel }
  })

const conversationOf = (contactKey: string) =>
  Effect.map(
    sqlRows<{ id: number }>`select conversation_id as id from messages where external_chat_id = ${contactKey} limit 1`,
    (r) => r[0]!.id
  )

/** The conversation as `GET /api/user/conversations/{id}` answers it. */
const conversation = (who: Caller, id: number) =>
  Effect.map(get(who, `/api/user/conversations/${id}`), (r) => ok(r, "conversations.get"))

const messagesOf = (who: Caller, id: number, query = "") =>
  Effect.map(get(who, `/api/user/conversations/${id}/messages${query}`), (r) => ok(r, "conversations.messages"))

/** The conversations list, as `GET /api/user/conversations` answers it (`query` with its `?`). */
const listed = (who: { readonly token: string }, query = "") =>
  Effect.map(get(who, `/api/user/conversations${query}`), (r) => ok(r, "conversations.list"))

/**
 * Waits for the contact's message `messageId` to be handled without a reply (its `no_reply_reason` set): read
 * by id, not as the newest message, since a bridge message may be stored after it.
 */
const unanswered = (who: Caller, id: number, messageId: string) =>
  eventually(
    Effect.map(
      messagesOf(who, id),
      (p) => p.messages.find((m) => m.id === messageId && m.no_reply_reason !== null)
    )
  )

const handoff = (who: Caller, id: number, body: Record<string, unknown>) =>
  post(who, `/api/user/conversations/${id}/handoff`, body)

/** Waits for the assistant messages of a conversation to reach `n`. */
const assistantMessages = (id: number, n: number) =>
  eventually(
    Effect.map(
      sqlRows<{ id: string; message: string; call_type: string; is_manual: boolean }>`
      select id, message, call_type, is_manual from messages where conversation_id = ${id} and role = 'assistant'
      and status <> 'ai_generated' order by created_at, id`,
      (rows) => (rows.length >= n ? rows : undefined)
    ),
    20_000
  )

/** What the operators' socket events carry, as far as these tests read them (docs/handoff.md). */
interface OperatorEvent {
  readonly name: string
  readonly payload: {
    readonly conversation_id?: number
    readonly message_id?: string
    readonly sender?: string
    readonly event?: { readonly id: number; readonly action: string }
  }
}

/** The answer to `join-workspace`. */
interface JoinAck {
  readonly status: boolean
  readonly channel?: string
}

/** A socket.io client joined to a workspace's operator channel, collecting what it receives. */
const operatorSocket = (token: string, workspaceId: number) =>
  Effect.acquireRelease(
    Effect.flatMap(TestServer, ({ baseUrl }) =>
      Effect.promise(() =>
        new Promise<{ socket: Socket; events: Array<OperatorEvent>; ack: JoinAck }>((resolve) => {
          const socket = io(baseUrl, { transports: ["websocket"], forceNew: true })
          const events: Array<OperatorEvent> = []
          socket.onAny((name: string, payload: OperatorEvent["payload"]) =>
            events.push({ name, payload })
          )
          socket.on("connect", () =>
            socket.emit(
              "join-workspace",
              { workspace_id: workspaceId, token },
              (ack: JoinAck) => resolve({ socket, events, ack })
            ))
        })
      )),
    ({ socket }) => Effect.sync(() => socket.close())
  )

// the live clock: replies, timers and sockets take real time
layer(TestServerLive({ OUTBOUND_ALLOW_PRIVATE: "true" }), { excludeTestServices: true })("human handoff", (it) => {
  describe("conversations an operator can read", () => {
    it.effect("lists the workspace's conversations with contact, opportunity, handoff, preview and unread count; read markers clear it", () =>
      Effect.gen(function*() {
        const owner = (yield* seedUser()) as Caller
        const { channel, pipeline, stage } = yield* agent(owner, null)
        yield* say(channel, "reader-1", "Hello, how long does delivery take?")
        const id = yield* conversationOf("reader-1")
        yield* assistantMessages(id, 1)

        const page = yield* listed(owner)
        expect(page.next_cursor).toBeNull()
        expect(page.conversations).toHaveLength(1)
        const row = page.conversations[0]
        expect(row).toMatchObject({
          id,
          status: "active",
          channel_id: channel.id,
          channel_kind: "web",
          contact: { identifier: "reader-1" },
          opportunity: { pipeline_id: pipeline.id, stage_id: stage.id, stage_name: "Open", stage_nature: "neutral" },
          handoff: { state: "ai", requested_by: null, assignee_id: null },
          messages_count: 2,
          unread_count: 1
        })
        // the contact's last message, though the agent answered after it
        expect(row).toMatchObject({ last_message_preview: "Hello, how long does delivery take?", reply_failed: false })
        expect((yield* assistantMessages(id, 1))[0]!.message).toContain("three days")

        const messages = yield* messagesOf(owner, id)
        expect(messages.messages.map((m) => [m.role, m.sender])).toEqual([["assistant", "ai"], [
          "user",
          "contact"
        ]])
        expect(messages.messages[1]).toMatchObject({
          message: "Hello, how long does delivery take?",
          no_reply_reason: null,
          deliveries: []
        })

        const read = ok(yield* post(owner, `/api/user/conversations/${id}/read`, {}), "conversations.read")
        expect(read).toMatchObject({ conversation_id: id, unread_count: 0 })
        expect((yield* conversation(owner, id)).unread_count).toBe(0)
        expect((yield* listed(owner, "?unread=true")).conversations).toHaveLength(0)
        yield* say(channel, "reader-1", "Thanks!")
        expect((yield* listed(owner, "?unread=true")).conversations.map((c) => c.id)).toEqual([id])
      }))

    it.effect("filters by pipeline, handoff state, contact text and message text, and pages with a cursor", () =>
      Effect.gen(function*() {
        const owner = (yield* seedUser()) as Caller
        const { channel, pipeline } = yield* agent(owner, null)
        for (const key of ["page-a", "page-b", "page-c"]) {
          yield* say(channel, key, `Hi from ${key}`)
          yield* assistantMessages(yield* conversationOf(key), 1)
        }
        yield* say(channel, "page-b", "Do you sell tandem bikes?")
        yield* assistantMessages(yield* conversationOf("page-b"), 2)
        const first = yield* listed(owner, "?per_page=2")
        expect(first.conversations).toHaveLength(2)
        expect(first.conversations[0]!.contact.identifier).toBe("page-b")
        const second = yield* listed(owner, `?per_page=2&cursor=${first.next_cursor}`)
        expect(second.conversations).toHaveLength(1)
        expect(second.next_cursor).toBeNull()
        expect(new Set([...first.conversations, ...second.conversations].map((c) => c.contact.identifier)))
          .toEqual(new Set(["page-a", "page-b", "page-c"]))
        expect((yield* listed(owner, "?q=tandem")).conversations.map((c) => c.contact.identifier)).toEqual(["page-b"])
        expect((yield* listed(owner, "?q=page-c")).conversations.map((c) => c.contact.identifier)).toEqual(["page-c"])
        expect((yield* listed(owner, `?pipeline_id=${pipeline.id}&handoff=human`)).conversations).toHaveLength(0)
        const bad = yield* get(owner, "/api/user/conversations?cursor=nonsense&handoff=maybe")
        expect(bad.status).toBe(422)
        expect(failure(bad).validation.map((v) => v.field)).toContain("handoff")
      }))

    it.effect("another workspace's conversation is 404 on every endpoint and never listed; reading needs conversations:read", () =>
      Effect.gen(function*() {
        const owner = (yield* seedUser()) as Caller
        const other = (yield* seedUser()) as Caller
        const { channel } = yield* agent(owner, null)
        yield* say(channel, "private-1", "Hello")
        const id = yield* conversationOf("private-1")
        for (const path of [`/api/user/conversations/${id}`, `/api/user/conversations/${id}/messages`]) {
          expect((yield* get(other, path)).status).toBe(404)
        }
        expect((yield* post(other, `/api/user/conversations/${id}/read`, {})).status).toBe(404)
        expect((yield* handoff(other, id, { action: "take" })).status).toBe(404)
        expect((yield* put(other, `/api/user/conversations/${id}`, { status: "paused" })).status).toBe(404)
        expect((yield* listed(other)).conversations).toHaveLength(0)
        const writer = yield* tokenFor(owner.email, ["conversations:write"])
        const denied = yield* get({ token: writer.token }, "/api/user/conversations")
        expect(denied.status).toBe(403)
        expect(failure(denied).message).toBe("Missing required scope: conversations:read")
        expect((yield* conversation(owner, id)).handoff.state).toBe("ai")
      }))
  })

  describe("one handoff state machine", () => {
    it.scoped("the agent asks for a person when the contact does: bridge message, summary, silence while waiting; an operator takes over, writes, and hands back with a note for the agent, never said", () =>
      Effect.gen(function*() {
        const receiver = yield* webhookReceiver(() => "ok")
        const owner = (yield* seedUser()) as Caller
        const { channel } = yield* agent(owner, receiver.url)
        const live = yield* operatorSocket(owner.token, owner.workspace_id)
        expect(live.ack).toEqual({ status: true, channel: `workspace.${owner.workspace_id}` })

        yield* say(channel, "asker-1", "My order arrived broken. Can I talk to a human please?")
        const id = yield* conversationOf("asker-1")
        const [bridge] = yield* assistantMessages(id, 1)
        expect(bridge!.message).toBe(
          "I'm bringing in a member of our team to help with this. They will reply here shortly."
        )
        const waiting = yield* eventually(
          Effect.map(conversation(owner, id), (c) => (c.handoff.summary !== null ? c : undefined)),
          20_000
        )
        expect(waiting.status).toBe("active")
        expect(waiting.handoff).toMatchObject({
          state: "waiting",
          requested_by: "ai",
          reason: "The contact asked to talk to a person"
        })
        expect(waiting.handoff.summary).toContain("Wants: My order arrived broken.")
        expect(waiting.notes.some((n) => n.startsWith("Handoff summary: Wants:"))).toBe(true)
        expect(waiting.handoff_events.map((e) => [e.action, e.from_state, e.to_state, e.actor])).toEqual([[
          "request",
          "ai",
          "waiting",
          "ai"
        ]])

        // silent while waiting: the contact's message is stored and says why
        const silent = yield* unanswered(owner, id, yield* say(channel, "asker-1", "Hello? Anyone there?"))
        expect(silent).toMatchObject({ sender: "contact", no_reply_reason: "waiting_for_person" })

        const taken = ok(yield* handoff(owner, id, { action: "take" }), "conversations.handoff")
        expect(taken).toMatchObject({ status: "paused", handoff: { state: "human", assignee_id: owner.user_id } })
        expect((yield* handoff(owner, id, { action: "take" })).status).toBe(409)

        const sent = ok(
          yield* post(owner, `/api/user/${id}/messages`, { message: "Sorry about that! A replacement is on its way." }),
          "messages.send"
        )
        expect(yield* unanswered(owner, id, yield* say(channel, "asker-1", "Great, thank you"))).toMatchObject({
          no_reply_reason: "paused"
        })
        const hook = yield* eventually(
          Effect.sync(() => receiver.received.find((h) => JSON.parse(h.rawBody).message_id === sent._id))
        )
        expect(JSON.parse(hook.rawBody)).toMatchObject({
          sender: "operator",
          sender_name: expect.stringMatching(/^User \d+$/),
          text: "Sorry about that! A replacement is on its way."
        })
        expect(
          JSON.parse(receiver.received.find((h) => JSON.parse(h.rawBody).message_id === bridge!.id)!.rawBody).sender
        ).toBe("ai")
        // the chat's history names who wrote each message: the operator by name
        const { baseUrl } = yield* TestServer
        const history = yield* fetchJson(`${baseUrl}/api/user/messages/webchat?contact_id=asker-1&per_page=50`, {
          headers: { authorization: basic(channel) }
        })
        const records = ok(history, "webChat.history").data
        expect(records.find((r) => r.id === sent._id)).toMatchObject({
          sender: "operator",
          sender_name: expect.stringMatching(/^User \d+$/)
        })
        expect(records.find((r) => r.id === bridge!.id)).toMatchObject({ sender: "ai", sender_name: null })
        expect(records.filter((r) => r.role === "user").every((r) => r.sender === "contact" && r.sender_name === null))
          .toBe(true)

        const returned = ok(
          yield* handoff(owner, id, {
            action: "return",
            note: "Replacement approved. Offer the voucher code BIKE10 for the trouble."
          }),
          "conversations.handoff"
        )
        expect(returned).toMatchObject({
          status: "active",
          handoff: {
            state: "ai",
            assignee_id: null,
            return_note: "Replacement approved. Offer the voucher code BIKE10 for the trouble."
          }
        })
        yield* say(channel, "asker-1", "Is there a voucher for the trouble?")
        const replies = yield* assistantMessages(id, 3)
        // the note steers the agent (docs/handoff.md): it is for the agent, never said to the contact
        expect(replies[2]!.message).not.toContain("BIKE10")
        expect(replies[2]!.message).not.toContain("Replacement approved")
        expect((yield* handoff(owner, id, { action: "return" })).status).toBe(409)

        const all = yield* messagesOf(owner, id)
        expect(all.messages.filter((m) => m.role === "assistant").map((m) => m.sender)).toEqual([
          "ai",
          "operator",
          "ai"
        ])
        const operatorMessage = all.messages.find((m) => m.sender === "operator")!
        expect(operatorMessage.sender_id).toBe(owner.user_id)
        expect(operatorMessage.deliveries.length).toBeGreaterThanOrEqual(1)
        expect(operatorMessage.deliveries[0]!.status_code).toBe(200)

        // every transition once on the operators' socket, and the workspace's messages
        const handoffs = yield* eventually(Effect.sync(() => {
          const seen = live.events.filter((e) => e.name === "handoff")
          return seen.length >= 3 ? seen : undefined
        }))
        expect(handoffs.map((e) => [e.payload.conversation_id, e.payload.event?.action])).toEqual([[id, "request"], [
          id,
          "take"
        ], [id, "return"]])
        expect(new Set(handoffs.map((e) => e.payload.event?.id)).size).toBe(3)
        const newMessages = live.events.filter((e) => e.name === "new_message" && e.payload.conversation_id === id)
        expect(newMessages.map((e) => e.payload.sender)).toEqual(expect.arrayContaining(["contact", "ai", "operator"]))
      }))

    it.effect("moves that do not apply are 409; assign needs a member; PUT status paused and active are take and return", () =>
      Effect.gen(function*() {
        const owner = (yield* seedUser()) as Caller
        const stranger = (yield* seedUser()) as Caller
        const { channel } = yield* agent(owner, null)
        yield* say(channel, "moves-1", "Hello")
        const id = yield* conversationOf("moves-1")
        yield* assistantMessages(id, 1)
        const conflict = yield* handoff(owner, id, { action: "return" })
        expect(conflict.status).toBe(409)
        expect(conflict.body).toMatchObject({
          status: false,
          code: 409,
          message: "The agent already has this conversation."
        })
        ok(yield* handoff(owner, id, { action: "request", reason: "VIP customer" }), "conversations.handoff")
        // the operator's request sends the contact the bridge message
        const bridge = yield* assistantMessages(id, 2)
        expect(bridge.map((m) => m.call_type)).toEqual(["ai", "handoff_bridge"])
        expect(failure(yield* handoff(owner, id, { action: "request" })).message).toBe(
          "A person was already asked for in this conversation."
        )
        const missing = yield* handoff(owner, id, { action: "assign" })
        expect(missing.status).toBe(422)
        expect(failure(missing).validation.map((v) => v.field)).toEqual(["assignee_id"])
        const outsider = yield* handoff(owner, id, { action: "assign", assignee_id: stranger.user_id })
        expect(outsider.status).toBe(422)
        expect(
          ok(yield* handoff(owner, id, { action: "assign", assignee_id: owner.user_id }), "conversations.handoff")
            .handoff
        ).toMatchObject({
          state: "human",
          assignee_id: owner.user_id
        })
        expect((yield* handoff(owner, id, { action: "assign", assignee_id: owner.user_id })).status).toBe(409)
        expect((yield* handoff(owner, id, { action: "dance" })).status).toBe(422)

        const resumed = yield* put(owner, `/api/user/conversations/${id}`, { status: "active" })
        expect(ok(resumed, "conversations.update")).toEqual({ id, status: "active" })
        expect((yield* conversation(owner, id)).handoff.state).toBe("ai")
        expect(ok(yield* put(owner, `/api/user/conversations/${id}`, { status: "paused" }), "conversations.update"))
          .toEqual({
            id,
            status: "paused"
          })
        const paused = yield* conversation(owner, id)
        expect(paused.handoff).toMatchObject({ state: "human", assignee_id: owner.user_id })
        expect(paused.handoff_events.map((e) => e.action)).toEqual(["request", "assign", "return", "take"])
      }))

    it.effect("a pipeline's keyword asks for a person (rule); its timeout sends a second bridge or hands back", () =>
      Effect.gen(function*() {
        const owner = (yield* seedUser()) as Caller
        const { channel, pipeline } = yield* agent(owner, null, {
          handoff_keywords: ["refund"],
          handoff_timeout_seconds: 60,
          handoff_timeout_action: "second_bridge",
          handoff_bridge_text: "One moment, a colleague will join."
        })
        expect(ok(yield* get(owner, `/api/user/pipelines/${pipeline.id}`), "pipelines.get")).toMatchObject({
          handoff_keywords: ["refund"],
          handoff_timeout_seconds: 60,
          handoff_timeout_action: "second_bridge"
        })
        yield* say(channel, "rule-1", "I want a REFUND now")
        const id = yield* conversationOf("rule-1")
        const [bridge] = yield* assistantMessages(id, 1)
        expect(bridge).toMatchObject({ message: "One moment, a colleague will join.", call_type: "handoff_bridge" })
        const waiting = yield* conversation(owner, id)
        expect(waiting.handoff).toMatchObject({
          state: "waiting",
          requested_by: "rule",
          reason: "The contact wrote \"refund\""
        })
        expect(Date.parse(waiting.handoff.due_at!) - Date.parse(waiting.handoff.requested_at!)).toBe(60_000)

        // the wait runs out (moved into the past rather than waited for)
        yield* sqlRows`update conversations set handoff_due_at = now() - interval '1 second' where id = ${id}`
        const [, second] = yield* assistantMessages(id, 2)
        expect(second!.message).toBe(
          "Thank you for waiting. Our team has your conversation and will reply here as soon as they can."
        )
        const after = yield* conversation(owner, id)
        expect(after.handoff).toMatchObject({ state: "waiting", due_at: null })
        expect(after.handoff_events.map((e) => [e.action, e.actor])).toEqual([["request", "rule"], [
          "timeout",
          "system"
        ]])

        ok(
          yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { handoff_timeout_action: "return" }),
          "pipelines.update"
        )
        yield* sqlRows`update conversations set handoff_due_at = now() - interval '1 second' where id = ${id}`
        yield* eventually(Effect.map(conversation(owner, id), (c) => c.handoff.state === "ai" || undefined))
        // handed back by the timeout, not by an operator: the same message may ask again later
        yield* say(channel, "rule-1", "Where is my refund?")
        yield* eventually(Effect.map(conversation(owner, id), (c) => c.handoff.state === "waiting" || undefined))
      }))

    it.effect("with an ai_generated bridge the agent writes the contact's bridge message itself, for its own request and an operator's", () =>
      Effect.gen(function*() {
        const owner = (yield* seedUser()) as Caller
        const { channel } = yield* agent(owner, null, { handoff_bridge_mode: "ai_generated" })
        yield* say(channel, "written-1", "I would like to speak to a real person")
        const id = yield* conversationOf("written-1")
        const [own] = yield* assistantMessages(id, 1)
        expect(own).toMatchObject({
          call_type: "ai",
          message: "I'm asking a member of our team to take over. They will reply here shortly."
        })
        ok(yield* handoff(owner, id, { action: "return" }), "conversations.handoff")
        ok(yield* handoff(owner, id, { action: "request", reason: "Escalation" }), "conversations.handoff")
        const [, operators] = yield* assistantMessages(id, 2)
        expect(operators).toMatchObject({
          call_type: "handoff_bridge",
          message: "I'm asking a member of our team to take over. They will reply here shortly."
        })
      }))

    it.effect("an operator's hand-back does not loop: the rule does not ask again for the message it was handed back after", () =>
      Effect.gen(function*() {
        const owner = (yield* seedUser()) as Caller
        const { channel } = yield* agent(owner, null, { handoff_keywords: ["refund"] })
        yield* say(channel, "loop-1", "refund please")
        const id = yield* conversationOf("loop-1")
        yield* eventually(Effect.map(conversation(owner, id), (c) => c.handoff.state === "waiting" || undefined))
        expect(yield* unanswered(owner, id, yield* say(channel, "loop-1", "refund, refund!"))).toMatchObject({
          no_reply_reason: "waiting_for_person"
        })
        ok(yield* handoff(owner, id, { action: "return", note: "Refund sent." }), "conversations.handoff")
        // the messages that asked are never read again: the next turn answers only what came after the hand-back
        yield* say(channel, "loop-1", "ok thanks")
        const replies = yield* eventually(
          Effect.map(
            sqlRows<
              { call_type: string }
            >`select call_type from messages where conversation_id = ${id} and role = 'assistant'
                                         and call_type = 'ai' and status <> 'ai_generated'`,
            (rows) => rows.length >= 1 ? rows : undefined
          ),
          20_000
        )
        expect(replies).toHaveLength(1)
        const after = yield* conversation(owner, id)
        expect(after.handoff.state).toBe("ai")
        expect(after.handoff_events.map((e) => e.action)).toEqual(["request", "return"])
      }))

    it.effect("a won stage resolves the handoff: the agent has the conversation again", () =>
      Effect.gen(function*() {
        const owner = (yield* seedUser()) as Caller
        const { channel, won } = yield* agent(owner, null)
        yield* say(channel, "won-1", "Hello")
        const id = yield* conversationOf("won-1")
        ok(yield* handoff(owner, id, { action: "take" }), "conversations.handoff")
        const c = yield* conversation(owner, id)
        ok(
          yield* put(owner, `/api/user/opportunities/${c.opportunity!.id}`, { stage_id: won.id }),
          "opportunities.update"
        )
        const resolved = yield* eventually(
          Effect.map(conversation(owner, id), (x) => x.handoff.state === "ai" ? x : undefined),
          20_000
        )
        expect(resolved.status).toBe("active")
        expect(resolved.handoff_events.map((e) => [e.action, e.actor])).toEqual([["take", "operator"], [
          "resolve",
          "system"
        ]])
      }))

    it.effect("the summary says what the contact wants and what is open from the whole conversation, not its last two messages", () =>
      Effect.gen(function*() {
        const owner = (yield* seedUser()) as Caller
        const { channel } = yield* agent(owner, null)
        yield* say(channel, "summary-1", "How long does delivery take?")
        const id = yield* conversationOf("summary-1")
        yield* assistantMessages(id, 1)
        yield* say(channel, "summary-1", "Do you offer a discount for schools?")
        yield* assistantMessages(id, 2)
        yield* say(channel, "summary-1", "Thanks. Can I talk to a person please?")
        const waiting = yield* eventually(
          Effect.map(conversation(owner, id), (c) => (c.handoff.summary !== null ? c : undefined)),
          20_000
        )
        // delivery was answered from the knowledge; the discount question was not
        expect(waiting.handoff.summary).toBe(
          "Wants: Do you offer a discount for schools?\nTried: Delivery takes three days.\nOpen: Do you offer a discount for schools?"
        )
      }))

    it.effect("the website widget's 'Talk to a person' is a request by the contact; asking again answers the state", () =>
      Effect.gen(function*() {
        const owner = (yield* seedUser()) as Caller
        const { pipeline } = yield* agent(owner, null)
        const widget = ok(
          yield* post(owner, "/api/user/channels", {
            kind: "widget",
            pipeline_id: pipeline.id,
            allowed_origins: ["https://shop.example.com"]
          }),
          "channels.create"
        )
        const { baseUrl } = yield* TestServer
        const headers = { origin: "https://shop.example.com", "content-type": "application/json" }
        const session = ok(
          yield* fetchJson(`${baseUrl}/api/widget/session`, {
            method: "POST",
            headers,
            body: JSON.stringify({ client_id: widget.client_id })
          }),
          "widget.session"
        )
        // the session says who has the conversation, so the widget offers a person only while the AI has it
        expect(session.handoff_state).toBe("ai")
        const ask = fetchJson(`${baseUrl}/api/widget/handoff`, {
          method: "POST",
          headers: { ...headers, authorization: `Bearer ${session.session}` }
        })
        expect(yield* ask).toMatchObject({ status: 200, body: { data: { state: "waiting" } } })
        expect(yield* ask).toMatchObject({ status: 200, body: { data: { state: "waiting" } } })
        const id = session.conversation_id
        const c = yield* conversation(owner, id)
        expect(c.handoff).toMatchObject({ state: "waiting", requested_by: "contact" })
        expect(c.handoff_events).toHaveLength(1)
        const [bridge] = yield* assistantMessages(id, 1)
        expect(bridge!.call_type).toBe("handoff_bridge")
        const resumed = ok(
          yield* fetchJson(`${baseUrl}/api/widget/session`, {
            method: "POST",
            headers,
            body: JSON.stringify({ client_id: widget.client_id, session: session.session })
          }),
          "widget.session"
        )
        expect(resumed).toMatchObject({ conversation_id: id, handoff_state: "waiting" })
        const anonymous = yield* Effect.promise(() =>
          fetch(`${baseUrl}/api/widget/handoff`, { method: "POST", headers }).then((r) => r.status)
        )
        expect(anonymous).toBe(401)
      }))

    it.scoped("the operators' socket sees the agent typing in a conversation, then its reply", () =>
      Effect.gen(function*() {
        const owner = (yield* seedUser()) as Caller
        const { channel } = yield* agent(owner, null)
        const live = yield* operatorSocket(owner.token, owner.workspace_id)
        expect(live.ack.status).toBe(true)
        yield* say(channel, "typing-1", "How long does delivery take?")
        const id = yield* conversationOf("typing-1")
        const [reply] = yield* assistantMessages(id, 1)
        const replied = yield* eventually(Effect.sync(() => {
          const at = live.events.findIndex((e) => e.name === "new_message" && e.payload.message_id === reply!.id)
          return at >= 0 ? at : undefined
        }))
        expect(live.events[replied]!.payload).toMatchObject({ conversation_id: id, role: "assistant", sender: "ai" })
        const typing = live.events.findIndex((e) => e.name === "agent_typing")
        expect(typing).toBeGreaterThanOrEqual(0)
        expect(typing).toBeLessThan(replied)
        expect(live.events[typing]!.payload).toEqual({ conversation_id: id, typing: true })
      }))

    it.scoped("a token that cannot read a workspace's conversations is refused on the operators' socket", () =>
      Effect.gen(function*() {
        const owner = (yield* seedUser()) as Caller
        const other = (yield* seedUser()) as Caller
        expect((yield* operatorSocket(other.token, owner.workspace_id)).ack.status).toBe(false)
        const sender = yield* tokenFor(owner.email, ["messages:send"])
        expect((yield* operatorSocket(sender.token, owner.workspace_id)).ack.status).toBe(false)
        expect((yield* operatorSocket("pat_nonsense", owner.workspace_id)).ack.status).toBe(false)
      }))
  })
})
