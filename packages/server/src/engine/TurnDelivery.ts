/**
 * Delivering what a turn stored (a reply, an opening, a followup, a bridge message): the socket event,
 * the signed reply webhook's first attempt inline (the turn is itself durable) and its retry as a
 * durable workflow, the message's status, and the operators' `new_message`.
 */
import type { WorkflowEngine } from "@effect/workflow"
import { type ChannelKind, isProviderKind } from "@parley/domain"
import { Effect, Option } from "effect"
import { PROVIDER_ATTEMPTS, ProviderDelivery } from "../channels/ProviderDelivery.js"
import { Deliveries } from "../delivery/Deliveries.js"
import { MessagesRepo } from "../messages/MessagesRepo.js"
import { NEW_MESSAGE_EVENT, Realtime } from "../realtime/Realtime.js"
import { ReplyAttempts } from "./ReplyDeliveryLive.js"

export const makeTurnDelivery = Effect.gen(function*() {
  const messages = yield* MessagesRepo
  const realtime = yield* Realtime
  const deliveries = yield* Deliveries
  const attempts = yield* ReplyAttempts
  const providers = yield* ProviderDelivery
  const engine = yield* Effect.context<WorkflowEngine.WorkflowEngine>()

  const undelivered = messages.undelivered

  /**
   * The reply's row and channel in one read, which also logs the webhook's first attempt when there is
   * one to make; that attempt's second statement marks the reply sent (two statements in all), else one
   * more statement does.
   */
  const deliver = (messageId: string) =>
    Effect.gen(function*() {
      const found = yield* attempts.begin(messageId, 0, 1)
      if (Option.isNone(found)) return
      const m = found.value
      // an eval's conversation (docs/evals.md): the reply is recorded as sent, and nobody is told
      if (m.is_eval) return yield* messages.markSent(messageId)
      const rejection = m.kind === null
        ? "The conversation has no channel to send through."
        : m.is_active !== true
        ? "The conversation's channel is inactive."
        : null
      const provider = rejection === null && isProviderKind(m.kind as ChannelKind)
      if (rejection === null) {
        yield* realtime.publish(m.conversation_id, [{
          message: m.message ?? "",
          cost: m.cost,
          message_id: messageId,
          role: "assistant",
          is_manual: false,
          sender: "ai",
          sender_name: null
        }])
      }
      if (provider) {
        // the adapter's send, attempt 1 inline (this turn is itself durable), the retries as a durable workflow
        const outcome = yield* providers.attempt(messageId, 0, 1, false)
        if (Option.isNone(outcome)) {
          yield* messages.setStatus(messageId, `Sending on ${m.kind} channels is not supported by this server.`)
        } else if (!outcome.value.delivered && outcome.value.retryable) {
          yield* deliveries.startRetry(messageId, PROVIDER_ATTEMPTS).pipe(Effect.provide(engine))
        }
      } else if (m.log_id !== null) {
        // a signed webhook's attempt (logged by `begin`) marks the reply sent itself
        // attempt 1 inline (this turn is itself durable: a crash repeats it), the retry as a durable workflow
        const outcome = yield* attempts.send({ ...m, log_id: m.log_id }, 0, 1, { markSent: true })
        if (!outcome.delivered && outcome.retryable) {
          yield* deliveries.startRetry(messageId).pipe(Effect.provide(engine))
        }
      } else {
        yield* messages.setStatus(messageId, rejection)
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
