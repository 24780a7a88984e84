/**
 * Delivering what a turn stored (a reply, an opening, a followup, a bridge message): the socket event, the first
 * attempt through the channel's adapter inline (the turn is itself durable), the retries as a durable workflow, and
 * the operators' `new_message`. Every kind goes the same way (ChannelDelivery): how a failure counts is the
 * adapter's rule.
 */
import type { WorkflowEngine } from "@effect/workflow"
import { Effect, Option } from "effect"
import { Deliveries } from "../delivery/Deliveries.js"
import { MessagesRepo } from "../messages/MessagesRepo.js"
import { NEW_MESSAGE_EVENT, Realtime } from "../realtime/Realtime.js"
import { ChannelDelivery } from "./ChannelDelivery.js"

export const makeTurnDelivery = Effect.gen(function*() {
  const messages = yield* MessagesRepo
  const realtime = yield* Realtime
  const deliveries = yield* Deliveries
  const delivery = yield* ChannelDelivery
  const engine = yield* Effect.context<WorkflowEngine.WorkflowEngine>()

  const undelivered = messages.undelivered

  const deliver = (messageId: string) =>
    Effect.gen(function*() {
      const found = yield* delivery.target(messageId)
      if (Option.isNone(found)) return
      const m = found.value
      // an eval's conversation (docs/evals.md): the reply is recorded as sent, and nobody is told
      if (m.is_eval) return yield* messages.markSent(messageId)
      const rejection = m.kind === null
        ? "The conversation has no channel to send through."
        : m.is_active !== true
        ? "The conversation's channel is inactive."
        : null
      if (rejection !== null) {
        yield* messages.setStatus(messageId, rejection)
      } else {
        yield* realtime.publish(m.conversation_id, [{
          message: m.message ?? "",
          cost: m.cost,
          message_id: messageId,
          role: "assistant",
          is_manual: false,
          sender: "ai",
          sender_name: null
        }])
        // attempt 1 inline (this turn is itself durable: a crash repeats it), the retries as a durable workflow
        const { attempts, outcome } = yield* delivery.attemptOn(m, 0, 1, false)
        if (!outcome.delivered && outcome.retryable) {
          yield* deliveries.startRetry(messageId, attempts, outcome.retryAfterMs).pipe(Effect.provide(engine))
        }
      }
      yield* realtime.toWorkspace(m.workspace_id, NEW_MESSAGE_EVENT, {
        conversation_id: m.conversation_id,
        message_id: messageId,
        role: "assistant",
        sender: "ai",
        sender_id: null,
        message: m.message
      })
    }).pipe(Effect.orDie, Effect.withSpan("ConversationTurns.deliver", { attributes: { messageId } }))

  return { undelivered, deliver }
})
