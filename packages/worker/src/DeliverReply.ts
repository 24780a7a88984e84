/**
 * The reply webhook as a durable workflow (SPEC.md 6.2, 8): two attempts, the second after a durable
 * wait, each an activity, so a restart never loses a delivery and never repeats a finished attempt. A
 * restart during an attempt repeats that attempt: delivery is at least once, with a stable message_id.
 */
import { Activity, DurableClock, Workflow } from "@effect/workflow"
import { DeliveryOutcome, ReplyDelivery } from "@parley/domain"
import { Duration, Effect, Schema } from "effect"

export const DeliverReply = Workflow.make({
  name: "DeliverReply",
  payload: {
    messageId: Schema.String,
    /** 0 for the delivery itself, n for the n-th manual replay */
    run: Schema.Int,
    retryDelayMs: Schema.Int,
    /** attempt 1 was already made by the caller (the conversation entity, inline): only the retry is left */
    retryOnly: Schema.optional(Schema.Boolean)
  },
  idempotencyKey: ({ messageId, run }) => `${messageId}:${run}`
})

export const DeliverReplyLive = DeliverReply.toLayer(
  Effect.fn("DeliverReply")(function*({ messageId, retryDelayMs, retryOnly, run }) {
    const delivery = yield* ReplyDelivery
    if (!retryOnly) {
      const first = yield* Activity.make({
        name: "attempt-1",
        success: DeliveryOutcome,
        execute: delivery.attempt(messageId, run, 1)
      })
      if (first.delivered || !first.retryable) return
    }
    // `inMemoryThreshold` must be Duration.zero, not 0: short sleeps are otherwise not persisted
    yield* DurableClock.sleep({
      name: "before-attempt-2",
      duration: Duration.millis(retryDelayMs),
      inMemoryThreshold: Duration.zero
    })
    yield* Activity.make({
      name: "attempt-2",
      success: DeliveryOutcome,
      execute: delivery.attempt(messageId, run, 2)
    })
  })
)
