/**
 * The AI agent end to end (issue 5) with Parley's deterministic local model: a contact writes through
 * the receiver and the reply arrives on a joined socket.io client and at the signed webhook; debounce,
 * pause, limits, credits, Smart Routing, the stage-move tool and static opening messages.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { CurrentActor, Scopes, verifyServiceSignature } from "@parley/domain"
import { Effect } from "effect"
import { io } from "socket.io-client"
import { Knowledge } from "../src/knowledge/Knowledge.js"
import { withKnowledge } from "./support/Knowledge.js"
import {
  createOnContact,
  createPipeline,
  createStage,
  expectStatus,
  get,
  ok,
  post,
  put,
  sqlRows
} from "./support/Opportunities.js"
import { fetchJson, seedUser, TestServer, TestServerLive } from "./support/TestServer.js"
import { basic, initiate, say, webCredentials } from "./support/WebChat.js"
import { eventually, webhookReceiver } from "./support/WebhookReceiver.js"

type Caller = { readonly token: string; readonly workspace_id: number }

const credits = (workspaceId: number, amount: number) =>
  sqlRows`update workspaces set credits = ${amount}, is_subscription_active = true where id = ${workspaceId}`

/** A pipeline with stages, its web channel (callback optional), credits, and the given settings. */
const agentSetup = (
  options: { readonly callbackUrl?: string; readonly settings?: Record<string, unknown>; readonly owner?: Caller } = {}
) =>
  Effect.gen(function*() {
    const owner = options.owner ?? (yield* seedUser())
    yield* credits(owner.workspace_id, 100)
    const pipeline = yield* createPipeline(owner, "Sales")
    // the facts the agent may say are knowledge; its instructions are followed, never said
    yield* withKnowledge(owner, pipeline.id, [
      "Our annual plan costs 990 euros per year.",
      "The monthly plan costs 99 euros per month.",
      "Support is open on weekdays."
    ])
    ok(
      yield* put(owner, `/api/user/pipelines/${pipeline.id}`, {
        instructions: "Answer questions about our plans. Never promise a discount.",
        reply_debounce_ms: 0,
        ...options.settings
      }),
      "pipelines.update"
    )
    const open = yield* createStage(owner, pipeline.id, "Open", 1)
    const won = ok(
      yield* post(owner, `/api/user/pipelines/${pipeline.id}/stages`, {
        name: "Closed won",
        nature: "won",
        order: 2,
        enter_condition: "The customer confirms they want to buy the annual plan"
      }),
      "pipelines.createStage"
    )
    const channel = webCredentials(ok(
      yield* post(owner, "/api/user/channels", {
        kind: "web",
        pipeline_id: pipeline.id,
        ...(options.callbackUrl ? { callback_url: options.callbackUrl } : {})
      }),
      "channels.create"
    ))
    return { owner, pipeline, open, won, channel }
  })

const assistantMessages = (conversationId: number) =>
  sqlRows<
    {
      id: string
      message: string | null
      status: string
      call_type: string
      ai_model_id: number | null
      model: string | null
      in_reply_to: string | null
      error: string | null
    }
  >`
    select id, message, status, call_type, ai_model_id, model, in_reply_to, error from messages
    where conversation_id = ${conversationId} and role = 'assistant' order by created_at, id`

const handledReasons = (ids: ReadonlyArray<string>) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (s) =>
      s<{ handled_reason: string | null }>`select handled_reason from messages where id in ${
        s.in(ids)
      } order by created_at, id`
  ).pipe(
    Effect.map((rows) => rows.map((r) => r.handled_reason)),
    Effect.orDie
  )

/** Waits until the messages are handled and returns why. */
const handled = (ids: ReadonlyArray<string>) =>
  eventually(Effect.map(handledReasons(ids), (reasons) => reasons.every((r) => r !== null) ? reasons : undefined))

/** Sends a message on a fresh contact and returns the conversation it landed in. */
const conversationOf = (messageId: string) =>
  Effect.map(
    sqlRows<{ conversation_id: number }>`select conversation_id from messages where id = ${messageId}`,
    (rows) => Number(rows[0]!.conversation_id)
  )

layer(
  TestServerLive({ OUTBOUND_ALLOW_PRIVATE: "true", ENGINE_SWEEP_INTERVAL_MS: "1000", WEBHOOK_RETRY_DELAY_MS: "1500" }),
  { excludeTestServices: true }
)("the agent", (it) => {
  it.effect("a contact's message gets exactly one reply, on the joined socket and at the signed webhook", () =>
    Effect.scoped(Effect.gen(function*() {
      const receiver = yield* webhookReceiver(() => "ok")
      const { channel } = yield* agentSetup({ callbackUrl: receiver.url })
      const session = ok(yield* initiate(channel, "dana-1"), "webChat.initiate")
      const socket = yield* Effect.acquireRelease(
        Effect.sync(() => io(session.socket_url, { forceNew: true, reconnection: false, transports: ["websocket"] })),
        (s) => Effect.sync(() => s.close())
      )
      const events: Array<ReadonlyArray<unknown>> = []
      socket.on("new_message", (payload: ReadonlyArray<unknown>) => events.push(payload))
      const ack = yield* Effect.promise(() =>
        socket.timeout(5000).emitWithAck("join-channel", {
          channel: session.channel,
          app_key: session.app_key,
          token: session.token
        })
      )
      expect(ack.status).toBe(true)

      const id = yield* say(channel, "dana-1", "How much does the annual plan cost?")
      yield* eventually(Effect.sync(() => events.length >= 1 && receiver.received.length >= 1 ? true : undefined))
      // marked sent with the attempt's outcome, once the receiver's answer is read
      const replies = yield* eventually(
        Effect.map(assistantMessages(session.conversation_id), (rows) =>
          rows.every((r) => r.status === "sent_to_user")
            ? rows
            : undefined)
      )
      expect(replies).toHaveLength(1)
      const reply = replies[0]!
      expect(reply).toMatchObject({
        status: "sent_to_user",
        call_type: "ai",
        ai_model_id: 1,
        model: "parley-local",
        in_reply_to: id
      })
      expect(reply.message).toContain("990 euros")
      // the socket payload: an array whose element 0 carries the message and its cost
      expect(events[0]![0]).toMatchObject({ message: reply.message, cost: 0, message_id: reply.id })
      // the webhook: signed over the raw body with the channel's secret
      const hit = receiver.received[0]!
      expect(JSON.parse(hit.rawBody)).toMatchObject({
        event: "message",
        message_id: reply.id,
        text: reply.message,
        contact_id: "dana-1"
      })
      expect(verifyServiceSignature(
        channel.client_secret,
        {
          signature: hit.headers["x-service-signature"] as string,
          timestamp: hit.headers["x-service-timestamp"] as string
        },
        hit.rawBody
      )).toBe(true)
      expect(yield* handledReasons([id])).toEqual(["replied"])
      // and no second reply comes
      yield* Effect.sleep("1500 millis")
      expect(yield* assistantMessages(session.conversation_id)).toHaveLength(1)
      expect(events).toHaveLength(1)
      expect(receiver.received).toHaveLength(1)
    })))

  it.effect("a reply whose webhook fails once with a 503 is delivered by the durable retry: two attempts, one message_id", () =>
    Effect.scoped(Effect.gen(function*() {
      let calls = 0
      const receiver = yield* webhookReceiver(() => (++calls === 1 ? "fail" : "ok"))
      const { channel } = yield* agentSetup({ callbackUrl: receiver.url })
      const id = yield* say(channel, "dana-retry", "How much does the annual plan cost?")
      yield* eventually(Effect.sync(() => receiver.received.length >= 2 ? true : undefined), 20_000)
      const [reply] = yield* assistantMessages(yield* conversationOf(id))
      expect(receiver.received.map((r) => JSON.parse(r.rawBody).message_id)).toEqual([reply!.id, reply!.id])
      // the second attempt's row gets its status once the answer is read, just after the receiver saw it
      const attempts = yield* eventually(
        Effect.map(
          sqlRows<{ attempt: number; status_code: number | null }>`
        select attempt, status_code from webhook_deliveries where message_id = ${reply!.id} order by attempt`.pipe(
            Effect.orDie
          ),
          (rows) => rows.every((a) => a.status_code !== null) ? rows : undefined
        ),
        10_000
      )
      expect(attempts.map((a) => [a.attempt, a.status_code])).toEqual([[1, 503], [2, 200]])
      yield* Effect.sleep("1500 millis")
      expect(receiver.received).toHaveLength(2)
    })))

  it.effect("three quick messages get one reply that answers all of them", () =>
    Effect.gen(function*() {
      const { channel } = yield* agentSetup({ settings: { reply_debounce_ms: 1200 } })
      const ids = [
        yield* say(channel, "dana-2", "Hello"),
        yield* say(channel, "dana-2", "What does the monthly plan cost?"),
        yield* say(channel, "dana-2", "And the annual plan?")
      ]
      expect(yield* handled(ids)).toEqual(["replied", "replied", "replied"])
      const replies = yield* assistantMessages(yield* conversationOf(ids[0]!))
      expect(replies).toHaveLength(1)
      expect(replies[0]!.in_reply_to).toBe(ids[2])
      expect(replies[0]!.message).toContain("99 euros per month")
      expect(replies[0]!.message).toContain("990 euros per year")
    }))

  it.effect("a paused conversation gets no reply", () =>
    Effect.gen(function*() {
      const { channel, owner } = yield* agentSetup()
      const first = yield* say(channel, "dana-3", "Hi")
      yield* handled([first])
      const conversationId = yield* conversationOf(first)
      ok(yield* put(owner, `/api/user/conversations/${conversationId}`, { status: "paused" }), "conversations.update")
      const second = yield* say(channel, "dana-3", "Anyone there?")
      expect(yield* handled([second])).toEqual(["paused"])
      expect(yield* assistantMessages(conversationId)).toHaveLength(1)
    }))

  it.effect("a conversation at its message limit or its cost limit gets no reply", () =>
    Effect.gen(function*() {
      const limited = yield* agentSetup({ settings: { max_conversation_messages: 1 } })
      const a1 = yield* say(limited.channel, "dana-4", "Hi")
      expect(yield* handled([a1])).toEqual(["replied"])
      const a2 = yield* say(limited.channel, "dana-4", "And the annual plan?")
      expect(yield* handled([a2])).toEqual(["message_limit"])
      expect(yield* assistantMessages(yield* conversationOf(a1))).toHaveLength(1)

      const costly = yield* agentSetup({ settings: { max_conversation_cost: 0.5 } })
      const b1 = yield* say(costly.channel, "dana-5", "Hi")
      yield* handled([b1])
      const conversationId = yield* conversationOf(b1)
      yield* sqlRows`update conversations set cost_for_user = 0.5 where id = ${conversationId}`
      const b2 = yield* say(costly.channel, "dana-5", "And the annual plan?")
      expect(yield* handled([b2])).toEqual(["cost_limit"])
      expect(yield* assistantMessages(conversationId)).toHaveLength(1)
    }))

  it.effect("a workspace at zero credits gets no reply, and Initiate says No credits found", () =>
    Effect.gen(function*() {
      const { channel, owner } = yield* agentSetup()
      ok(yield* initiate(channel, "dana-6"), "webChat.initiate")
      yield* credits(owner.workspace_id, 0)
      const id = yield* say(channel, "dana-6", "Hello?")
      expect(yield* handled([id])).toEqual(["no_credits"])
      expect(yield* assistantMessages(yield* conversationOf(id))).toHaveLength(0)
      expectStatus(yield* initiate(channel, "dana-6"), 400, "No credits found")
    }))

  it.effect("Smart Routing sends a complex request to the complex tier's model and a greeting to the simple tier's", () =>
    Effect.gen(function*() {
      const { channel } = yield* agentSetup({
        settings: {
          is_model_routing_enabled: true,
          is_model_routing: [
            { tier: "router", ai_model_id: 2 },
            { tier: "simple", ai_model_id: 2 },
            { tier: "moderate", ai_model_id: 1 },
            { tier: "complex", ai_model_id: 3, instructions: "Answer thoroughly." }
          ]
        }
      })
      const complex = yield* say(
        channel,
        "dana-7",
        "We need an enterprise contract with a custom SLA, SSO integration and a security review; how does the annual plan compare to the monthly one for 40 seats?"
      )
      yield* handled([complex])
      const conversationId = yield* conversationOf(complex)
      const [first] = yield* assistantMessages(conversationId)
      expect(first).toMatchObject({ ai_model_id: 3, model: "parley-local-max" })
      const simple = yield* say(channel, "dana-7", "Thanks!")
      yield* handled([simple])
      const replies = yield* assistantMessages(conversationId)
      expect(replies[1]).toMatchObject({ ai_model_id: 2, model: "parley-local-mini", in_reply_to: simple })
    }))

  it.effect("the model moves the opportunity to a won stage when its entry condition is met; the status becomes won", () =>
    Effect.gen(function*() {
      const { channel, owner, won } = yield* agentSetup()
      const id = yield* say(channel, "dana-8", "Yes, I confirm: I want to buy the annual plan.")
      yield* handled([id])
      const [opportunity] = yield* sqlRows<{ id: number; stage_id: number; status: string }>`
        select o.id, o.stage_id, o.status from opportunities o join messages m on m.opportunity_id = o.id where m.id = ${id}`
      expect(Number(opportunity!.stage_id)).toBe(won.id)
      expect(opportunity!.status).toBe("won")
      const viaApi = ok(yield* get(owner, `/api/user/opportunities/${opportunity!.id}`), "opportunities.get")
      expect(viaApi.status).toBe("won")
      const [reply] = yield* assistantMessages(yield* conversationOf(id))
      // the stage is internal: the contact is thanked, never told its name
      expect(reply!.message).toContain("I've noted that")
      expect(reply!.message).not.toContain("Closed won")
      // the move was recorded once, as a stage entry
      const entries = yield* sqlRows<{ n: number }>`
        select count(*)::int as n from stage_entries where opportunity_id = ${opportunity!.id} and cause = 'moved'`
      expect(entries[0]!.n).toBe(1)
    }))

  it.effect("a stage with a static opening message sends it once when an opportunity enters", () =>
    Effect.gen(function*() {
      const { channel, owner, pipeline } = yield* agentSetup()
      const demo = ok(
        yield* post(owner, `/api/user/pipelines/${pipeline.id}/stages`, {
          name: "Demo booked",
          nature: "neutral",
          order: 3,
          is_opening_message: true,
          opening_message_type: "static",
          static_opening_message: "Great, your demo is booked! You will get a calendar invite shortly."
        }),
        "pipelines.createStage"
      )
      const first = yield* say(channel, "dana-9", "Hi")
      yield* handled([first])
      const conversationId = yield* conversationOf(first)
      const [opportunity] = yield* sqlRows<
        { opportunity_id: number }
      >`select opportunity_id from messages where id = ${first}`
      ok(
        yield* put(owner, `/api/user/opportunities/${opportunity!.opportunity_id}`, { stage_id: demo.id }),
        "opportunities.update"
      )
      // stored as ai_generated, then delivered: native Postgres can read between the two (PGlite's one session never
      // did)
      const opening = yield* eventually(
        Effect.map(
          assistantMessages(conversationId),
          (rows) => rows.find((r) => r.call_type === "opening" && r.status === "sent_to_user")
        )
      )
      expect(opening).toMatchObject({
        message: "Great, your demo is booked! You will get a calendar invite shortly.",
        status: "sent_to_user"
      })
      yield* Effect.sleep("1500 millis")
      expect((yield* assistantMessages(conversationId)).filter((r) => r.call_type === "opening")).toHaveLength(1)
    }))

  it.effect("a contact's first message gets the reply, not the greeting; an opportunity created over REST with contact_id is greeted", () =>
    Effect.gen(function*() {
      const { channel, open, owner, pipeline } = yield* agentSetup()
      const greeting = "Welcome! Tell us what you are looking for."
      ok(
        yield* put(owner, `/api/user/stages/${open.id}`, {
          is_opening_message: true,
          opening_message_type: "static",
          static_opening_message: greeting
        }),
        "pipelines.updateStage"
      )
      // the contact's own first message creates the opportunity in the greeting stage
      const first = yield* say(channel, "dana-12", "Hi, how much is the annual plan?")
      yield* handled([first])
      const conversationId = yield* conversationOf(first)
      const [byMessage] = yield* sqlRows<
        { opportunity_id: number }
      >`select opportunity_id from messages where id = ${first}`
      yield* eventually(Effect.map(
        sqlRows<{ consumed_at: string | null }>`select consumed_at from stage_entries where opportunity_id = ${
          byMessage!.opportunity_id
        }`,
        (rows) => rows[0]?.consumed_at ?? undefined
      ))
      yield* Effect.sleep("500 millis")
      expect((yield* assistantMessages(conversationId)).map((m) => m.call_type)).toEqual(["ai"])

      // SPEC.md 3.1, 4.1 rule 3: a create on that contact runs the stage-start automations, the greeting included
      const [contact] = yield* sqlRows<{ contact_id: number }>`select contact_id from messages where id = ${first}`
      const created = yield* createOnContact(owner, { pipeline_id: pipeline.id, contact_id: contact!.contact_id })
      expect(created).toMatchObject({ stage_id: open.id, conversation: { id: conversationId } })
      // stored as ai_generated, then delivered: on native Postgres a read can fall between the two
      const opening = yield* eventually(
        Effect.map(
          assistantMessages(conversationId),
          (rows) => rows.find((r) => r.call_type === "opening" && r.status === "sent_to_user")
        )
      )
      expect(opening).toMatchObject({ message: greeting, status: "sent_to_user" })
      const { baseUrl } = yield* TestServer
      const history = yield* fetchJson(`${baseUrl}/api/user/messages/webchat?contact_id=dana-12`, {
        headers: { authorization: basic(channel) }
      })
      expect(ok(history, "webChat.history").data[0]).toMatchObject({
        id: opening!.id,
        role: "assistant",
        message: greeting
      })
      yield* Effect.sleep("1000 millis")
      expect((yield* assistantMessages(conversationId)).map((m) => m.call_type)).toEqual(["ai", "opening"])
    }))

  it.effect("the reply answers from a row of an attached knowledge table, and that row's used_count goes up", () =>
    Effect.gen(function*() {
      const seeded = yield* seedUser()
      const { channel, owner, pipeline } = yield* agentSetup({
        owner: seeded,
        settings: { rag_mode: "hybrid", no_of_relevant_points: 1, instructions: "Help customers choose a shoe." }
      })
      yield* sqlRows`update workspaces set training_credits = 100 where id = ${owner.workspace_id}`
      const knowledge = yield* Knowledge
      const asOwner = Effect.provideService(CurrentActor, {
        userId: seeded.user_id as never,
        authenticatedUserId: seeded.user_id as never,
        tokenId: seeded.tokenId as never,
        scopes: Scopes,
        workspaceIds: [owner.workspace_id as never],
        defaultWorkspaceId: owner.workspace_id as never
      })
      const table = yield* asOwner(knowledge.create({
        name: "Shoes",
        columns: [
          {
            name: "name",
            data_type: "string",
            order: 1,
            is_searchable: true,
            is_retrievable: true,
            is_filterable: false,
            is_unique: false
          },
          {
            name: "description",
            data_type: "string",
            order: 2,
            is_searchable: true,
            is_retrievable: true,
            is_filterable: false,
            is_unique: false
          },
          {
            name: "price",
            data_type: "number",
            order: 3,
            is_searchable: false,
            is_retrievable: true,
            is_filterable: false,
            is_unique: false
          }
        ]
      }))
      yield* asOwner(knowledge.upsert(table.id, [
        {
          default_id: "trail",
          name: "Trail Runner X",
          description: "A waterproof trail shoe with a grippy sole",
          price: 129
        },
        {
          default_id: "road",
          name: "Road Glide",
          description: "A light road running shoe for long distances",
          price: 99
        },
        { default_id: "court", name: "Court Pro", description: "A tennis shoe with lateral support", price: 89 }
      ]))
      yield* sqlRows`insert into pipeline_knowledge_tables (pipeline_id, knowledge_table_id) values (${pipeline.id}, ${table.id})`
      const id = yield* say(channel, "k-1", "Is the Trail Runner X waterproof?")
      expect(yield* handled([id])).toEqual(["replied"])
      const [reply] = yield* assistantMessages(yield* conversationOf(id))
      expect(reply!.message).toContain("waterproof trail shoe")
      // the listing counts every use at once, folded into the row or not yet
      const listed = (yield* asOwner(knowledge.points(table.id, 10, undefined))).records
      const trail = listed.find((p) => p.default_id === "trail")!
      expect(trail.usage_data.used_count).toBe(1)
      expect(trail.usage_data.latest_time_used).not.toBeNull()
      // no_of_relevant_points 1: only the best row went into the prompt
      expect(listed.reduce((n, p) => n + p.usage_data.used_count, 0)).toBe(1)
      // the fold moves the use into the row's counter, and the listing still says 1
      const folded = yield* eventually(Effect.map(
        sqlRows<{ default_id: string; used_count: number; latest_time_used: string | null }>`
          select default_id, used_count, latest_time_used from knowledge_points
          where knowledge_table_id = ${table.id} and used_count > 0`,
        (rows) => (rows.length > 0 ? rows : undefined)
      ))
      expect(folded.map((r) => [r.default_id, r.used_count])).toEqual([["trail", 1]])
      expect(folded[0]!.latest_time_used).toBe(trail.usage_data.latest_time_used)
      expect(yield* sqlRows`select 1 from knowledge_point_uses where point_id = ${trail.point_id}::uuid`).toEqual([])
      const again = (yield* asOwner(knowledge.points(table.id, 10, undefined))).records
      expect(again.find((p) => p.default_id === "trail")!.usage_data.used_count).toBe(1)
    }))

  it.effect("a model whose provider is not configured makes no reply and records model_not_configured, before any model call", () =>
    Effect.gen(function*() {
      const { channel } = yield* agentSetup({ settings: { ai_model_id: 11 } })
      const id = yield* say(channel, "dana-10", "Hello")
      expect(yield* handled([id])).toEqual(["model_not_configured"])
      expect(yield* assistantMessages(yield* conversationOf(id))).toEqual([])
    }))
})
