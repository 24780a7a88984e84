/**
 * What follows a handoff transition, run by one runner of the cluster each (singletons):
 * - the dispatcher reads `handoff_events` as an outbox (woken by NOTIFY, and polling in case one was
 *   missed): it hands a request (or a second bridge) to the conversation's entity, which writes the
 *   bridge message and the summary in order with the replies, tells the workspace's operators on the
 *   socket, and marks the event dispatched. A crash in between hands it over again; the entity's
 *   message has the event as its primary key, so nothing is written twice.
 * - the timer fires the pipeline's `handoff_timeout_seconds`: due times are stored on the conversation,
 *   so a restart loses none, and a wait that ran out while no runner ran fires at once.
 */
import { Singleton } from "@effect/cluster"
import { PgClient } from "@effect/sql-pg"
import { Conversation } from "@parley/worker"
import { Duration, Effect, Layer, Schedule, Stream } from "effect"
import { HANDOFF_EVENT, Realtime } from "../realtime/Realtime.js"
import { Handoff } from "./Handoff.js"
import { HandoffRepo } from "./HandoffRepo.js"

const HandoffDispatcher = (every: Duration.DurationInput) =>
  Singleton.make(
    "Handoff/events",
    Effect.gen(function*() {
      const repo = yield* HandoffRepo
      const realtime = yield* Realtime
      const pg = yield* PgClient.PgClient
      const client = yield* Conversation.client
      const drain = repo.undispatched(100).pipe(
        Effect.flatMap(Effect.forEach((e) =>
          Effect.gen(function*() {
            if (e.bridge !== null || e.action === "request") {
              yield* client(String(e.conversation_id)).Handoff({ eventId: e.id }, { discard: true })
            }
            const { workspace_id, bridge: _, is_eval, ...event } = e
            // an eval's conversation (docs/evals.md) is nobody's to pick up
            if (!is_eval) {
              yield* realtime.toWorkspace(workspace_id, HANDOFF_EVENT, { conversation_id: e.conversation_id, event })
              yield* realtime.handoffState(e.conversation_id, e.to_state)
            }
            yield* repo.markDispatched(e.id)
          }), { discard: true })),
        Effect.catchAllCause(Effect.logWarning)
      )
      const written = pg.listen("parley_handoff_events").pipe(
        Stream.as(undefined as void),
        Stream.catchAllCause((cause) =>
          Stream.fromEffect(Effect.logWarning("handoff notifications stopped; polling only", cause)).pipe(Stream.drain)
        )
      )
      yield* Stream.merge(written, Stream.tick(every)).pipe(
        Stream.buffer({ capacity: 1, strategy: "sliding" }),
        Stream.runForEach(() => drain)
      )
    })
  )

const HandoffTimer = (every: Duration.DurationInput) =>
  Singleton.make(
    "Handoff/timeouts",
    Effect.gen(function*() {
      const repo = yield* HandoffRepo
      const handoff = yield* Handoff
      const fire = repo.dueTimeouts.pipe(
        Effect.flatMap(Effect.forEach(({ action, id }) =>
          handoff.moveAsSystem(id, { action: "timeout", then: action }).pipe(
            // an operator took it (or it was handed back) in the meantime: nothing to do
            Effect.catchTag("HandoffConflict", () => Effect.void)
          ), { discard: true })),
        Effect.catchAllCause(Effect.logWarning)
      )
      yield* Effect.repeat(fire, Schedule.spaced(every))
    })
  )

/** The dispatcher (polling every `every` besides NOTIFY) and the timeout timer (checking every `timerEvery`). */
export const HandoffEventsLive = (
  options: { readonly every: Duration.DurationInput; readonly timerEvery: Duration.DurationInput }
) =>
  Layer.mergeAll(HandoffDispatcher(options.every), HandoffTimer(options.timerEvery)).pipe(
    Layer.provide(HandoffRepo.Default)
  )
