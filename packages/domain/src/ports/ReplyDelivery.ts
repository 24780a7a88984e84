import { Context, type Effect, Schema } from "effect"

export class DeliveryOutcome extends Schema.Class<DeliveryOutcome>("DeliveryOutcome")({
  delivered: Schema.Boolean,
  /** A timeout, a network failure or a 5xx may succeed on the next attempt; a 4xx or a refusal will not. */
  retryable: Schema.Boolean,
  /** The provider asked for at least this wait before the next attempt (a 429's `retry_after`). */
  retryAfterMs: Schema.optional(Schema.Int)
}) {}

/**
 * Implemented by the server: one attempt to deliver a message through its channel (the signed POST of a reply
 * webhook, or a provider adapter's send), recorded. `final`: no attempt follows.
 */
export interface ReplyDeliveryPort {
  readonly attempt: (messageId: string, run: number, attempt: number, final: boolean) => Effect.Effect<DeliveryOutcome>
}
export class ReplyDelivery extends Context.Tag("@parley/domain/ReplyDelivery")<ReplyDelivery, ReplyDeliveryPort>() {}
