/**
 * Groundwork for issue 20, the per-day analytics series (`GET /api/user/analytics/timeseries`) through the real
 * server: messages inserted at chosen times (as analytics.http.test.ts does), handoffs moved over REST on web-chat
 * conversations and opportunities moved into won and lost stages, their events' times then set in the database.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { failure } from "./support/Contract.js"
import {
  createOpportunity,
  createStage,
  expect422,
  freshPhone,
  get,
  linkWebChannel,
  ok,
  post,
  put,
  sqlRows
} from "./support/Opportunities.js"
import { giveCredits, seedUser, TestServerLive, tokenFor } from "./support/TestServer.js"
import { say } from "./support/WebChat.js"

type Caller = {
  readonly token: string
  readonly workspace_id: number
  readonly user_id: number
  readonly email: string
}
type Channel = { readonly id: number; readonly client_id: string; readonly client_secret: string }

/** A pipeline answering at once, with Open, won and lost stages and a web channel. */
const agent = (owner: Caller, name: string) =>
  Effect.gen(function*() {
    const pipeline = ok(
      yield* post(owner, "/api/user/pipelines", {
        name,
        agent_type_id: 1,
        ai_model_id: 1,
        language_id: 1,
        reply_debounce_ms: 0,
        instructions: "We sell bicycles."
      }),
      "pipelines.create"
    )
    const open = yield* createStage(owner, pipeline.id, "Open", 1)
    const won = yield* createStage(owner, pipeline.id, "Closed won", 2, "won")
    const lost = yield* createStage(owner, pipeline.id, "Closed lost", 3, "lost")
    const channel: Channel = yield* linkWebChannel(owner, pipeline.id)
    return { pipeline: pipeline as { id: number; name: string }, open, won, lost, channel }
  })
type Agent = Effect.Effect.Success<ReturnType<typeof agent>>

let sequence = 0

/** A conversation and its messages inserted directly, in time order (as analytics.http.test.ts does). */
const conversationOf = (owner: Caller, a: Agent, isTest = false) =>
  Effect.gen(function*() {
    const opp = yield* createOpportunity(owner, { pipeline_id: a.pipeline.id, contact: { phone: freshPhone() } })
    const rows = yield* sqlRows<{ id: number }>`
      insert into conversations (workspace_id, contact_id, channel_id, is_test)
      values (${owner.workspace_id}, ${opp.contact_id}, ${a.channel.id}, ${isTest}) returning id`
    return { id: rows[0]!.id, workspace_id: owner.workspace_id, channel_id: a.channel.id, pipeline_id: a.pipeline.id }
  })
type Conversation = Effect.Effect.Success<ReturnType<typeof conversationOf>>

const message = (c: Conversation, sender: "contact" | "ai" | "operator", at: string, cost = 0) => {
  const role = sender === "contact" ? "user" : "assistant"
  return sqlRows`
    insert into messages (id, workspace_id, conversation_id, channel_id, pipeline_id, role, status, message, is_manual, cost_for_user, created_at)
    values (${
    `01SERIES${Date.now()}${++sequence}`.slice(0, 40)
  }, ${c.workspace_id}, ${c.id}, ${c.channel_id}, ${c.pipeline_id}, ${role},
            ${role === "user" ? "received" : "sent_to_user"}, 'text', ${
    sender === "operator"
  }, ${cost}, ${at}::timestamptz)`
}

/**
 * A web-chat conversation (its messages are today's, outside the series below) and handoff moves on it at `day` 10:00
 * UTC plus seconds.
 */
const handoffs = (
  owner: Caller,
  a: Agent,
  key: string,
  day: string,
  moves: ReadonlyArray<readonly ["request" | "take" | "return", number]>
) =>
  Effect.gen(function*() {
    yield* say(a.channel, key, "Hello there")
    const id = (yield* sqlRows<
      { id: number }
    >`select conversation_id as id from messages where external_chat_id = ${key} limit 1`)[0]!.id
    for (const [action] of moves) {
      ok(yield* post(owner, `/api/user/conversations/${id}/handoff`, { action }), "conversations.handoff")
    }
    const events = yield* sqlRows<
      { id: number }
    >`select id from handoff_events where conversation_id = ${id} order by id`
    expect(events).toHaveLength(moves.length)
    for (const [i, event] of events.entries()) {
      const at = new Date(Date.parse(`${day}T10:00:00Z`) + moves[i]![1] * 1000).toISOString()
      yield* sqlRows`update handoff_events set created_at = ${at}::timestamptz where id = ${event.id}`
    }
  })

/** An opportunity moved through `stages` (ids), each entry then dated `days[i]` 10:00 UTC. */
const closing = (owner: Caller, a: Agent, stages: ReadonlyArray<number>, days: ReadonlyArray<string>, isTest = false) =>
  Effect.gen(function*() {
    const opp = yield* createOpportunity(owner, {
      pipeline_id: a.pipeline.id,
      is_test: isTest,
      contact: { phone: freshPhone() }
    })
    for (const stage of stages) {
      ok(yield* put(owner, `/api/user/opportunities/${opp.id}`, { stage_id: stage }), "opportunities.update")
    }
    const entries = yield* sqlRows<{ id: number }>`
      select id from stage_entries where opportunity_id = ${opp.id} and cause = 'moved' order by id`
    expect(entries).toHaveLength(stages.length)
    for (const [i, entry] of entries.entries()) {
      yield* sqlRows`update stage_entries set created_at = ${`${
        days[i]
      }T10:00:00Z`}::timestamptz where id = ${entry.id}`
    }
  })

/**
 * Alice has Sales and Support. Days (UTC): 06-01, 06-02 (nothing), 06-03, 06-04.
 *
 * | what                  | pipeline | day   | detail                                                                 |
 * |-----------------------|----------|-------|------------------------------------------------------------------------|
 * | c1 messages           | Sales    | 06-01 | contact 10:00:00, AI 10:00:30 (0.25), operator 10:05                   |
 * |                       |          | 06-03 | contact 09:00:00, contact 09:00:20, AI 09:01:00 (0.1): 40 s            |
 * | c2 messages           | Support  | 06-01 | contact 11:00:00, AI 11:01:30 (0.5): 90 s                              |
 * |                       |          | 06-04 | operator 08:00, AI 08:00:10 (0.05): not a reply (the operator's before)|
 * | test conversation     | Sales    | 06-01 | contact 12:00:00, AI 12:00:05 (1): 5 s, only with include_test         |
 * | handoffs              | Sales    | 06-01 | request, take 40 s later                                               |
 * |                       | Support  | 06-01 | request, take 100 s later                                              |
 * |                       | Sales    | 06-03 | request, return 50 s later (not taken)                                 |
 * | stage entries         | Sales    | 06-01 | won; 06-03 lost; 06-04 won, open, won again (one opportunity)          |
 * |                       | Support  | 06-03 | won                                                                    |
 * |                       | Sales    | 06-01 | won, a test opportunity: only with include_test                        |
 *
 * Bob, another workspace, has a contact message and an AI reply (7.0), a taken request and a won opportunity on 06-01.
 */
const build = Effect.gen(function*() {
  const alice = (yield* seedUser()) as Caller
  const bob = (yield* seedUser()) as Caller
  yield* giveCredits(alice.workspace_id, { credits: 100, is_subscription_active: true })
  yield* giveCredits(bob.workspace_id, { credits: 100, is_subscription_active: true })
  const sales = yield* agent(alice, "Sales")
  const support = yield* agent(alice, "Support")

  const c1 = yield* conversationOf(alice, sales)
  yield* message(c1, "contact", "2025-06-01T10:00:00Z")
  yield* message(c1, "ai", "2025-06-01T10:00:30Z", 0.25)
  yield* message(c1, "operator", "2025-06-01T10:05:00Z")
  yield* message(c1, "contact", "2025-06-03T09:00:00Z")
  yield* message(c1, "contact", "2025-06-03T09:00:20Z")
  yield* message(c1, "ai", "2025-06-03T09:01:00Z", 0.1)
  const c2 = yield* conversationOf(alice, support)
  yield* message(c2, "contact", "2025-06-01T11:00:00Z")
  yield* message(c2, "ai", "2025-06-01T11:01:30Z", 0.5)
  yield* message(c2, "operator", "2025-06-04T08:00:00Z")
  yield* message(c2, "ai", "2025-06-04T08:00:10Z", 0.05)
  const test = yield* conversationOf(alice, sales, true)
  yield* message(test, "contact", "2025-06-01T12:00:00Z")
  yield* message(test, "ai", "2025-06-01T12:00:05Z", 1)

  yield* handoffs(alice, sales, "ts-taken", "2025-06-01", [["request", 0], ["take", 40]])
  yield* handoffs(alice, support, "ts-support", "2025-06-01", [["request", 0], ["take", 100]])
  yield* handoffs(alice, sales, "ts-returned", "2025-06-03", [["request", 0], ["return", 50]])

  yield* closing(alice, sales, [sales.won.id], ["2025-06-01"])
  yield* closing(alice, sales, [sales.lost.id], ["2025-06-03"])
  yield* closing(alice, sales, [sales.won.id, sales.open.id, sales.won.id], ["2025-06-04", "2025-06-04", "2025-06-04"])
  yield* closing(alice, support, [support.won.id], ["2025-06-03"])
  yield* closing(alice, sales, [sales.won.id], ["2025-06-01"], true)

  const theirs = yield* agent(bob, "Sales")
  const c4 = yield* conversationOf(bob, theirs)
  yield* message(c4, "contact", "2025-06-01T10:00:00Z")
  yield* message(c4, "ai", "2025-06-01T10:00:05Z", 7)
  yield* handoffs(bob, theirs, "ts-foreign", "2025-06-01", [["request", 0], ["take", 5]])
  yield* closing(bob, theirs, [theirs.won.id], ["2025-06-01"])

  const closedIn = (a: Agent) => ({
    won: { stage_id: a.won.id as number, stage_name: "Closed won", nature: "won" },
    lost: { stage_id: a.lost.id as number, stage_name: "Closed lost", nature: "lost" }
  })
  return {
    alice,
    bob,
    sales: sales.pipeline,
    support: support.pipeline,
    theirs: theirs.pipeline,
    salesStages: closedIn(sales),
    supportStages: closedIn(support),
    theirStages: closedIn(theirs)
  }
})

type StageCount = { stage_id: number; stage_name: string; nature: string; count: number }

/** A `closed_by_stage` entry: one of the fixture's won or lost stages with its count. */
const entered = (stage: Omit<StageCount, "count">, count: number): StageCount => ({ ...stage, count })

const day = (date: string, figures: Record<string, number | null | ReadonlyArray<StageCount>> = {}) => ({
  date,
  contact_messages: 0,
  ai_messages: 0,
  operator_messages: 0,
  ai_cost: 0,
  median_ai_response_seconds: null,
  handoffs_requested: 0,
  median_take_seconds: null,
  won: 0,
  lost: 0,
  closed_by_stage: [],
  ...figures
})

const june = "?start_date=2025-06-01&end_date=2025-06-04"
const series = (who: Caller, query = june) =>
  Effect.map(get(who, `/api/user/analytics/timeseries${query}`), (r) => ok(r, "analytics.timeseries"))

// the live clock: the web-chat receiver and the agent's replies take real time
layer(TestServerLive(), { excludeTestServices: true })("analytics time series", (it) => {
  let built: Effect.Effect.Success<typeof build> | undefined
  const fixture = Effect.suspend(() =>
    built === undefined ? Effect.tap(build, (f) => Effect.sync(() => (built = f))) : Effect.succeed(built)
  )

  it.effect(
    "every day of the range, each series by day, a day without data as zeros and null medians",
    () =>
      Effect.gen(function*() {
        const { alice, salesStages, supportStages } = yield* fixture
        // 06-03's two stages in stage_id order: Sales' were created first
        expect(salesStages.lost.stage_id).toBeLessThan(supportStages.won.stage_id)
        expect(yield* series(alice)).toEqual({
          start_date: "2025-06-01",
          end_date: "2025-06-04",
          series: [
            day("2025-06-01", {
              contact_messages: 2,
              ai_messages: 2,
              operator_messages: 1,
              ai_cost: 0.75,
              median_ai_response_seconds: 60,
              handoffs_requested: 2,
              median_take_seconds: 70,
              won: 1,
              closed_by_stage: [entered(salesStages.won, 1)]
            }),
            day("2025-06-02"),
            day("2025-06-03", {
              contact_messages: 2,
              ai_messages: 1,
              ai_cost: 0.1,
              median_ai_response_seconds: 40,
              handoffs_requested: 1,
              won: 1,
              lost: 1,
              closed_by_stage: [entered(salesStages.lost, 1), entered(supportStages.won, 1)]
            }),
            // won, open, won again: the opportunity counts once for its stage too
            day("2025-06-04", {
              ai_messages: 1,
              operator_messages: 1,
              ai_cost: 0.05,
              won: 1,
              closed_by_stage: [entered(salesStages.won, 1)]
            })
          ]
        })
      }),
    120_000
  )

  it.effect("pipeline_id narrows every series to one pipeline", () =>
    Effect.gen(function*() {
      const { alice, sales, salesStages } = yield* fixture
      expect((yield* series(alice, `${june}&pipeline_id=${sales.id}`)).series).toEqual([
        day("2025-06-01", {
          contact_messages: 1,
          ai_messages: 1,
          operator_messages: 1,
          ai_cost: 0.25,
          median_ai_response_seconds: 30,
          handoffs_requested: 1,
          median_take_seconds: 40,
          won: 1,
          closed_by_stage: [entered(salesStages.won, 1)]
        }),
        day("2025-06-02"),
        // Support's won stage is left out
        day("2025-06-03", {
          contact_messages: 2,
          ai_messages: 1,
          ai_cost: 0.1,
          median_ai_response_seconds: 40,
          handoffs_requested: 1,
          lost: 1,
          closed_by_stage: [entered(salesStages.lost, 1)]
        }),
        day("2025-06-04", { won: 1, closed_by_stage: [entered(salesStages.won, 1)] })
      ])
    }), 120_000)

  it.effect(
    "test data counts only with include_test; date-times bound the figures and the days",
    () =>
      Effect.gen(function*() {
        const { alice, salesStages } = yield* fixture
        const withTest = yield* series(alice, "?start_date=2025-06-01&end_date=2025-06-01&include_test=true")
        expect(withTest.series).toEqual([day("2025-06-01", {
          contact_messages: 3,
          ai_messages: 3,
          operator_messages: 1,
          ai_cost: 1.75,
          median_ai_response_seconds: 30,
          handoffs_requested: 2,
          median_take_seconds: 70,
          won: 2,
          closed_by_stage: [entered(salesStages.won, 2)]
        })])
        // from 10:30 on 06-01: c1's first exchange and the Sales handoff and won entry at 10:00 are left out
        const fromHalfPast = yield* series(alice, "?start_date=2025-06-01T10:30:00Z&end_date=2025-06-02")
        expect(fromHalfPast).toMatchObject({ start_date: "2025-06-01", end_date: "2025-06-02" })
        expect(fromHalfPast.series[0]).toEqual(day("2025-06-01", {
          contact_messages: 1,
          ai_messages: 1,
          operator_messages: 0,
          ai_cost: 0.5,
          median_ai_response_seconds: 90,
          handoffs_requested: 0
        }))
        expect(fromHalfPast.series).toHaveLength(2)
      }),
    120_000
  )

  it.effect("without dates: the 30 days to today; 366 days at most", () =>
    Effect.gen(function*() {
      const { alice } = yield* fixture
      const recent = yield* series(alice, "")
      const today = new Date().toISOString().slice(0, 10)
      expect(recent.series).toHaveLength(30)
      expect(recent.end_date).toBe(today)
      expect(recent.series[29]!.date).toBe(today)
      expect((yield* series(alice, "?start_date=2024-01-01&end_date=2024-12-31")).series).toHaveLength(366)
      expect422(yield* get(alice, "/api/user/analytics/timeseries?start_date=2025-01-01&end_date=2026-01-02"), [
        "end_date"
      ])
      expect422(yield* get(alice, "/api/user/analytics/timeseries?start_date=2020-01-01"), ["end_date"])
    }), 120_000)

  it.effect(
    "another workspace's data is never counted; its pipeline and workspace are 404",
    () =>
      Effect.gen(function*() {
        const { alice, bob, support, theirs, theirStages } = yield* fixture
        const foreign = yield* get(alice, `/api/user/analytics/timeseries?pipeline_id=${theirs.id}`)
        expect(foreign.status).toBe(404)
        expect(foreign.body).toEqual({
          status: false,
          code: 404,
          validation: [],
          message: "Pipeline not found.",
          data: null
        })
        const otherWorkspace = yield* get(alice, `/api/user/analytics/timeseries?workspace_id=${bob.workspace_id}`)
        expect(otherWorkspace.status).toBe(404)
        expect(failure(otherWorkspace).message).toBe("Workspace not found.")
        expect((yield* get(bob, `/api/user/analytics/timeseries?pipeline_id=${support.id}`)).status).toBe(404)

        expect((yield* series(bob, "?start_date=2025-06-01&end_date=2025-06-02")).series).toEqual([
          day("2025-06-01", {
            contact_messages: 1,
            ai_messages: 1,
            ai_cost: 7,
            median_ai_response_seconds: 5,
            handoffs_requested: 1,
            median_take_seconds: 5,
            won: 1,
            closed_by_stage: [entered(theirStages.won, 1)]
          }),
          day("2025-06-02")
        ])
        expect((yield* series(alice, `${june}&workspace_id=${alice.workspace_id}`)).series[0]).toMatchObject({
          ai_cost: 0.75,
          won: 1
        })
      }),
    120_000
  )

  it.effect(
    "bad query parameters are 422 naming each field; 403 without opportunities:read",
    () =>
      Effect.gen(function*() {
        const { alice } = yield* fixture
        expect422(
          yield* get(
            alice,
            "/api/user/analytics/timeseries?start_date=yesterday&end_date=2026-02-30&pipeline_id=abc&include_test=maybe"
          ),
          ["end_date", "include_test", "pipeline_id", "start_date"]
        )
        expect422(yield* get(alice, "/api/user/analytics/timeseries?start_date=2025-06-02&end_date=2025-06-01"), [
          "end_date"
        ])
        const reader = yield* tokenFor(alice.email, ["conversations:read"])
        expect((yield* get({ token: reader.token }, "/api/user/analytics/timeseries")).status).toBe(403)
      }),
    120_000
  )
})
