/**
 * The per-conversation entity (ARCHITECTURE.md, "the path of one inbound message"). Everything that
 * happens to one conversation is a message to its entity, handled one at a time, so two replies of one
 * conversation never overlap. Messages are persisted before the sender goes on: a restart redelivers
 * whatever was not finished.
 *
 * `Inbound`: a contact's message was stored. The entity waits until the conversation has been quiet for
 * the pipeline's debounce window (a burst gets one reply), then answers every unanswered message up to
 * the newest. The wait is derived from stored timestamps, not from an in-memory timer, so after a crash
 * the redelivered message waits only what is left of the window.
 */
import { ClusterSchema, Entity, Singleton } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { ConversationTurns } from "@parley/domain"
import { Clock, Duration, Effect, Layer, Option, Schedule, Schema } from "effect"

export const Conversation = Entity.make("Conversation", [
  Rpc.make("Inbound", {
    payload: { messageId: Schema.String },
    primaryKey: ({ messageId }) => messageId
  })
]).annotateRpcs(ClusterSchema.Persisted, true)

export const ConversationLive = Conversation.toLayer(
  Effect.gen(function*() {
    const turns = yield* ConversationTurns
    const conversationId = (yield* Entity.CurrentAddress).entityId
    return {
      Inbound: () =>
        Effect.gen(function*() {
          while (true) {
            const pending = yield* turns.pending(conversationId)
            // an earlier message's turn already answered this one
            if (Option.isNone(pending)) return
            const { debounceMs, latestAt, latestMessageId } = pending.value
            const now = yield* Clock.currentTimeMillis
            // capped at the window itself, so a clock skew between database and runner cannot stall a reply
            const wait = Math.min(latestAt.getTime() + debounceMs - now, debounceMs)
            if (wait <= 0) return yield* turns.respond(conversationId, latestMessageId)
            yield* Effect.sleep(Duration.millis(wait))
          }
        }).pipe(Effect.withSpan("Conversation.Inbound", { attributes: { conversationId } }))
    }
  }),
  { maxIdleTime: "2 minutes" }
)

/**
 * The receiver hands each message over right after its commit. Should the process die in between, this
 * sweep (one runner of the cluster runs it) hands over what was left behind; a message handed over twice
 * is one request (its primary key), so the sweep never causes a second reply.
 */
export const OrphanSweepLive = (every: Duration.DurationInput) =>
  Singleton.make(
    "Conversation/orphan-sweep",
    Effect.gen(function*() {
      const turns = yield* ConversationTurns
      const client = yield* Conversation.client
      const sweep = turns.orphaned(Duration.toMillis(every)).pipe(
        Effect.flatMap(Effect.forEach(({ conversationId, messageId }) =>
          client(conversationId).Inbound({ messageId }, { discard: true }).pipe(Effect.ignoreLogged)
        )),
        Effect.catchAllCause(Effect.logWarning)
      )
      yield* Effect.repeat(sweep, Schedule.spaced(every))
    })
  )

/** The entity, and the sweep for hand-overs a crash interrupted (messages older than `sweepEvery`). */
export const ConversationEngineLive = (options: { readonly sweepEvery: Duration.DurationInput }) =>
  Layer.mergeAll(ConversationLive, OrphanSweepLive(options.sweepEvery))
