/**
 * Handing a stored contact message to its conversation's entity, for every channel (docs/architecture.md): beside
 * the request, not before its answer (a plain cluster message to a remote runner waits for the entity's reply: the
 * debounce window and the turn). Not persisted: the message is committed already, and should the hand-over fail or
 * its runner die, the hand-over sweep makes it again within seconds; a turn repeated finds the message handled and
 * never makes a second reply. The fibers end with the service.
 */
import { Conversation } from "@parley/worker"
import { Effect, type Effect as E, FiberSet } from "effect"

export class HandOvers extends Effect.Service<HandOvers>()("@parley/server/HandOvers", {
  scoped: Effect.gen(function*() {
    const conversations = yield* Conversation.client
    const fibers = yield* FiberSet.make()

    /** Runs `effect` beside the caller; a failure is logged with `what`. */
    const beside = <A, Err>(effect: E.Effect<A, Err>, what: string) =>
      FiberSet.run(fibers, effect.pipe(Effect.catchAllCause((cause) => Effect.logWarning(what, cause)))).pipe(
        Effect.asVoid
      )

    const handOver = (conversationId: number, messageId: string) =>
      beside(
        conversations(String(conversationId)).Inbound({ messageId }, { discard: true }),
        "Hand-over to the conversation entity failed; the orphan sweep will retry it"
      )

    return { handOver, beside }
  })
}) {}
