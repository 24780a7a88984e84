import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Identity } from "../src/identity/Identity.js"
import { type ApiResponse, bodyAs, failure, type Success } from "./support/Contract.js"
import {
  type Caller,
  createOnContact,
  createOpportunity,
  expect422,
  expectStatus,
  freshPhone,
  funnel,
  get,
  linkWebChannel,
  ok,
  post,
  put,
  sqlRows,
  TIMESTAMP
} from "./support/Opportunities.js"
import { seedUser, TestServerLive } from "./support/TestServer.js"
import { eventually } from "./support/WebhookReceiver.js"

/**
 * An opportunity created on an existing contact, which joins (here: opens) a conversation on the pipeline's channel.
 */
const withConversation = (who: Caller) =>
  Effect.gen(function*() {
    const f = yield* funnel(who)
    yield* linkWebChannel(who, f.pipeline.id)
    const first = yield* createOpportunity(who, { pipeline_id: f.pipeline.id, contact: { phone: freshPhone() } })
    const o = yield* createOnContact(who, { pipeline_id: f.pipeline.id, contact_id: first.contact_id })
    return { ...f, opportunity: o, conversationId: o.conversation.id }
  })

const notesOf = (id: number) =>
  Effect.map(
    sqlRows<{ notes: ReadonlyArray<string> | null }>`select notes from conversations where id = ${id}`,
    (rows) => rows[0]!.notes
  )

let messageIds = 0
const message = (
  c: { workspace_id: number; conversation_id: number },
  role: "user" | "assistant",
  at: string,
  cost: number
) =>
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
      expect(Object.keys(bodyAs(paused, Schema.Object)).sort()).toEqual(["code", "data", "message", "status"])
      expect(paused.body).toMatchObject({ status: true, code: 200 })
      expect(ok(paused, "conversations.update")).toEqual({ id: conversationId, status: "paused" })
      const got = ok(yield* get(alice, `/api/user/opportunities/${opportunity.id}`), "opportunities.get")
      expect(got.conversations[0]).toMatchObject({ id: conversationId, status: "paused" })
      const active = yield* put(alice, `/api/user/conversations/${conversationId}`, { status: "active" })
      expect(ok(active, "conversations.update")).toEqual({ id: conversationId, status: "active" })
      expect(active.body).not.toHaveProperty("validation")
      const rows = yield* sqlRows<{ status: string }>`select status from conversations where id = ${conversationId}`
      expect(rows[0]!.status).toBe("active")
    }))

  it.effect("notes are replaced wholesale; omitted notes are kept and null empties them", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { conversationId } = yield* withConversation(alice)
      ok(
        yield* put(alice, `/api/user/conversations/${conversationId}`, { notes: ["Called back", "Wants a demo"] }),
        "conversations.update"
      )
      expect(yield* notesOf(conversationId)).toEqual(["Called back", "Wants a demo"])
      ok(
        yield* put(alice, `/api/user/conversations/${conversationId}`, { notes: ["Demo booked"] }),
        "conversations.update"
      )
      expect(yield* notesOf(conversationId)).toEqual(["Demo booked"])
      const statusOnly = ok(
        yield* put(alice, `/api/user/conversations/${conversationId}`, { status: "paused" }),
        "conversations.update"
      )
      expect(statusOnly).toEqual({ id: conversationId, status: "paused" })
      expect(yield* notesOf(conversationId)).toEqual(["Demo booked"])
      const notesOnly = ok(
        yield* put(alice, `/api/user/conversations/${conversationId}`, { notes: [] }),
        "conversations.update"
      )
      expect(notesOnly).toEqual({ id: conversationId, status: "paused" })
      expect(yield* notesOf(conversationId)).toEqual([])
      ok(yield* put(alice, `/api/user/conversations/${conversationId}`, { notes: ["again"] }), "conversations.update")
      ok(yield* put(alice, `/api/user/conversations/${conversationId}`, { notes: null }), "conversations.update")
      expect(yield* notesOf(conversationId)).toEqual([])
    }))

  it.effect("an invalid status is 422 naming status and changes nothing", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { conversationId } = yield* withConversation(alice)
      for (const status of ["closed", "won", "PAUSED"]) {
        expect422(yield* put(alice, `/api/user/conversations/${conversationId}`, { status, notes: ["x"] }), ["status"])
      }
      const rows = yield* sqlRows<
        { status: string; notes: ReadonlyArray<string> }
      >`select status, notes from conversations where id = ${conversationId}`
      expect(rows[0]).toEqual({ status: "active", notes: [] })
    }))

  it.effect("another workspace's conversation and a missing one are 404, and nothing changes", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      const { conversationId } = yield* withConversation(bob)
      expectStatus(
        yield* put(alice, `/api/user/conversations/${conversationId}`, { status: "paused", notes: ["mine"] }),
        404
      )
      expectStatus(
        yield* put(alice, "/api/user/conversations/987654", { status: "paused" }),
        404,
        "Conversation not found."
      )
      const rows = yield* sqlRows<
        { status: string; notes: ReadonlyArray<string> }
      >`select status, notes from conversations where id = ${conversationId}`
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
      const [other] = yield* sqlRows<{ id: number }>`
        insert into conversations (workspace_id, contact_id) values (${alice.workspace_id}, ${opportunity.contact_id}) returning id`
      yield* message(
        { workspace_id: alice.workspace_id, conversation_id: other!.id },
        "assistant",
        "2026-03-01T10:00:05Z",
        9
      )

      const got = ok(yield* get(alice, `/api/user/opportunities/${opportunity.id}`), "opportunities.get")
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
      expect(summary!.last_message_at).toMatch(TIMESTAMP)
      // the same summary in the lists
      const listed = ok(yield* get(alice, "/api/user/opportunities"), "opportunities.list").data.find((o) =>
        o.id === opportunity.id
      )
      expect(listed!.conversations).toEqual(got.conversations)
      const ofContact = ok(
        yield* get(alice, `/api/user/contacts/${opportunity.contact_id}/opportunities`),
        "contacts.opportunities"
      )
      expect(ofContact.find((o) => o.id === opportunity.id)!.conversations).toEqual(got.conversations)
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
      const got = ok(yield* get(alice, `/api/user/opportunities/${opportunity.id}`), "opportunities.get")
      expect(got.conversations[0]).toMatchObject({ messages_count: 6, cost_for_user: 2, avg_response_time: 3 })
    }))

  it.effect("a conversation without messages has zero counts and a null last_message_at", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const { conversationId, opportunity } = yield* withConversation(alice)
      const got = ok(yield* get(alice, `/api/user/opportunities/${opportunity.id}`), "opportunities.get")
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
      const got = ok(yield* get(alice, `/api/user/opportunities/${opportunity.id}`), "opportunities.get")
      expect(got.conversations[0]!.last_message_at).toBe("2026-03-01T10:30:00.000000Z")
    }))
})

/**
 * A pipeline with a web channel; `open` starts a conversation with a new contact whose current opportunity is in
 * `stageId`.
 */
const inbox = (who: Caller) =>
  Effect.gen(function*() {
    const f = yield* funnel(who)
    yield* linkWebChannel(who, f.pipeline.id)
    const open = (stageId: number = f.inbound.id) =>
      Effect.gen(function*() {
        const first = yield* createOpportunity(who, { pipeline_id: f.pipeline.id, contact: { phone: freshPhone() } })
        const o = yield* createOnContact(who, {
          pipeline_id: f.pipeline.id,
          contact_id: first.contact_id,
          stage_id: stageId
        })
        return { id: o.conversation.id, contactId: first.contact_id }
      })
    return { ...f, open }
  })

const idsOf = (page: { conversations: ReadonlyArray<{ id: number }> }) => page.conversations.map((c) => c.id)

/** Every page of `query`, one conversation at a time, following next_cursor to the end. */
const walk = (who: Caller, query: string) =>
  Effect.gen(function*() {
    const ids: Array<number> = []
    let cursor: string | null = null
    do {
      const page: Success<"conversations.list"> = ok(
        yield* get(who, `/api/user/conversations?per_page=1&${query}${cursor === null ? "" : `&cursor=${cursor}`}`),
        "conversations.list"
      )
      expect(page.conversations.length).toBe(1)
      ids.push(...idsOf(page))
      cursor = page.next_cursor
    } while (cursor !== null && ids.length < 50)
    return ids
  })

const handoff = (who: Caller, id: number, body: Record<string, unknown>) =>
  Effect.map(post(who, `/api/user/conversations/${id}/handoff`, body), (r) => ok(r, "conversations.handoff"))

// the live clock: the handoff requests' bridge messages are written by the conversations' entities
layer(TestServerLive(), { excludeTestServices: true })("listing conversations", (it) => {
  it.effect("stage_id keeps the conversations whose current opportunity is in that stage; a bad one is 422 naming stage_id", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const stranger = yield* seedUser()
      const { inbound, open, pipeline, qualified, won } = yield* inbox(alice)
      const a = yield* open(inbound.id)
      const b = yield* open(qualified.id)
      // c was qualified, but its newest opportunity is inbound: that one is the current one
      const c = yield* open(qualified.id)
      yield* createOnContact(alice, { pipeline_id: pipeline.id, contact_id: c.contactId, stage_id: inbound.id })

      const ofStage = (stageId: number, more = "") =>
        Effect.map(get(alice, `/api/user/conversations?stage_id=${stageId}${more}`), (r) => ok(r, "conversations.list"))
      expect(idsOf(yield* ofStage(qualified.id))).toEqual([b.id])
      expect(new Set(idsOf(yield* ofStage(inbound.id)))).toEqual(new Set([a.id, c.id]))
      const rows = (yield* ofStage(inbound.id)).conversations
      expect(rows.every((r) => r.opportunity?.stage_id === inbound.id)).toBe(true)
      expect(idsOf(yield* ofStage(won.id))).toEqual([])
      expect(idsOf(yield* ofStage(inbound.id, `&contact_id=${a.contactId}&order=queue`))).toEqual([a.id])
      // another workspace's stage finds nothing of theirs
      expect(idsOf(ok(yield* get(stranger, `/api/user/conversations?stage_id=${inbound.id}`), "conversations.list")))
        .toEqual([])
      for (const bad of ["abc", "0", "-3", "1.5", "01"]) {
        expect422(yield* get(alice, `/api/user/conversations?stage_id=${bad}`), ["stage_id"])
      }
    }))

  it.effect("workspace_id keeps one workspace the caller reaches (owned or managed); another is 404 and a bad one 422", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const manager = yield* seedUser()
      const stranger = yield* seedUser()
      const theirs = yield* withConversation(owner)
      const own = yield* withConversation(manager)
      yield* Effect.flatMap(Identity, (identity) => identity.grantManager(manager.email, owner.workspace_id as never))
        .pipe(Effect.orDie)

      const list = (who: Caller, query: string) => get(who, `/api/user/conversations?${query}`)
      const listed = (r: ApiResponse) => idsOf(ok(r, "conversations.list"))
      const all = listed(yield* list(manager, "per_page=100"))
      expect(all).toEqual(expect.arrayContaining([theirs.conversationId, own.conversationId]))
      expect(listed(yield* list(manager, `workspace_id=${owner.workspace_id}`))).toEqual([theirs.conversationId])
      expect(listed(yield* list(manager, `workspace_id=${manager.workspace_id}&order=queue`))).toEqual([
        own.conversationId
      ])
      for (const who of [stranger, owner]) {
        const r = yield* list(who, `workspace_id=${manager.workspace_id}`)
        expect(r.status).toBe(404)
        expect(failure(r).message).toBe("Workspace not found.")
      }
      expect422(yield* list(manager, "workspace_id=abc"), ["workspace_id"])
    }))

  it.effect("order=queue lists waiting (longest first), then the caller's, then the rest by activity, and pages one by one", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const bob = yield* seedUser()
      yield* Effect.flatMap(Identity, (identity) => identity.grantManager(bob.email, alice.workspace_id as never)).pipe(
        Effect.orDie
      )
      const { open } = yield* inbox(alice)
      const [waitingLong, waitingShort, taken, assigned, bobs, aiNew, aiTieA, aiTieB] = yield* Effect.forEach(
        Array.from({ length: 8 }),
        () => Effect.map(open(), (c) => c.id)
      )
      yield* handoff(alice, waitingShort!, { action: "request", reason: "Asked later" })
      yield* handoff(alice, waitingLong!, { action: "request", reason: "Asked first" })
      yield* handoff(alice, taken!, { action: "take" })
      yield* handoff(alice, assigned!, { action: "assign", assignee_id: alice.user_id })
      yield* handoff(alice, bobs!, { action: "assign", assignee_id: bob.user_id })
      // the requests' bridge messages are written and sent before the clock below is set
      yield* eventually(
        Effect.map(
          sqlRows<
            { n: number }
          >`select count(*)::int as n from messages where conversation_id in (${waitingLong}, ${waitingShort})
                and call_type = 'handoff_bridge' and status <> 'ai_generated'`,
          (rows) => rows[0]!.n === 2 || undefined
        ),
        20_000
      )
      const at = (id: number, lastMessageAt: string, requestedAt: string | null = null) =>
        sqlRows`update conversations set last_message_at = ${lastMessageAt}::timestamptz,
                handoff_requested_at = coalesce(${requestedAt}::timestamptz, handoff_requested_at) where id = ${id}`
      // the waiting ones by when they asked (not by activity), the rest by activity; aiTieA and aiTieB tie
      yield* at(waitingLong!, "2026-03-01T08:00:00.000001Z", "2026-03-01T07:00:00.000001Z")
      yield* at(waitingShort!, "2026-03-01T12:00:00Z", "2026-03-01T07:00:00.000002Z")
      yield* at(taken!, "2026-03-01T09:00:00Z")
      yield* at(assigned!, "2026-03-01T10:00:00Z")
      yield* at(bobs!, "2026-03-01T11:00:00.5Z")
      yield* at(aiNew!, "2026-03-01T11:30:00Z")
      yield* at(aiTieA!, "2026-03-01T06:00:00.123456Z")
      yield* at(aiTieB!, "2026-03-01T06:00:00.123456Z")
      const [tieFirst, tieSecond] = [aiTieA!, aiTieB!].sort((x, y) => x - y)

      expect(yield* walk(alice, "order=queue")).toEqual([
        waitingLong,
        waitingShort,
        assigned,
        taken,
        aiNew,
        bobs,
        tieFirst,
        tieSecond
      ])
      // the caller's own come second: for bob, the one assigned to him
      expect(yield* walk(bob, "order=queue")).toEqual([
        waitingLong,
        waitingShort,
        bobs,
        aiNew,
        assigned,
        taken,
        tieFirst,
        tieSecond
      ])
      // filters apply within the queue
      expect(yield* walk(alice, "order=queue&handoff=human")).toEqual([assigned, taken, bobs])
      const page = ok(yield* get(alice, "/api/user/conversations?order=queue&per_page=3"), "conversations.list")
      expect(idsOf(page)).toEqual([waitingLong, waitingShort, assigned])
      expect(page.conversations[0]!.handoff).toMatchObject({
        state: "waiting",
        requested_at: "2026-03-01T07:00:00.000001Z"
      })

      // the default order is unchanged: newest activity first
      const activity = [waitingShort, aiNew, bobs, assigned, taken, waitingLong, tieSecond, tieFirst]
      expect(yield* walk(alice, "order=activity")).toEqual(activity)
      expect(yield* walk(alice, "")).toEqual(activity)

      // a cursor belongs to its order; garbage is no cursor; an unknown order is 422
      const queueCursor =
        ok(yield* get(alice, "/api/user/conversations?order=queue&per_page=1"), "conversations.list").next_cursor
      const activityCursor =
        ok(yield* get(alice, "/api/user/conversations?per_page=1"), "conversations.list").next_cursor
      expect422(yield* get(alice, `/api/user/conversations?order=activity&cursor=${queueCursor}`), ["cursor"])
      expect422(yield* get(alice, `/api/user/conversations?cursor=${queueCursor}`), ["cursor"])
      expect422(yield* get(alice, `/api/user/conversations?order=queue&cursor=${activityCursor}`), ["cursor"])
      const forged = Buffer.from("q|7|1|1", "utf8").toString("base64url")
      for (const cursor of ["nonsense", forged, Buffer.from("q|0|1e9|1", "utf8").toString("base64url")]) {
        expect422(yield* get(alice, `/api/user/conversations?order=queue&cursor=${cursor}`), ["cursor"])
      }
      for (const order of ["newest", "QUEUE", ""]) {
        expect422(yield* get(alice, `/api/user/conversations?order=${order}`), ["order"])
      }
    }))
})
