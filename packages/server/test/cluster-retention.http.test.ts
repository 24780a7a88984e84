/**
 * The cluster's message storage stays bounded (issue 22): with CLUSTER_RETENTION_MS at 2 s, the messages
 * of a finished reply-webhook workflow (its run and activity, stored by @effect/cluster) and their replies
 * are deleted once past the retention, while the workflow's outcome stays where the application keeps it
 * (the delivery log) and the engine keeps working on new deliveries.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Deliveries } from "../src/delivery/Deliveries.js"
import { attempts, replyOn } from "./support/Replies.js"
import { TestServerLive } from "./support/TestServer.js"
import { eventually, webhookReceiver } from "./support/WebhookReceiver.js"

const RETENTION_MS = 2_000

layer(TestServerLive({ OUTBOUND_ALLOW_PRIVATE: "true", CLUSTER_RETENTION_MS: String(RETENTION_MS) }), {
  excludeTestServices: true
})(
  "cluster message retention",
  (it) => {
    it.effect(
      "deletes a finished workflow's processed messages and their replies past the retention; new work still runs",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const receiver = yield* webhookReceiver(() => "ok")
          const { messageId } = yield* replyOn(receiver.url)
          // the DeliverReply workflow: its messages carry the reply's id in their payload
          yield* (yield* Deliveries).start(messageId)
          yield* eventually(Effect.map(attempts(messageId), (rows) => rows.length === 1 || undefined), 30_000)
          const stored = (run: string) =>
            sql<
              { id: string; processed: boolean }
            >`select id::text, processed from cluster_messages where payload like ${`%${run}%`}`.pipe(Effect.orDie)
          const messages = yield* eventually(
            Effect.map(
              stored(messageId),
              (rows) => rows.length > 0 && rows.every((r) => r.processed) ? rows : undefined
            ),
            30_000
          )
          const replies = (ids: ReadonlyArray<string>) =>
            sql<{ n: number }>`select count(*)::int as n from cluster_replies where request_id in ${
              sql.in(ids.map(BigInt))
            }`.pipe(
              Effect.map((rows) => rows[0]!.n),
              Effect.orDie
            )
          expect(yield* replies(messages.map((m) => m.id))).toBeGreaterThan(0)
          // past the retention, the sweep (every RETENTION_MS here) deletes them and their replies
          yield* eventually(Effect.map(stored(messageId), (rows) => rows.length === 0 || undefined), 30_000)
          expect(yield* replies(messages.map((m) => m.id))).toBe(0)
          // the delivery log keeps the outcome; a new delivery still goes through the engine
          expect((yield* attempts(messageId)).map((a) => a.status_code)).toEqual([200])
          const next = yield* replyOn(receiver.url)
          yield* (yield* Deliveries).start(next.messageId)
          yield* eventually(Effect.map(attempts(next.messageId), (rows) => rows.length === 1 || undefined), 30_000)
          expect(receiver.received.length).toBe(2)
        })),
      90_000
    )
  }
)
