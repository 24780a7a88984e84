import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  type Caller,
  createOpportunity,
  expect422,
  expectStatus,
  freshPhone,
  funnel,
  get,
  linkWebChannel,
  ok,
  put,
  sqlRows,
  TIMESTAMP
} from "./support/Opportunities.js"
import { seedUser, TestServerLive } from "./support/TestServer.js"

/** An opportunity created on an existing contact, which joins (here: opens) a conversation on the pipeline's channel. */
const withConversation = (who: Caller) =>
  Effect.gen(function*() {
    const f = yield* funnel(who)
    yield* linkWebChannel(who, f.pipeline.id)
    const first = yield* createOpportunity(who, { pipeline_id: f.pipeline.id, contact: { phone: freshPhone() } })
    const o = yield* createOpportunity(who, { pipeline_id: f.pipeline.id, contact_id: first.contact_id })
    return { ...f, opportunity: o, conversationId: o.conversation.id as number }
  })

const notesOf = (id: number) => Effect.map(sqlRows`select notes from conversations where id = ${id}`, (rows) => rows[0]!.notes)

let messageIds = 0
const message = (c: { workspace_id: number; conversation_id: number }, role: "user" | "assistant", at: string, cost: number) =>
  sqlRows`
    insert into messages (id, workspace_id, conversation_id, role, status, message, cost_for_user, created_at)
    values (${`m-${Date.now()}-${++messageIds}`}, ${c.workspace_id}, ${c.conversation_id}, ${role},
            ${role === "user" ? "received" : "sent_to_user"}, ${`${role} at ${at}`}, ${cost}, ${at}::timestamptz)`

layer(TestServerLive())("updating a conversation", (it) => {
  it.effect("sets the status to paused and back to active; the answer is {id, status} without validation", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { conversationId, opportunity } = yield* withConversation(alice)
      const paused = yield* put(alice, `/api/user/conversations/${conversationId}`, { status: "paused" })
      expect(paused.status).toBe(200)
      expect(Object.keys(paused.body).sort()).toEqual(["code", "data", "message", "status"])
      expect(paused.body).toMatchObject({ status: true, code: 200 })
      expect(paused.body.data).toEqual({ id: conversationId, status: "paused" })
      const got = ok(yield* get(alice, `/api/user/opportunities/${opportunity.id}`))
      expect(got.conversations[0]).toMatchObject({ id: conversationId, status: "paused" })
      const active = yield* put(alice, `/api/user/conversations/${conversationId}`, { status: "active" })
      expect(active.body.data).toEqual({ id: conversationId, status: "active" })
      expect(active.body).not.toHaveProperty("validation")
      const rows = yield* sqlRows`select status from conversations where id = ${conversationId}`
      expect(rows[0]!.status).toBe("active")
    }))

  it.effect("notes are replaced wholesale; omitted notes are kept and null empties them", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { conversationId } = yield* withConversation(alice)
      ok(yield* put(alice, `/api/user/conversations/${conversationId}`, { notes: ["Called back", "Wants a demo"] }))
      expect(yield* notesOf(conversationId)).toEqual(["Called back", "Wants a demo"])
      ok(yield* put(alice, `/api/user/conversations/${conversationId}`, { notes: ["Demo booked"] }))
      expect(yield* notesOf(conversationId)).toEqual(["Demo booked"])
      const statusOnly = ok(yield* put(alice, `/api/user/conversations/${conversationId}`, { status: "paused" }))
      expect(statusOnly).toEqual({ id: conversationId, status: "paused" })
      expect(yield* notesOf(conversationId)).toEqual(["Demo booked"])
      const notesOnly = ok(yield* put(alice, `/api/user/conversations/${conversationId}`, { notes: [] }))
      expect(notesOnly).toEqual({ id: conversationId, status: "paused" })
      expect(yield* notesOf(conversationId)).toEqual([])
      ok(yield* put(alice, `/api/user/conversations/${conversationId}`, { notes: ["again"] }))
      ok(yield* put(alice, `/api/user/conversations/${conversationId}`, { notes: null }))
      expect(yield* notesOf(conversationId)).toEqual([])
    }))

  it.effect("an invalid status is 422 naming status and changes nothing", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { conversationId } = yield* withConversation(alice)
      for (const status of ["closed", "won", "PAUSED"]) {
        expect422(yield* put(alice, `/api/user/conversations/${conversationId}`, { status, notes: ["x"] }), ["status"])
      }
      const rows = yield* sqlRows`select status, notes from conversations where id = ${conversationId}`
      expect(rows[0]).toEqual({ status: "active", notes: [] })
    }))

  it.effect("another workspace's conversation and a missing one are 404, and nothing changes", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      const { conversationId } = yield* withConversation(bob)
      expectStatus(yield* put(alice, `/api/user/conversations/${conversationId}`, { status: "paused", notes: ["mine"] }), 404)
      expectStatus(yield* put(alice, "/api/user/conversations/987654", { status: "paused" }), 404, "Conversation not found.")
      const rows = yield* sqlRows`select status, notes from conversations where id = ${conversationId}`
      expect(rows[0]).toEqual({ status: "active", notes: [] })
    }))
})

layer(TestServerLive())("the conversation summary in an opportunity", (it) => {
  it.effect("counts messages, sums their cost and averages the reply time; last message fields come from the conversation", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { conversationId, opportunity } = yield* withConversation(alice)
      const c = { workspace_id: alice.workspace_id, conversation_id: conversationId }
      yield* message(c, "user", "2026-03-01T10:00:00Z", 0)
      yield* message(c, "assistant", "2026-03-01T10:00:04Z", 0.25)
      yield* message(c, "user", "2026-03-01T10:00:10Z", 0.125)
      yield* message(c, "assistant", "2026-03-01T10:00:12Z", 1.5)
      yield* sqlRows`
        update conversations set last_message_at = '2026-03-01T10:00:12.345678Z', last_message_content = 'See you Monday'
        where id = ${conversationId}`
      // messages of another conversation of the same contact do not count
      const [other] = yield* sqlRows`
        insert into conversations (workspace_id, contact_id) values (${alice.workspace_id}, ${opportunity.contact_id}) returning id`
      yield* message({ workspace_id: alice.workspace_id, conversation_id: other!.id }, "assistant", "2026-03-01T10:00:05Z", 9)

      const got = ok(yield* get(alice, `/api/user/opportunities/${opportunity.id}`))
      expect(got.conversations).toHaveLength(1)
      const summary = got.conversations[0]
      expect(summary).toMatchObject({
        id: conversationId,
        is_test: false,
        status: "active",
        messages_count: 4,
        cost_for_user: 1.875,
        avg_response_time: 3,
        last_message_at: "2026-03-01T10:00:12.345678Z",
        last_message_content: "See you Monday",
        pivot: { opportunity_id: opportunity.id, conversation_id: conversationId }
      })
      expect(summary.last_message_at).toMatch(TIMESTAMP)
      // the same summary in the lists
      const listed = ok(yield* get(alice, "/api/user/opportunities")).data.find((o: any) => o.id === opportunity.id)
      expect(listed.conversations).toEqual(got.conversations)
      const ofContact = ok(yield* get(alice, `/api/user/contacts/${opportunity.contact_id}/opportunities`))
      expect(ofContact.find((o: any) => o.id === opportunity.id).conversations).toEqual(got.conversations)
    }))

  it.effect("only an assistant message that follows a contact's message counts as a reply", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { conversationId, opportunity } = yield* withConversation(alice)
      const c = { workspace_id: alice.workspace_id, conversation_id: conversationId }
      yield* message(c, "assistant", "2026-03-02T09:00:00Z", 0.5)
      yield* message(c, "user", "2026-03-02T10:00:00Z", 0)
      yield* message(c, "assistant", "2026-03-02T10:00:04Z", 0.5)
      yield* message(c, "assistant", "2026-03-02T10:00:05Z", 0.5)
      yield* message(c, "user", "2026-03-02T10:00:10Z", 0)
      yield* message(c, "assistant", "2026-03-02T10:00:12Z", 0.5)
      const got = ok(yield* get(alice, `/api/user/opportunities/${opportunity.id}`))
      expect(got.conversations[0]).toMatchObject({ messages_count: 6, cost_for_user: 2, avg_response_time: 3 })
    }))

  it.effect("a conversation without messages has zero counts and a null last_message_at", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { conversationId, opportunity } = yield* withConversation(alice)
      const got = ok(yield* get(alice, `/api/user/opportunities/${opportunity.id}`))
      expect(got.conversations).toEqual([
        expect.objectContaining({
          id: conversationId,
          messages_count: 0,
          cost_for_user: 0,
          avg_response_time: 0,
          last_message_at: null,
          last_message_content: null,
          pivot: { opportunity_id: opportunity.id, conversation_id: conversationId }
        })
      ])
    }))

  it.effect("last_message_at keeps microseconds and is UTC whatever offset it was written with", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { conversationId, opportunity } = yield* withConversation(alice)
      yield* sqlRows`update conversations set last_message_at = '2026-03-01T12:30:00+02:00' where id = ${conversationId}`
      const got = ok(yield* get(alice, `/api/user/opportunities/${opportunity.id}`))
      expect(got.conversations[0].last_message_at).toBe("2026-03-01T10:30:00.000000Z")
    }))
})
