/**
 * The signed reply webhook as a durable workflow: signature from the raw body, external_message_id,
 * exactly two attempts for a receiver that times out, the private-address guard, the delivery log, replay.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { verifyServiceSignature } from "@parley/domain"
import { Effect } from "effect"
import { createHmac } from "node:crypto"
import { Deliveries } from "../src/delivery/Deliveries.js"
import { failure, ok } from "./support/Contract.js"
import { attempts, replyOn } from "./support/Replies.js"
import { call, seedUser, TestServerLive } from "./support/TestServer.js"
import { type Behaviour, droppingKeepAliveReceiver, eventually, webhookReceiver } from "./support/WebhookReceiver.js"

/** On a timeout, what the engine had stored: enough to tell a slow runner from a lost message. */
const diagnose = (messageId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    console.log("DIAG attempts", JSON.stringify(yield* attempts(messageId)))
    console.log(
      "DIAG pending or timed",
      JSON.stringify(
        yield* sql`
      select id, tag, message_id, processed, deliver_at, last_read, shard_id from cluster_messages
      where not processed or deliver_at is not null order by id`.pipe(Effect.orDie)
      )
    )
    console.log("DIAG runners", JSON.stringify(yield* sql`select * from cluster_runners`.pipe(Effect.orDie)))
    console.log("DIAG now", Date.now())
  })

let behaviour: Behaviour = "ok"

layer(
  // A durable wake-up is now and then lost by the engine (see docs/architecture.md, "Sweeps"); the retry
  // sweep resumes such a delivery once it is one sweep interval overdue. Production waits 5 s.
  TestServerLive({
    OUTBOUND_ALLOW_PRIVATE: "true",
    WEBHOOK_TIMEOUT_MS: "400",
    WEBHOOK_RETRY_DELAY_MS: "2000",
    ENGINE_SWEEP_INTERVAL_MS: "1000"
  }),
  { excludeTestServices: true }
)("reply webhook delivery", (it) => {
  it.effect("posts the reply signed over the raw body, with Standard Webhooks headers, and stores the receiver's message_id", () =>
    Effect.scoped(Effect.gen(function*() {
      behaviour = "ok"
      const receiver = yield* webhookReceiver(() => behaviour)
      const { channel, messageId } = yield* replyOn(receiver.url)
      const secret = channel.client_secret
      yield* (yield* Deliveries).start(messageId)

      yield* eventually(Effect.sync(() => receiver.received.length === 1))
      const [hit] = receiver.received
      const body = JSON.parse(hit!.rawBody)
      expect(body).toEqual({
        event: "message",
        client_id: channel.client_id,
        contact_id: "visitor-42",
        message_id: messageId,
        text: "Happy to help!",
        timestamp: hit!.headers["x-service-timestamp"],
        sender: "ai",
        sender_name: null
      })
      expect(hit!.headers["content-type"]).toBe("application/json")
      expect(verifyServiceSignature(
        secret,
        {
          signature: hit!.headers["x-service-signature"] as string,
          timestamp: hit!.headers["x-service-timestamp"] as string
        },
        hit!.rawBody
      )).toBe(true)
      expect(verifyServiceSignature(
        "wcs_not-the-secret",
        {
          signature: hit!.headers["x-service-signature"] as string,
          timestamp: hit!.headers["x-service-timestamp"] as string
        },
        hit!.rawBody
      )).toBe(false)
      // Standard Webhooks: id.timestamp.body, keyed with the secret's bytes
      expect(hit!.headers["webhook-id"]).toBe(messageId)
      expect(hit!.headers["webhook-timestamp"]).toBe(hit!.headers["x-service-timestamp"])
      const standard = createHmac("sha256", Buffer.from(secret))
        .update(`${messageId}.${hit!.headers["webhook-timestamp"]}.${hit!.rawBody}`).digest("base64")
      expect(hit!.headers["webhook-signature"]).toBe(`v1,${standard}`)

      const sql = yield* SqlClient.SqlClient
      const stored = yield* eventually(
        sql<{ external_message_id: string | null }>`select external_message_id from messages where id = ${messageId}`
          .pipe(
            Effect.map((rows) => rows[0]?.external_message_id ?? undefined),
            Effect.orDie
          )
      )
      expect(stored).toBe("ext-1")
      expect(yield* attempts(messageId)).toEqual([{ attempt: 1, status_code: 200, error: null, run: 0 }])
    })))

  it.effect("a request on a reused keep-alive connection the receiver dropped is sent again on a fresh one, within attempt 1", () =>
    Effect.scoped(Effect.gen(function*() {
      const receiver = yield* droppingKeepAliveReceiver
      const deliveries = yield* Deliveries
      const first = yield* replyOn(receiver.url)
      yield* deliveries.start(first.messageId)
      yield* eventually(Effect.map(attempts(first.messageId), (rows) => rows.length === 1))
      // the next reply goes out on the pooled connection, which the receiver drops
      const second = yield* replyOn(receiver.url)
      yield* deliveries.start(second.messageId)
      yield* eventually(Effect.map(attempts(second.messageId), (rows) => rows.length === 1))
      expect(receiver.dropped()).toBe(1)
      expect(yield* attempts(second.messageId)).toEqual([{ attempt: 1, status_code: 200, error: null, run: 0 }])
      expect(receiver.received.map((r) => JSON.parse(r.rawBody).message_id)).toEqual([
        first.messageId,
        second.messageId
      ])
      // no second attempt follows
      yield* Effect.sleep("2500 millis")
      expect(yield* attempts(second.messageId)).toHaveLength(1)
    })))

  it.effect("a receiver that times out gets exactly two attempts, both logged", () =>
    Effect.scoped(Effect.gen(function*() {
      behaviour = "hang"
      const receiver = yield* webhookReceiver(() => behaviour)
      const { messageId, owner, channel } = yield* replyOn(receiver.url)
      yield* (yield* Deliveries).start(messageId)
      yield* eventually(Effect.map(attempts(messageId), (rows) => rows.length === 2), 30_000).pipe(
        Effect.tapDefect(() => diagnose(messageId))
      )
      // the retry schedule is over: no third attempt comes
      yield* Effect.sleep("2500 millis")
      const rows = yield* attempts(messageId)
      expect(rows.map((r) => [r.attempt, r.status_code, r.error])).toEqual([
        [1, null, "No answer within 400 ms"],
        [2, null, "No answer within 400 ms"]
      ])
      expect(receiver.received.length).toBe(2)
      expect(receiver.received.map((r) => JSON.parse(r.rawBody).message_id)).toEqual([messageId, messageId])

      const log = yield* call(`/api/user/channels/${channel.id}/deliveries?message_id=${messageId}`, {
        token: owner.token
      })
      expect(log.status).toBe(200)
      const logged = ok(log, "channels.deliveries")
      expect(logged.map((d) => d.attempt)).toEqual([2, 1])
      expect(logged[0]).toMatchObject({ message_id: messageId, run: 0, status_code: null, url: receiver.url })
    })))

  it.effect("a 5xx answer is retried once; a replay delivers again with the same message_id", () =>
    Effect.scoped(Effect.gen(function*() {
      behaviour = "fail"
      const receiver = yield* webhookReceiver(() => behaviour)
      const { messageId, owner, channel } = yield* replyOn(receiver.url)
      yield* (yield* Deliveries).start(messageId)
      // 503 is retryable: two attempts
      // generous: the suite shares 2 cores with every other file; the wait itself is 300 ms
      yield* eventually(Effect.map(attempts(messageId), (rows) => rows.length === 2), 30_000).pipe(
        Effect.tapDefect(() => diagnose(messageId))
      )
      behaviour = "ok"
      const replay = yield* call(`/api/user/channels/${channel.id}/deliveries/${messageId}/replay`, {
        method: "POST",
        token: owner.token
      })
      expect(replay.status).toBe(200)
      expect(ok(replay, "channels.replay")).toEqual({ message_id: messageId, run: 1 })
      yield* eventually(Effect.map(attempts(messageId), (rows) => rows.length === 3), 30_000).pipe(
        Effect.tapDefect(() => diagnose(messageId))
      )
      expect((yield* attempts(messageId)).map((r) => [r.run, r.attempt, r.status_code])).toEqual([[0, 1, 503], [
        0,
        2,
        503
      ], [1, 1, 200]])
      expect(receiver.received.map((r) => JSON.parse(r.rawBody).message_id)).toEqual([messageId, messageId, messageId])

      const other = yield* seedUser()
      const foreign = yield* call(`/api/user/channels/${channel.id}/deliveries`, { token: other.token })
      expect(foreign.status).toBe(404)
      const foreignReplay = yield* call(`/api/user/channels/${channel.id}/deliveries/${messageId}/replay`, {
        method: "POST",
        token: other.token
      })
      expect(foreignReplay.status).toBe(404)
    })))
})

layer(TestServerLive({ WEBHOOK_TIMEOUT_MS: "400", WEBHOOK_RETRY_DELAY_MS: "2000" }), { excludeTestServices: true })(
  "outbound private-address guard",
  (it) => {
    it.effect("refuses a loopback callback URL without OUTBOUND_ALLOW_PRIVATE, once, and logs why", () =>
      Effect.scoped(Effect.gen(function*() {
        const receiver = yield* webhookReceiver(() => "ok")
        const { channel, messageId, owner } = yield* replyOn("https://hooks.example.com/parley")
        // saving it is refused too; a URL saved while OUTBOUND_ALLOW_PRIVATE was on is still refused when called
        const saved = yield* call(`/api/user/channels/${channel.id}`, {
          method: "PUT",
          token: owner.token,
          body: { callback_url: receiver.url }
        })
        expect(saved.status).toBe(422)
        expect(failure(saved).validation.map((v) => v.field)).toEqual(["callback_url"])
        yield* (yield* SqlClient.SqlClient)`update channels set callback_url = ${receiver.url} where id = ${channel.id}`
          .pipe(Effect.orDie)
        yield* (yield* Deliveries).start(messageId)
        yield* eventually(Effect.map(attempts(messageId), (rows) => rows.length === 1))
        yield* Effect.sleep("800 millis")
        const rows = yield* attempts(messageId)
        expect(rows).toHaveLength(1)
        expect(rows[0]!.error).toMatch(/private address/)
        expect(receiver.received).toHaveLength(0)
      })))
  }
)
