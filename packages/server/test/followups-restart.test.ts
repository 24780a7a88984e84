/**
 * Followup sequences are durable: a server torn down in the middle of a sequence and built again on the
 * same database (support/FileServer.ts: a data dir's, or a native one in the postgres project; the
 * test's clock offset carries over, as wall time would) sends the rest of the sequence once and moves
 * the opportunity; a sequence whose durable wake-up vanished is resumed by the followup sweep
 * instead of waiting forever; and a step paused on the contact's unanswered message is resumed after a restart by
 * the next message sent to them.
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
  passInterval,
  pausedOn,
  sequenceOf,
  stageOf,
  started
} from "./support/Followups.js"
import { makeOffsetClock } from "./support/OffsetClock.js"
import { type Caller, ok, post } from "./support/Opportunities.js"
import { say } from "./support/WebChat.js"
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
          yield* passInterval(clock, ids.opportunityId, 1, MINUTE)
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
          yield* passInterval(clock, opportunityId, 1, MINUTE)
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

  it.live(
    "a paused step survives a restart: the operator's answer after it re-arms the step, and the followup comes",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const database = yield* freshDatabase("parley-followups-")
        const receiver = yield* webhookReceiver(() => "ok")
        const handoff = (owner: Caller, conversationId: number, action: string) =>
          Effect.map(
            post(owner, `/api/user/conversations/${conversationId}/handoff`, { action, reason: "VIP" }),
            (r) => ok(r, "conversations.handoff")
          )

        const first = yield* boot(FileServer(database))
        const { conversationId, opportunityId, owner } = yield* first.run(Effect.gen(function*() {
          const setup = yield* followupSetup(receiver.url, { intervals: 1 })
          const ids = yield* started(setup.channel, "rey-3", receiver.received)
          // a person is asked for and the contact writes: the agent stays silent, the step pauses
          yield* handoff(setup.owner, ids.conversationId, "request")
          yield* eventually(Effect.map(assistantMessages(ids.conversationId), (rows) => rows.length === 2 || undefined))
          yield* say(setup.channel, "rey-3", "Hello? Anyone there?")
          yield* clock.advance(MINUTE)
          yield* eventually(Effect.map(pausedOn(ids.opportunityId), (d) => d ?? undefined))
          return { ...setup, ...ids }
        }))
        yield* first.close

        const second = yield* boot(FileServer(database))
        yield* second.run(Effect.gen(function*() {
          yield* handoff(owner, conversationId, "take")
          ok(
            yield* post(owner, `/api/user/${conversationId}/messages`, { message: "Sorry for the wait." }),
            "messages.send"
          )
          yield* handoff(owner, conversationId, "return")
          yield* awaitingInterval(opportunityId, "1-2")
          yield* clock.advance(MINUTE)
          const followups = yield* eventually(
            Effect.map(assistantMessages(conversationId), (rows) => {
              const sent = rows.filter((m) => m.call_type === "followup" && m.status === "sent_to_user")
              return sent.length > 0 ? sent : undefined
            }),
            20_000
          )
          expect(followups.map((m) => m.followup_step)).toEqual([1])
          yield* eventually(Effect.map(sequenceOf(opportunityId), (s) => s?.status === "completed" || undefined))
        }))
        yield* second.close
      })),
    60_000
  )
})
