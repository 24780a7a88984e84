/**
 * Issue 19, handoff analytics (`GET /api/user/analytics/handoffs`) through the real server: contacts write
 * through the web-chat receiver, operators move the handoffs over REST, a won stage resolves one and a
 * timeout hands one back; the events' times are then set in the database so the figures are exact.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { failure } from "./support/Contract.js"
import {
  createOnContact,
  createStage,
  expect422,
  get,
  linkWebChannel,
  ok,
  post,
  put,
  sqlRows
} from "./support/Opportunities.js"
import { giveCredits, seedUser, TestServerLive, tokenFor } from "./support/TestServer.js"
import { say } from "./support/WebChat.js"
import { eventually } from "./support/WebhookReceiver.js"

type Caller = {
  readonly token: string
  readonly workspace_id: number
  readonly user_id: number
  readonly email: string
}
type Channel = { readonly id: number; readonly client_id: string; readonly client_secret: string }

/** A pipeline answering at once with a won stage and a web channel; `settings` for the pipeline. */
const agent = (owner: Caller, name: string, settings: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const pipeline = ok(
      yield* post(owner, "/api/user/pipelines", {
        name,
        agent_type_id: 1,
        ai_model_id: 1,
        language_id: 1,
        reply_debounce_ms: 0,
        instructions: "We sell bicycles.",
        ...settings
      }),
      "pipelines.create"
    )
    yield* createStage(owner, pipeline.id, "Open", 1)
    const won = yield* createStage(owner, pipeline.id, "Closed won", 2, "won")
    const channel: Channel = yield* linkWebChannel(owner, pipeline.id)
    return { pipeline, won, channel }
  })

/** A contact's first message, and the conversation the receiver stored it in. */
const conversationBy = (channel: Channel, contactKey: string) =>
  Effect.gen(function*() {
    yield* say(channel, contactKey, "Hello there")
    const rows = yield* sqlRows<
      { id: number }
    >`select conversation_id as id from messages where external_chat_id = ${contactKey} limit 1`
    return rows[0]!.id
  })

const handoff = (who: Caller, id: number, action: "request" | "take" | "return") =>
  Effect.map(post(who, `/api/user/conversations/${id}/handoff`, { action }), (r) => ok(r, "conversations.handoff"))

const conversation = (who: Caller, id: number) =>
  Effect.map(get(who, `/api/user/conversations/${id}`), (r) => ok(r, "conversations.get"))

/** Waits until the system's move (a resolution, a timeout) gave the conversation back to the agent. */
const backWithAgent = (who: Caller, id: number) =>
  eventually(Effect.map(conversation(who, id), (c) => (c.handoff.state === "ai" ? c : undefined)), 20_000)

/** Sets the conversation's events, in the order they were made, to `day` 10:00 UTC plus these seconds. */
const timeline = (id: number, day: string, seconds: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const events = yield* sqlRows<
      { id: number }
    >`select id from handoff_events where conversation_id = ${id} order by id`
    expect(events).toHaveLength(seconds.length)
    for (const [i, event] of events.entries()) {
      const at = new Date(Date.parse(`${day}T10:00:00Z`) + seconds[i]! * 1000).toISOString()
      yield* sqlRows`update handoff_events set created_at = ${at}::timestamptz where id = ${event.id}`
    }
  })

const stats = (who: Caller, query = "") =>
  Effect.map(get(who, `/api/user/analytics/handoffs${query}`), (r) => ok(r, "analytics.handoffs"))

const zeros = {
  requested: 0,
  taken: 0,
  median_take_seconds: null,
  handed_back: 0,
  resolved: 0,
  open: 0,
  handed_back_share: null
}

/**
 * Alice has Sales and Support (whose waits time out and return); the events (seconds after 10:00 UTC):
 *
 * | conversation      | pipeline          | day   | events                                        | per request
 * |
 * |-------------------|-------------------|-------|-----------------------------------------------|----------------------------------|
 * | handed            | Sales             | 03-01 | request 0, take 60, return 600                | taken 60 s, handed
 * back          |
 * | resolved          | Sales             | 03-01 | request 0, take 180, resolve (won stage) 900  | taken 180 s,
 * resolved            |
 * | twice             | Sales             | 03-01 | request 0, return 100, request 200, take 230  | not taken, handed
 * back; 30 s, open |
 * | direct            | Sales             | 03-01 | take 0, return 50                             | no request: not
 * counted          |
 * | moved (Sales chat)| Support (newest opp) | 03-01 | request 0, take 90, return 300             | taken 90 s, handed
 * back          |
 * | timed-out         | Support           | 03-01 | request 0, timeout 3600                       | not taken, handed
 * back           |
 * | later             | Support           | 03-05 | request 0, take 240                           | taken 240 s, open
 * |
 * | test (is_test)    | Sales             | 03-01 | request 0                                     | open, only with
 * include_test     |
 *
 * Bob, another workspace, has a conversation with a request and a take on 03-01.
 */
const build = Effect.gen(function*() {
  const alice = (yield* seedUser()) as Caller
  const bob = (yield* seedUser()) as Caller
  yield* giveCredits(alice.workspace_id, { credits: 100, is_subscription_active: true })
  yield* giveCredits(bob.workspace_id, { credits: 100, is_subscription_active: true })
  const sales = yield* agent(alice, "Sales")
  const support = yield* agent(alice, "Support", { handoff_timeout_seconds: 3600, handoff_timeout_action: "return" })

  const handed = yield* conversationBy(sales.channel, "ha-handed")
  yield* handoff(alice, handed, "request")
  yield* handoff(alice, handed, "take")
  yield* handoff(alice, handed, "return")
  yield* timeline(handed, "2026-03-01", [0, 60, 600])

  const resolved = yield* conversationBy(sales.channel, "ha-resolved")
  yield* handoff(alice, resolved, "request")
  const taken = yield* handoff(alice, resolved, "take")
  ok(
    yield* put(alice, `/api/user/opportunities/${taken.opportunity!.id}`, { stage_id: sales.won.id }),
    "opportunities.update"
  )
  yield* backWithAgent(alice, resolved)
  yield* timeline(resolved, "2026-03-01", [0, 180, 900])

  const twice = yield* conversationBy(sales.channel, "ha-twice")
  yield* handoff(alice, twice, "request")
  yield* handoff(alice, twice, "return")
  yield* handoff(alice, twice, "request")
  yield* handoff(alice, twice, "take")
  yield* timeline(twice, "2026-03-01", [0, 100, 200, 230])

  const direct = yield* conversationBy(sales.channel, "ha-direct")
  yield* handoff(alice, direct, "take")
  yield* handoff(alice, direct, "return")
  yield* timeline(direct, "2026-03-01", [0, 50])

  // a Sales chat whose newest opportunity is in Support counts for Support
  const moved = yield* conversationBy(sales.channel, "ha-moved")
  const first = yield* conversation(alice, moved)
  yield* sqlRows`update opportunities set created_at = '2026-01-01T00:00:00Z' where id = ${first.opportunity!.id}`
  // on an existing contact (contact_id): the create answers the short record, whose id is all that is needed here
  const newer = yield* createOnContact(alice, { pipeline_id: support.pipeline.id, contact_id: first.contact.id })
  yield* sqlRows`insert into conversation_opportunity (opportunity_id, conversation_id) values (${newer.id}, ${moved}) on conflict do nothing`
  expect((yield* conversation(alice, moved)).opportunity!.pipeline_id).toBe(support.pipeline.id)
  yield* handoff(alice, moved, "request")
  yield* handoff(alice, moved, "take")
  yield* handoff(alice, moved, "return")
  yield* timeline(moved, "2026-03-01", [0, 90, 300])

  const timedOut = yield* conversationBy(support.channel, "ha-timed-out")
  yield* handoff(alice, timedOut, "request")
  // the wait runs out (moved into the past rather than waited for)
  yield* sqlRows`update conversations set handoff_due_at = now() - interval '1 second' where id = ${timedOut}`
  yield* backWithAgent(alice, timedOut)
  yield* timeline(timedOut, "2026-03-01", [0, 3600])

  const later = yield* conversationBy(support.channel, "ha-later")
  yield* handoff(alice, later, "request")
  yield* handoff(alice, later, "take")
  yield* timeline(later, "2026-03-05", [0, 240])

  const test = yield* conversationBy(sales.channel, "ha-test")
  yield* sqlRows`update conversations set is_test = true where id = ${test}`
  yield* handoff(alice, test, "request")
  yield* timeline(test, "2026-03-01", [0])

  const theirs = yield* agent(bob, "Sales")
  const foreign = yield* conversationBy(theirs.channel, "ha-foreign")
  yield* handoff(bob, foreign, "request")
  yield* handoff(bob, foreign, "take")
  yield* timeline(foreign, "2026-03-01", [0, 5])

  return { alice, bob, sales: sales.pipeline, support: support.pipeline, theirs: theirs.pipeline }
})

// the live clock: replies, the stage-entry consumer and the timeout sweep take real time
layer(TestServerLive(), { excludeTestServices: true })("handoff analytics", (it) => {
  let built: Effect.Effect.Success<typeof build> | undefined
  const fixture = Effect.suspend(() =>
    built === undefined ? Effect.tap(build, (f) => Effect.sync(() => (built = f))) : Effect.succeed(built)
  )

  it.effect(
    "requests, median time to take and the share handed back, per pipeline (the newest opportunity's before the channel's) and in total",
    () =>
      Effect.gen(function*() {
        const { alice, sales, support } = yield* fixture
        const data = yield* stats(alice)
        // taken after 30, 60, 90, 180 and 240 s; handed back by three returns and a timeout, resolved once; two still
        // open
        expect(data.totals).toEqual({
          requested: 7,
          taken: 5,
          median_take_seconds: 90,
          handed_back: 4,
          resolved: 1,
          open: 2,
          handed_back_share: 0.8
        })
        expect(data.pipelines).toEqual([
          {
            pipeline_id: sales.id,
            pipeline_name: "Sales",
            requested: 4,
            taken: 3,
            median_take_seconds: 60,
            handed_back: 2,
            resolved: 1,
            open: 1,
            handed_back_share: 0.6667
          },
          {
            pipeline_id: support.id,
            pipeline_name: "Support",
            requested: 3,
            taken: 2,
            median_take_seconds: 165,
            handed_back: 2,
            resolved: 0,
            open: 1,
            handed_back_share: 1
          }
        ])
      }),
    120_000
  )

  it.effect("test conversations count only with include_test", () =>
    Effect.gen(function*() {
      const { alice, sales } = yield* fixture
      const data = yield* stats(alice, "?include_test=true")
      expect(data.totals).toMatchObject({ requested: 8, taken: 5, open: 3 })
      expect(data.pipelines.find((p) => p.pipeline_id === sales.id)).toMatchObject({ requested: 5, open: 2 })
    }), 120_000)

  it.effect(
    "start_date and end_date bound the requests' created_at; a bare end date covers its whole UTC day",
    () =>
      Effect.gen(function*() {
        const { alice, support } = yield* fixture
        const firstDay = yield* stats(alice, "?start_date=2026-03-01&end_date=2026-03-01")
        expect(firstDay.totals).toMatchObject({
          requested: 6,
          taken: 4,
          median_take_seconds: 75,
          handed_back: 4,
          resolved: 1,
          open: 1
        })
        expect(firstDay.pipelines.find((p) => p.pipeline_id === support.id)).toMatchObject({
          requested: 2,
          taken: 1,
          median_take_seconds: 90,
          handed_back: 2,
          open: 0,
          handed_back_share: 1
        })
        const fromThe2nd = yield* stats(alice, "?start_date=2026-03-02")
        expect(fromThe2nd.totals).toMatchObject({
          requested: 1,
          taken: 1,
          median_take_seconds: 240,
          handed_back_share: null
        })
        expect(fromThe2nd.pipelines.map((p) => p.pipeline_id)).toEqual([support.id])
        // a date-time is an inclusive bound: the request at 10:00:00 on 03-05 is in, one second earlier is out
        expect((yield* stats(alice, "?start_date=2026-03-05T10:00:00Z")).totals.requested).toBe(1)
        expect((yield* stats(alice, "?end_date=2026-03-05T09:59:59Z")).totals.requested).toBe(6)
        // what followed a request counts though it came after the period: the timeout an hour later is in
        expect((yield* stats(alice, "?end_date=2026-03-01T10:05:00Z")).totals).toMatchObject({
          requested: 6,
          handed_back: 4
        })
      }),
    120_000
  )

  it.effect(
    "pipeline_id narrows to one pipeline; another workspace's pipeline is 404 and its handoffs are never counted",
    () =>
      Effect.gen(function*() {
        const { alice, bob, support, theirs } = yield* fixture
        const one = yield* stats(alice, `?pipeline_id=${support.id}`)
        expect(one.totals).toMatchObject({ requested: 3, taken: 2, median_take_seconds: 165 })
        expect(one.pipelines.map((p) => p.pipeline_id)).toEqual([support.id])

        const foreign = yield* get(alice, `/api/user/analytics/handoffs?pipeline_id=${theirs.id}`)
        expect(foreign.status).toBe(404)
        expect(foreign.body).toEqual({
          status: false,
          code: 404,
          validation: [],
          message: "Pipeline not found.",
          data: null
        })
        const otherWorkspace = yield* get(alice, `/api/user/analytics/handoffs?workspace_id=${bob.workspace_id}`)
        expect(otherWorkspace.status).toBe(404)
        expect(failure(otherWorkspace).message).toBe("Workspace not found.")
        expect((yield* get(bob, `/api/user/analytics/handoffs?pipeline_id=${support.id}`)).status).toBe(404)

        const bobs = yield* stats(bob)
        expect(bobs.totals).toMatchObject({ requested: 1, taken: 1, median_take_seconds: 5, open: 1 })
        expect(bobs.pipelines.map((p) => p.pipeline_id)).toEqual([theirs.id])
      }),
    120_000
  )

  it.effect("an account without handoffs answers zeros, null median and null share", () =>
    Effect.gen(function*() {
      const carol = (yield* seedUser()) as Caller
      expect(yield* stats(carol)).toEqual({ totals: zeros, pipelines: [] })
    }))

  it.effect(
    "bad query parameters are 422 naming each field; 403 without opportunities:read",
    () =>
      Effect.gen(function*() {
        const { alice } = yield* fixture
        expect422(
          yield* get(
            alice,
            "/api/user/analytics/handoffs?start_date=yesterday&end_date=2026-02-30&pipeline_id=abc&include_test=maybe"
          ),
          ["end_date", "include_test", "pipeline_id", "start_date"]
        )
        expect422(yield* get(alice, "/api/user/analytics/handoffs?start_date=2026-03-02&end_date=2026-03-01"), [
          "end_date"
        ])
        const reader = yield* tokenFor(alice.email, ["conversations:read"])
        expect((yield* get({ token: reader.token }, "/api/user/analytics/handoffs")).status).toBe(403)
      }),
    120_000
  )
})
