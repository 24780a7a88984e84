import { Context, type Effect, Schema } from "effect"

export class DeliveryOutcome extends Schema.Class<DeliveryOutcome>("DeliveryOutcome")({
  delivered: Schema.Boolean,
  /** A timeout, a network failure or a 5xx may succeed on the next attempt; a 4xx or a refusal will not. */
  retryable: Schema.Boolean
}) {}

/** Implemented by the server: one signed POST of a reply to its channel's callback URL, recorded. */
export interface ReplyDeliveryPort {
  readonly attempt: (messageId: string, run: number, attempt: number) => Effect.Effect<DeliveryOutcome>
}
export class ReplyDelivery extends Context.Tag("@parley/domain/ReplyDelivery")<ReplyDelivery, ReplyDeliveryPort>() {}
