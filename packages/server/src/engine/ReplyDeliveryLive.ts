/**
 * The domain's `ReplyDelivery` port (the DeliverReply workflow's attempts): every kind's message through its
 * channel's adapter, on the one outbound path (ChannelDelivery).
 */
import { type DeliveryOutcome, ReplyDelivery } from "@parley/domain"
import { Deferred, Effect, FiberId, Layer } from "effect"
import { ChannelDelivery } from "./ChannelDelivery.js"

export const ReplyDeliveryLive = Layer.effect(
  ReplyDelivery,
  Effect.gen(function*() {
    const delivery = yield* ChannelDelivery
    /**
     * A workflow whose durable clock fires late can be resumed by its clock and by RetrySweep at once, and run the
     * same attempt twice at the same time: the second waits for the first and takes its outcome, so the message is
     * sent once. (The workflow's executions are on the runner that owns it, so one process sees both.)
     */
    const inFlight = new Map<string, Deferred.Deferred<DeliveryOutcome>>()
    return {
      attempt: (messageId: string, run: number, n: number, final: boolean) =>
        Effect.suspend(() => {
          const key = `${messageId}:${run}:${n}`
          const running = inFlight.get(key)
          if (running !== undefined) return Deferred.await(running)
          const done = Deferred.unsafeMake<DeliveryOutcome>(FiberId.none)
          inFlight.set(key, done)
          return delivery.attempt(messageId, run, n, final).pipe(
            Effect.onExit((exit) => Effect.zipRight(Deferred.done(done, exit), Effect.sync(() => inFlight.delete(key))))
          )
        })
    }
  })
).pipe(Layer.provideMerge(ChannelDelivery.Default))
