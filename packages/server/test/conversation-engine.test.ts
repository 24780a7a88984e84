/**
 * The worker engine's per-conversation entity and its guards: every contact message reaches its
 * conversation's entity, a burst within the pipeline's debounce window is taken in one turn, a message
 * whose hand-over a crash interrupted is found by the orphan sweep, and a webhook retry whose durable
 * wake-up was lost is resumed by the retry sweep.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Deliveries } from "../src/delivery/Deliveries.js"
import { expect422, funnel, linkWebChannel, ok, put } from "./support/Opportunities.js"
import { attempts, replyOn } from "./support/Replies.js"
import { seedUser, TestServerLive } from "./support/TestServer.js"
import { say } from "./support/WebChat.js"
import { eventually, webhookReceiver } from "./support/WebhookReceiver.js"

/** A workspace with a pipeline, its web channel, and the pipeline's debounce window set. */
const webChat = (debounceMs: number) =>
  Effect.gen(function*() {
    const owner = yield* seedUser()
    const { pipeline } = yield* funnel(owner)
    ok(yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { reply_debounce_ms: debounceMs }), "pipelines.update")
    const channel = yield* linkWebChannel(owner, pipeline.id)
    return { owner, pipeline, channel }
  })

const handled = (ids: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ id: string; created_at: string; handled_at: string | null }>`
      select id, created_at, handled_at from messages where id in ${sql.in(ids)} order by created_at, id`).pipe(
      Effect.orDie
    )

layer(
  TestServerLive({ OUTBOUND_ALLOW_PRIVATE: "true", ENGINE_SWEEP_INTERVAL_MS: "1000", WEBHOOK_RETRY_DELAY_MS: "3000" }),
  { excludeTestServices: true }
)("conversation engine", (it) => {
  it.effect("every contact message reaches its conversation's entity", () =>
    Effect.gen(function*() {
      const { channel } = yield* webChat(0)
      const id = yield* say(channel, "visitor-1", "Hello?")
      const [row] = yield* eventually(Effect.map(handled([id]), (rows) => rows[0]?.handled_at ? rows : undefined))
      expect(row!.handled_at).not.toBeNull()
    }))

  it.effect("a burst within the debounce window is taken in one turn, after the window", () =>
    Effect.gen(function*() {
      const { channel } = yield* webChat(1500)
      const ids = [
        yield* say(channel, "visitor-2", "Hi"),
        yield* say(channel, "visitor-2", "I have a question"),
        yield* say(channel, "visitor-2", "about pricing")
      ]
      // inside the window nothing is taken yet
      expect((yield* handled(ids)).map((r) => r.handled_at)).toEqual([null, null, null])
      const rows = yield* eventually(
        Effect.map(handled(ids), (rows) => rows.every((r) => r.handled_at) ? rows : undefined)
      )
      // one turn took all three at once, no sooner than the window after the last message
      expect(new Set(rows.map((r) => r.handled_at)).size).toBe(1)
      const last = Math.max(...rows.map((r) => Date.parse(r.created_at)))
      expect(Date.parse(rows[0]!.handled_at!)).toBeGreaterThanOrEqual(last + 1500 - 5)
    }))

  it.effect("a stored message whose hand-over never happened is found by the orphan sweep", () =>
    Effect.gen(function*() {
      const { channel, owner, pipeline } = yield* webChat(0)
      // a first message creates contact, conversation and opportunity
      const first = yield* say(channel, "visitor-3", "Hello")
      yield* eventually(Effect.map(handled([first]), (rows) => rows[0]?.handled_at ?? undefined))
      // then a message committed by a process that died before handing it over
      const sql = yield* SqlClient.SqlClient
      const orphan = "01ORPHANED" + String(Date.now()).padStart(16, "0")
      yield* sql`
        insert into messages (id, workspace_id, conversation_id, contact_id, channel_id, pipeline_id, role, status, message,
                              external_chat_id, created_at)
        select ${orphan}, workspace_id, conversation_id, contact_id, channel_id, pipeline_id, 'user', 'received', 'Still there?',
               external_chat_id, now() - interval '2 seconds'
        from messages where id = ${first}`.pipe(Effect.orDie)
      const [row] = yield* eventually(
        Effect.map(handled([orphan]), (rows) => rows[0]?.handled_at ? rows : undefined),
        15_000
      )
      expect(row!.id).toBe(orphan)
      expect(owner.workspace_id).toBeGreaterThan(0)
      expect(pipeline.id).toBeGreaterThan(0)
    }))

  it.effect("a webhook retry whose durable wake-up was lost is resumed by the retry sweep", () =>
    Effect.scoped(Effect.gen(function*() {
      const receiver = yield* webhookReceiver(() => "fail")
      const { messageId } = yield* replyOn(receiver.url)
      yield* (yield* Deliveries).start(messageId)
      yield* eventually(Effect.map(attempts(messageId), (rows) => rows.length === 1))
      // the wake-up before attempt 2 disappears (what the engine's race does to it); attempt 1 is logged
      // before it is sent, so the wake-up is stored a moment after the row shows
      const sql = yield* SqlClient.SqlClient
      const clocks = yield* eventually(
        sql`delete from cluster_messages where entity_type = 'Workflow/-/DurableClock' and not processed returning id`
          .pipe(
            Effect.orDie,
            Effect.map((rows) => rows.length > 0 ? rows : undefined)
          )
      )
      expect(clocks.length).toBe(1)
      // due 3 s after attempt 1; the sweep resumes it once it is a sweep interval overdue
      const rows = yield* eventually(
        Effect.map(attempts(messageId), (rows) => rows.length === 2 ? rows : undefined),
        20_000
      )
      expect(rows.map((r) => r.attempt)).toEqual([1, 2])
      yield* Effect.sleep("2500 millis")
      expect((yield* attempts(messageId)).length).toBe(2)
      const [due] = yield* sql<{ n: number }>`
        select count(*)::int as n from webhook_deliveries where message_id = ${messageId} and retry_at is not null`
        .pipe(Effect.orDie)
      expect(due!.n).toBe(0)
    })))

  it.effect("reply_debounce_ms is a pipeline setting between 0 and 60000 ms", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const { pipeline } = yield* funnel(owner)
      expect(pipeline.reply_debounce_ms).toBe(3000)
      expect422(yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { reply_debounce_ms: 60_001 }), [
        "reply_debounce_ms"
      ])
      expect422(yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { reply_debounce_ms: -1 }), [
        "reply_debounce_ms"
      ])
      expect(
        ok(yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { reply_debounce_ms: 0 }), "pipelines.update")
          .reply_debounce_ms
      )
        .toBe(0)
    }))
})
