/**
 * Followup sequences are durable: a server torn down in the middle of a sequence and built again on the
 * same database (support/FileServer.ts: a data dir's, or a native one in the postgres project; the
 * test's clock offset carries over, as wall time would) sends the rest of the sequence once and moves
 * the opportunity; and a sequence whose durable wake-up vanished is resumed by the followup sweep
 * instead of waiting forever.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { boot, type FileDatabase, FileServerLive, freshDatabase } from "./support/FileServer.js"
import {
  assistantMessages,
  awaitingInterval,
  followupSetup,
  hooks,
  MINUTE,
  sequenceOf,
  stageOf,
  started
} from "./support/Followups.js"
import { makeOffsetClock } from "./support/OffsetClock.js"
import { eventually, webhookReceiver } from "./support/WebhookReceiver.js"

const clock = makeOffsetClock()

/** The server on `database`, on the offset clock (carried over restarts, as wall time would be). */
const FileServer = (database: FileDatabase) => FileServerLive(database, { OUTBOUND_ALLOW_PRIVATE: "true" }, clock.layer)

describe("followup sequences across restarts", () => {
  it.live(
    "a server torn down mid-sequence and built again sends the rest once, then moves the opportunity",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const database = yield* freshDatabase("parley-followups-")
        const receiver = yield* webhookReceiver(() => "ok")

        const first = yield* boot(FileServer(database))
        const { channel, conversationId, noResponse, opportunityId } = yield* first.run(Effect.gen(function*() {
          const setup = yield* followupSetup(receiver.url, { intervals: 3 })
          const ids = yield* started(setup.channel, "rey-1", receiver.received)
          yield* clock.advance(MINUTE)
          yield* eventually(Effect.map(sequenceOf(ids.opportunityId), (s) => s!.steps_done === 1 ? true : undefined))
          // down only once the second wait is stored: the restart then finds it overdue
          yield* awaitingInterval(ids.opportunityId, 2)
          return { ...setup, ...ids }
        }))
        yield* first.close

        // down while the second interval (2 minutes) passes
        yield* clock.advance(2 * MINUTE)
        const second = yield* boot(FileServer(database))
        yield* second.run(Effect.gen(function*() {
          yield* eventually(
            Effect.map(sequenceOf(opportunityId), (s) => s!.steps_done === 2 ? true : undefined),
            20_000
          )
          yield* awaitingInterval(opportunityId, 3)
          yield* clock.advance(3 * MINUTE)
          yield* eventually(
            Effect.map(assistantMessages(conversationId), (rows) =>
              rows.some((r) =>
                  r.call_type === "opening" && r.status === "sent_to_user"
                )
                ? true
                : undefined),
            20_000
          )
          yield* Effect.sleep("1500 millis")
          const messages = yield* assistantMessages(conversationId)
          expect(messages.map((m) => [m.call_type, m.followup_step, m.status])).toEqual([
            ["ai", null, "sent_to_user"],
            ["followup", 1, "sent_to_user"],
            ["followup", 2, "sent_to_user"],
            ["followup", 3, "sent_to_user"],
            ["opening", null, "sent_to_user"]
          ])
          expect(yield* stageOf(opportunityId)).toBe(noResponse.id)
          expect(yield* sequenceOf(opportunityId)).toMatchObject({
            status: "completed",
            end_reason: "moved",
            steps_done: 3
          })
          expect(hooks(receiver.received, channel.client_secret).map((h) => h.message_id)).toEqual(
            messages.map((m) => m.id)
          )
        }))
        yield* second.close
      })),
    60_000
  )

  it.live(
    "a sequence whose durable wake-up vanished is resumed by the sweep",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const database = yield* freshDatabase("parley-followups-")
        const receiver = yield* webhookReceiver(() => "ok")
        const server = yield* boot(FileServer(database))
        yield* server.run(Effect.gen(function*() {
          const setup = yield* followupSetup(receiver.url, { intervals: 1 })
          const { conversationId, opportunityId } = yield* started(setup.channel, "rey-2", receiver.received)
          const sql = yield* SqlClient.SqlClient
          // the wake-up of the first interval disappears (what the engine's race does to it)
          const clocks = yield* eventually(
            sql`delete from cluster_messages where entity_type = 'Workflow/-/DurableClock' and not processed returning id`
              .pipe(
                Effect.orDie,
                Effect.map((rows) => rows.length > 0 ? rows : undefined)
              )
          )
          expect(clocks).toHaveLength(1)
          yield* clock.advance(MINUTE)
          // overdue by more than a sweep interval: the sweep resumes the workflow, which waits again for its wake-up
          yield* Effect.sleep("2500 millis")
          expect((yield* assistantMessages(conversationId)).filter((m) => m.call_type === "followup")).toHaveLength(0)
          yield* clock.advance(MINUTE)
          yield* eventually(
            Effect.map(stageOf(opportunityId), (stage) => stage === setup.noResponse.id ? true : undefined)
          )
          const followups = (yield* assistantMessages(conversationId)).filter((m) => m.call_type === "followup")
          expect(followups.map((m) => [m.followup_step, m.status])).toEqual([[1, "sent_to_user"]])
        }))
        yield* server.close
      })),
    60_000
  )
})
