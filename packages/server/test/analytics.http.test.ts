import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { backfillAiResponseTimes } from "../src/db/migrations/0014_ai_response_times.js"
import { Identity } from "../src/identity/Identity.js"
import { failure } from "./support/Contract.js"
import {
  type Caller,
  createOnContact,
  createOpportunity,
  expect422,
  expectStatus,
  freshPhone,
  funnel,
  get,
  ok,
  post,
  sqlRows,
  storedChannel
} from "./support/Opportunities.js"
import { call, seedUser, TestServerLive, tokenFor } from "./support/TestServer.js"

type Owner = Caller & { readonly workspace_id: number }

let sequence = 0

interface Conversation {
  readonly id: number
  readonly workspace_id: number
  readonly channel_id: number
  readonly pipeline_id: number
}

/** A conversation inserted directly, as the web-chat receiver would store one. */
const conversation = (
  owner: Owner,
  contactId: number,
  channelId: number,
  pipelineId: number,
  isTest = false
) =>
  Effect.map(
    sqlRows<{ id: number }>`
      insert into conversations (workspace_id, contact_id, channel_id, is_test)
      values (${owner.workspace_id}, ${contactId}, ${channelId}, ${isTest}) returning id`,
    (rows): Conversation => ({
      id: rows[0]!.id,
      workspace_id: owner.workspace_id,
      channel_id: channelId,
      pipeline_id: pipelineId
    })
  )

/**
 * One message at a chosen time. Inserted in time order per conversation, so the messages trigger
 * counts each assistant message after a contact message as a reply (response time from created_at).
 */
const message = (
  c: Conversation,
  role: "user" | "assistant",
  at: string,
  options: { readonly manual?: boolean; readonly cost?: number; readonly opportunityId?: number } = {}
) =>
  sqlRows`
    insert into messages (id, workspace_id, conversation_id, opportunity_id, channel_id, pipeline_id, role, status, message,
                          is_manual, cost_for_user, created_at)
    values (${`01ANALYTICS${Date.now()}${++sequence}`.slice(0, 40)}, ${c.workspace_id}, ${c.id}, ${
    options.opportunityId ?? null
  },
            ${c.channel_id}, ${c.pipeline_id}, ${role}, ${role === "user" ? "received" : "sent_to_user"}, 'text',
            ${options.manual ?? false}, ${options.cost ?? 0}, ${at}::timestamptz)`

const channel = (who: Caller, kind: string, pipelineId: number) =>
  Effect.map(post(who, "/api/user/channels", { kind, pipeline_id: pipelineId }), (r) => ok(r, "channels.create"))

/**
 * Alice: pipelines Sales (web channel) and Support (whatsapp channel); opportunities o1 active and
 * o2 won in Sales, o3 lost in Support, and a test opportunity in Sales. Messages (UTC):
 *
 * | conversation        | at               | role      | kind   | cost |
 * |---------------------|------------------|-----------|--------|------|
 * | web (o1's contact)  | 03-01 10:00:00   | user      |        |      |
 * |                     | 03-01 10:00:30   | assistant | AI     | 0.01 |
 * |                     | 03-03 09:00:00   | user      |        |      |
 * |                     | 03-03 09:01:30   | assistant | manual | 0    |
 * | whatsapp (o3's)     | 03-02 12:00:00   | user      |        |      |
 * |                     | 03-02 12:01:00   | assistant | AI     | 0.02 |
 * | web, test           | 03-01 11:00:00   | user      |        |      |
 * |                     | 03-01 11:00:10   | assistant | AI     | 0.5  |
 *
 * Replies: 30 s (AI), 90 s (operator), 60 s (AI), and 10 s (AI) in the test conversation. Bob, another workspace, has a
 * pipeline, an opportunity and a web conversation with two messages on 03-01 costing 1.0.
 */
const fixture = Effect.gen(function*() {
  const alice = yield* seedUser()
  const bob = yield* seedUser()
  const sales = yield* funnel(alice, "Sales")
  const support = yield* funnel(alice, "Support")
  const web = yield* channel(alice, "web", sales.pipeline.id)
  const whatsapp = yield* storedChannel(alice.workspace_id, "whatsapp", { pipelineId: support.pipeline.id })
  const o1 = yield* createOpportunity(alice, { pipeline_id: sales.pipeline.id, contact: { phone: freshPhone() } })
  yield* createOpportunity(alice, { pipeline_id: sales.pipeline.id, status: "won", contact: { phone: freshPhone() } })
  const o3 = yield* createOpportunity(alice, {
    pipeline_id: support.pipeline.id,
    status: "lost",
    contact: { phone: freshPhone() }
  })
  const test = yield* createOpportunity(alice, {
    pipeline_id: sales.pipeline.id,
    is_test: true,
    contact: { phone: freshPhone() }
  })

  const c1 = yield* conversation(alice, o1.contact_id, web.id, sales.pipeline.id)
  yield* message(c1, "user", "2026-03-01T10:00:00Z")
  yield* message(c1, "assistant", "2026-03-01T10:00:30Z", { cost: 0.01 })
  yield* message(c1, "user", "2026-03-03T09:00:00Z")
  yield* message(c1, "assistant", "2026-03-03T09:01:30Z", { manual: true })
  const c2 = yield* conversation(alice, o3.contact_id, whatsapp.id, support.pipeline.id)
  yield* message(c2, "user", "2026-03-02T12:00:00Z")
  yield* message(c2, "assistant", "2026-03-02T12:01:00Z", { cost: 0.02 })
  const c3 = yield* conversation(alice, test.contact_id, web.id, sales.pipeline.id, true)
  yield* message(c3, "user", "2026-03-01T11:00:00Z")
  yield* message(c3, "assistant", "2026-03-01T11:00:10Z", { cost: 0.5 })

  const theirs = yield* funnel(bob, "Sales")
  const bobsWeb = yield* channel(bob, "web", theirs.pipeline.id)
  const foreign = yield* createOpportunity(bob, { pipeline_id: theirs.pipeline.id, contact: { phone: freshPhone() } })
  const c4 = yield* conversation(bob, foreign.contact_id, bobsWeb.id, theirs.pipeline.id)
  yield* message(c4, "user", "2026-03-01T10:00:00Z")
  yield* message(c4, "assistant", "2026-03-01T10:00:05Z", { cost: 1 })
  return { alice, bob, sales, support, theirs }
})

const day = (date: string, counts: Partial<Record<string, number>> = {}) => ({
  date,
  messages: 0,
  user_messages: 0,
  assistant_messages: 0,
  ai_messages: 0,
  manual_messages: 0,
  cost: 0,
  ...counts
})

const stats = (who: Caller, query = "") =>
  Effect.map(get(who, `/api/user/analytics/messaging-stats${query}`), (r) => ok(r, "analytics.messagingStats"))

layer(TestServerLive())("analytics over REST", (it) => {
  it.effect("summary counts the caller's pipelines, opportunities, conversations and messages, test data left out", () =>
    Effect.gen(function*() {
      const { alice } = yield* fixture
      const r = yield* get(alice, "/api/user/analytics/summary")
      expect(r.status).toBe(200)
      expect(r.body).toEqual({
        status: true,
        code: 200,
        validation: [],
        message: "OK",
        data: {
          pipelines: 2,
          opportunities: 3,
          conversations: 2,
          messages: 6,
          opportunities_by_status: { pending: 0, active: 1, paused: 0, won: 1, lost: 1 },
          messages_by_role: { user: 3, assistant: 3 }
        }
      })
    }))

  it.effect("include_test=true counts test opportunities, conversations and their messages", () =>
    Effect.gen(function*() {
      const { alice } = yield* fixture
      expect(ok(yield* get(alice, "/api/user/analytics/summary?include_test=true"), "analytics.summary")).toEqual({
        pipelines: 2,
        opportunities: 4,
        conversations: 3,
        messages: 8,
        opportunities_by_status: { pending: 0, active: 2, paused: 0, won: 1, lost: 1 },
        messages_by_role: { user: 4, assistant: 4 }
      })
      expect(ok(yield* get(alice, "/api/user/analytics/summary?include_test=false"), "analytics.summary").messages)
        .toBe(6)
      expect(ok(yield* get(alice, "/api/user/analytics/summary?include_test=1"), "analytics.summary").messages).toBe(8)
    }))

  it.effect("ai-performance: AI messages, the AI's mean response time (an operator's reply left out) and the total cost", () =>
    Effect.gen(function*() {
      const { alice } = yield* fixture
      const r = yield* get(alice, "/api/user/analytics/ai-performance")
      expect(r.status).toBe(200)
      const expected = {
        ai_messages: 2,
        manual_messages: 1,
        responses: 2,
        average_response_seconds: 45,
        total_cost: 0.03
      }
      expect(ok(r, "analytics.aiPerformance")).toEqual(expected)
      const withTest = {
        ai_messages: 3,
        manual_messages: 1,
        responses: 3,
        average_response_seconds: 33.33,
        total_cost: 0.53
      }
      expect(ok(yield* get(alice, "/api/user/analytics/ai-performance?include_test=true"), "analytics.aiPerformance"))
        .toEqual(withTest)
      // the conversation record's avg_response_time still counts every reply (SPEC.md 2.3): 30 s and 90 s
      const [c1] = yield* sqlRows<
        { response_seconds_total: number | string; responses_count: number | string }
      >`select response_seconds_total, responses_count from conversations
        where workspace_id = ${alice.workspace_id} and not is_test order by id limit 1`
      expect({ seconds: Number(c1!.response_seconds_total), replies: Number(c1!.responses_count) }).toEqual({
        seconds: 120,
        replies: 2
      })

      // migration 0014's backfill, for conversations from before it, computes what the trigger keeps
      yield* sqlRows`update conversations set ai_response_seconds_total = 0, ai_responses_count = 0
        where workspace_id = ${alice.workspace_id}`
      expect(ok(yield* get(alice, "/api/user/analytics/ai-performance"), "analytics.aiPerformance").responses).toBe(0)
      yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(backfillAiResponseTimes))
      expect(ok(yield* get(alice, "/api/user/analytics/ai-performance"), "analytics.aiPerformance")).toEqual(expected)
      expect(ok(yield* get(alice, "/api/user/analytics/ai-performance?include_test=true"), "analytics.aiPerformance"))
        .toEqual(withTest)
    }))

  it.effect("a new account answers zeros and a null average response time", () =>
    Effect.gen(function*() {
      const carol = yield* seedUser()
      expect(ok(yield* get(carol, "/api/user/analytics/summary"), "analytics.summary")).toEqual({
        pipelines: 0,
        opportunities: 0,
        conversations: 0,
        messages: 0,
        opportunities_by_status: { pending: 0, active: 0, paused: 0, won: 0, lost: 0 },
        messages_by_role: { user: 0, assistant: 0 }
      })
      expect(ok(yield* get(carol, "/api/user/analytics/ai-performance"), "analytics.aiPerformance")).toEqual({
        ai_messages: 0,
        manual_messages: 0,
        responses: 0,
        average_response_seconds: null,
        total_cost: 0
      })
      expect(yield* stats(carol)).toEqual({
        totals: { messages: 0, user_messages: 0, assistant_messages: 0, ai_messages: 0, manual_messages: 0, cost: 0 },
        series: []
      })
    }))

  it.effect("messaging-stats: totals and one entry per day, days without messages as zeros", () =>
    Effect.gen(function*() {
      const { alice } = yield* fixture
      const r = yield* get(alice, "/api/user/analytics/messaging-stats")
      expect(r.status).toBe(200)
      expect(ok(r, "analytics.messagingStats")).toEqual({
        totals: {
          messages: 6,
          user_messages: 3,
          assistant_messages: 3,
          ai_messages: 2,
          manual_messages: 1,
          cost: 0.03
        },
        series: [
          day("2026-03-01", { messages: 2, user_messages: 1, assistant_messages: 1, ai_messages: 1, cost: 0.01 }),
          day("2026-03-02", { messages: 2, user_messages: 1, assistant_messages: 1, ai_messages: 1, cost: 0.02 }),
          day("2026-03-03", { messages: 2, user_messages: 1, assistant_messages: 1, manual_messages: 1 })
        ]
      })
      const withTest = yield* stats(alice, "?include_test=true")
      expect(withTest.totals).toMatchObject({ messages: 8, ai_messages: 3, cost: 0.53 })
      expect(withTest.series[0]).toEqual(
        day("2026-03-01", { messages: 4, user_messages: 2, assistant_messages: 2, ai_messages: 2, cost: 0.51 })
      )
    }))

  it.effect("messaging-stats by provider and pipeline; widget is its own channel kind", () =>
    Effect.gen(function*() {
      const { alice, support, sales } = yield* fixture
      const web = yield* stats(alice, "?provider=web")
      expect(web.totals).toMatchObject({ messages: 4, ai_messages: 1, manual_messages: 1, cost: 0.01 })
      expect(web.series.map((d) => [d.date, d.messages])).toEqual([["2026-03-01", 2], ["2026-03-02", 0], [
        "2026-03-03",
        2
      ]])
      const whatsapp = yield* stats(alice, "?provider=whatsapp")
      expect(whatsapp.totals).toMatchObject({ messages: 2, ai_messages: 1, cost: 0.02 })
      expect(whatsapp.series.map((d) => d.date)).toEqual(["2026-03-02"])
      expect((yield* stats(alice, "?provider=widget")).totals.messages).toBe(0)
      expect((yield* stats(alice, "?provider=instagram")).series).toEqual([])
      expect((yield* stats(alice, `?pipeline_id=${support.pipeline.id}`)).totals).toMatchObject({
        messages: 2,
        cost: 0.02
      })
      expect((yield* stats(alice, `?pipeline_id=${sales.pipeline.id}`)).totals).toMatchObject({ messages: 4 })
      expect((yield* stats(alice, `?pipeline_id=${sales.pipeline.id}&include_test=true`)).totals).toMatchObject({
        messages: 6
      })
      expect((yield* stats(alice, `?pipeline_id=${support.pipeline.id}&provider=web`)).totals.messages).toBe(0)
    }))

  it.effect("messaging-stats by date: bare dates cover whole UTC days, date-times are inclusive bounds", () =>
    Effect.gen(function*() {
      const { alice } = yield* fixture
      const messages = (query: string) => Effect.map(stats(alice, query), (s) => s.totals.messages)
      expect(yield* messages("?start_date=2026-03-02")).toBe(4)
      expect(yield* messages("?end_date=2026-03-02")).toBe(4)
      expect(yield* messages("?start_date=2026-03-02&end_date=2026-03-02")).toBe(2)
      expect((yield* stats(alice, "?start_date=2026-03-02&end_date=2026-03-02")).series.map((d) => d.date))
        .toEqual(["2026-03-02"])
      expect(yield* messages("?end_date=2026-03-01T10:00:30Z")).toBe(2)
      expect(yield* messages("?end_date=2026-03-01T10:00:29.999Z")).toBe(1)
      expect(yield* messages("?start_date=2026-03-03T09:01:30Z")).toBe(1)
      // +02:00 sent unencoded arrives as a space; both spellings mean the same instant
      expect(yield* messages("?end_date=2026-03-01T12:00:30+02:00")).toBe(2)
      expect(yield* messages("?end_date=2026-03-01T12:00:30%2B02:00")).toBe(2)
      expect(yield* messages("?start_date=2026-04-01")).toBe(0)
    }))

  it.effect("another workspace's data is never counted, and its owner sees only their own", () =>
    Effect.gen(function*() {
      const { alice, bob } = yield* fixture
      expect(ok(yield* get(bob, "/api/user/analytics/summary"), "analytics.summary")).toMatchObject({
        pipelines: 1,
        opportunities: 1,
        conversations: 1,
        messages: 2
      })
      expect(ok(yield* get(bob, "/api/user/analytics/ai-performance"), "analytics.aiPerformance")).toEqual({
        ai_messages: 1,
        manual_messages: 0,
        responses: 1,
        average_response_seconds: 5,
        total_cost: 1
      })
      const alices = yield* stats(alice, "?start_date=2026-03-01&end_date=2026-03-01&provider=web")
      expect(alices.totals).toMatchObject({ messages: 2, cost: 0.01 })
    }))

  it.effect("a manager counts every reachable workspace; workspace_id narrows to one", () =>
    Effect.gen(function*() {
      const { alice } = yield* fixture
      const manager = yield* seedUser()
      yield* funnel(manager, "Own")
      yield* Effect.flatMap(Identity, (identity) => identity.grantManager(manager.email, alice.workspace_id as never))
      expect(ok(yield* get(manager, "/api/user/analytics/summary"), "analytics.summary")).toMatchObject({
        pipelines: 3,
        opportunities: 3,
        messages: 6
      })
      expect(
        ok(yield* get(manager, `/api/user/analytics/summary?workspace_id=${alice.workspace_id}`), "analytics.summary")
      ).toMatchObject({
        pipelines: 2,
        messages: 6
      })
      expect(
        ok(yield* get(manager, `/api/user/analytics/summary?workspace_id=${manager.workspace_id}`), "analytics.summary")
      ).toMatchObject(
        {
          pipelines: 1,
          messages: 0
        }
      )
      expect((yield* stats(manager, `?workspace_id=${alice.workspace_id}`)).totals.messages).toBe(6)
      expect(
        ok(
          yield* get(manager, `/api/user/analytics/ai-performance?workspace_id=${manager.workspace_id}`),
          "analytics.aiPerformance"
        ).ai_messages
      ).toBe(0)
    }))

  it.effect("a workspace_id the caller does not reach is 404 like a missing one, on every endpoint", () =>
    Effect.gen(function*() {
      const { alice, bob } = yield* fixture
      for (const endpoint of ["summary", "ai-performance", "messaging-stats"]) {
        for (const id of [bob.workspace_id, 987654321]) {
          const r = yield* get(alice, `/api/user/analytics/${endpoint}?workspace_id=${id}`)
          expect(r.status).toBe(404)
          expect(r.body).toEqual({
            status: false,
            code: 404,
            validation: [],
            message: "Workspace not found.",
            data: null
          })
        }
      }
    }))

  it.effect("a pipeline_id outside the counted workspaces is 404 Pipeline not found.", () =>
    Effect.gen(function*() {
      const { alice, bob, theirs, sales } = yield* fixture
      for (const id of [theirs.pipeline.id, 987654321]) {
        const r = yield* get(alice, `/api/user/analytics/messaging-stats?pipeline_id=${id}`)
        expect(r.status).toBe(404)
        expect(r.body).toEqual({ status: false, code: 404, validation: [], message: "Pipeline not found.", data: null })
      }
      const manager = yield* seedUser()
      yield* Effect.flatMap(Identity, (identity) => identity.grantManager(manager.email, alice.workspace_id as never))
      expect((yield* stats(manager, `?pipeline_id=${sales.pipeline.id}`)).totals.messages).toBe(4)
      expectStatus(
        yield* get(
          manager,
          `/api/user/analytics/messaging-stats?pipeline_id=${sales.pipeline.id}&workspace_id=${manager.workspace_id}`
        ),
        404,
        "Pipeline not found."
      )
      expect((yield* stats(bob, `?pipeline_id=${theirs.pipeline.id}`)).totals.messages).toBe(2)
    }))

  it.effect("a message of a test opportunity is left out even in a regular conversation", () =>
    Effect.gen(function*() {
      const dana = yield* seedUser()
      const { pipeline } = yield* funnel(dana, "Mixed")
      const web = yield* channel(dana, "web", pipeline.id)
      const real = yield* createOpportunity(dana, { pipeline_id: pipeline.id, contact: { phone: freshPhone() } })
      // with contact_id: the record without the contact's details
      const test = yield* createOnContact(dana, {
        pipeline_id: pipeline.id,
        contact_id: real.contact_id,
        is_test: true
      })
      const c = yield* conversation(dana, real.contact_id, web.id, pipeline.id)
      yield* message(c, "user", "2026-05-01T10:00:00Z", { opportunityId: real.id })
      yield* message(c, "user", "2026-05-01T10:01:00Z", { opportunityId: test.id })
      yield* message(c, "assistant", "2026-05-01T10:01:05Z", { opportunityId: test.id, cost: 0.2 })
      expect(ok(yield* get(dana, "/api/user/analytics/summary"), "analytics.summary")).toMatchObject({
        opportunities: 1,
        messages: 1
      })
      expect((yield* stats(dana)).totals).toMatchObject({ messages: 1, cost: 0 })
      expect((yield* stats(dana, "?include_test=true")).totals).toMatchObject({ messages: 3, cost: 0.2 })
      expect(ok(yield* get(dana, "/api/user/analytics/ai-performance"), "analytics.aiPerformance")).toMatchObject({
        ai_messages: 0,
        total_cost: 0
      })
    }))

  it.effect("bad query parameters are 422 naming each field", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const r = yield* get(
        alice,
        "/api/user/analytics/messaging-stats?start_date=yesterday&end_date=2026-02-30&pipeline_id=abc&provider=fax&include_test=maybe&workspace_id=0"
      )
      expect422(r, ["end_date", "include_test", "pipeline_id", "provider", "start_date", "workspace_id"])
      const refused = failure(r)
      const messages = Object.fromEntries(refused.validation.map((v) => [v.field, v.message]))
      expect(messages.start_date).toBe(
        "The start_date field must be an ISO 8601 date (2026-01-31 or 2026-01-31T10:00:00Z)."
      )
      expect(messages.provider).toContain("\"whatsapp\"")
      expect(messages.provider).toContain("\"widget\"")
      expect(refused.message).toBe(`${refused.validation[0]!.message} (and 5 more errors)`)
      // the example of docs/api.md
      const documented = yield* get(alice, "/api/user/analytics/messaging-stats?start_date=yesterday&provider=fax")
      expect(documented.body).toEqual({
        status: false,
        code: 422,
        data: null,
        message:
          "The start_date field must be an ISO 8601 date (2026-01-31 or 2026-01-31T10:00:00Z). (and 1 more error)",
        validation: [
          {
            field: "start_date",
            message: "The start_date field must be an ISO 8601 date (2026-01-31 or 2026-01-31T10:00:00Z)."
          },
          {
            field: "provider",
            message:
              "The provider field must be one of \"web\", \"widget\", \"whatsapp\", \"messenger\", \"instagram\", \"linkedin\", \"telegram\", \"email\" or \"sms\"."
          }
        ]
      })
      const reversed = yield* get(
        alice,
        "/api/user/analytics/messaging-stats?start_date=2026-03-02&end_date=2026-03-01"
      )
      expect422(reversed, ["end_date"])
      expect(failure(reversed).validation[0]!.message).toBe(
        "The end_date field must be a date after or equal to start_date."
      )
      expect422(yield* get(alice, "/api/user/analytics/messaging-stats?end_date=2026-03-01T25:00:00Z"), ["end_date"])
      for (const endpoint of ["summary", "ai-performance"]) {
        expect422(yield* get(alice, `/api/user/analytics/${endpoint}?workspace_id=x&include_test=yes`), [
          "include_test",
          "workspace_id"
        ])
      }
    }))

  it.effect("401 without a token, 403 without opportunities:read", () =>
    Effect.gen(function*() {
      const alice = yield* seedUser()
      const pipelinesOnly = { token: (yield* tokenFor(alice.email, ["pipelines:read", "mcp:use"])).token }
      const reader = { token: (yield* tokenFor(alice.email, ["opportunities:read"])).token }
      for (const endpoint of ["summary", "ai-performance", "messaging-stats"]) {
        expectStatus(yield* call(`/api/user/analytics/${endpoint}`), 401)
        expectStatus(
          yield* get(pipelinesOnly, `/api/user/analytics/${endpoint}`),
          403,
          "Missing required scope: opportunities:read"
        )
        expect((yield* get(reader, `/api/user/analytics/${endpoint}`)).status).toBe(200)
      }
    }))
})
