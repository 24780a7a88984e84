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
    retryOnly: Schema.optional(Schema.Boolean),
    /** attempts in all (2 unless given: a provider channel retries rate limits longer), each wait twice the last */
    attempts: Schema.optional(Schema.Int),
    /** with `retryOnly`: the wait the provider asked for on the caller's attempt (a 429's `retry_after`) */
    retryAfterMs: Schema.optional(Schema.Int)
  },
  idempotencyKey: ({ messageId, run }) => `${messageId}:${run}`
})

export const DeliverReplyLive = DeliverReply.toLayer(
  Effect.fn("DeliverReply")(function*({ attempts, messageId, retryAfterMs, retryDelayMs, retryOnly, run }) {
    const delivery = yield* ReplyDelivery
    const total = Math.max(2, attempts ?? 2)
    const attempt = (n: number) =>
      Activity.make({
        name: `attempt-${n}`,
        success: DeliveryOutcome,
        execute: delivery.attempt(messageId, run, n, n === total)
      })
    // the wait the provider asked for after the last attempt (an activity's result: the same on a replay)
    let askedMs = retryAfterMs ?? 0
    if (!retryOnly) {
      const first = yield* attempt(1)
      if (first.delivered || !first.retryable) return
      askedMs = first.retryAfterMs ?? 0
    }
    for (let n = 2; n <= total; n++) {
      // `inMemoryThreshold` must be Duration.zero, not 0: short sleeps are otherwise not persisted
      yield* DurableClock.sleep({
        name: `before-attempt-${n}`,
        duration: Duration.millis(Math.max(retryDelayMs * 2 ** (n - 2), askedMs)),
        inMemoryThreshold: Duration.zero
      })
      const outcome = yield* attempt(n)
      if (outcome.delivered || !outcome.retryable) return
      askedMs = outcome.retryAfterMs ?? 0
    }
  })
)
