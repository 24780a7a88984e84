/**
 * Sends workspace events to their webhooks (docs/handoff.md, "Events"), on one runner of the cluster (a
 * singleton): woken by NOTIFY when events are written, and every second for retries. Each new event is
 * fanned out to the workspace's subscribed webhooks once; each delivery is claimed (its next attempt
 * pushed out by a lease), posted with Standard Webhooks headers, and recorded: delivered on a 2xx, else
 * retried after WEBHOOK_RETRY_DELAY_MS doubling each time, and failed after MAX_ATTEMPTS. All of it is in
 * the database, so a restart resumes where it stopped; the `webhook-id` is the same on every attempt.
 */
import { Singleton } from "@effect/cluster"
import { PgClient } from "@effect/sql-pg"
import { eventMessageId, eventSignature } from "@parley/domain"
import { Duration, Effect, Either, Layer, Metric, MetricLabel, Stream } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import { AppSecret } from "../config/AppSecret.js"
import { OutboundHttp } from "../outbound/OutboundHttp.js"
import { type DueDelivery, EventWebhooksRepo } from "./EventWebhooksRepo.js"

export const MAX_ATTEMPTS = 8
/** How long a claimed delivery is left to its sender before another may try it. */
const LEASE_SECONDS = 120

const eventDeliveries = Metric.counter("parley_event_deliveries_total", {
  description: "Workspace event webhook attempts by event type and outcome (delivered, retry, failed)",
  incremental: true
})

export const EventSenderLive = (every: Duration.DurationInput) =>
  Singleton.make(
    "Webhooks/events",
    Effect.gen(function*() {
      const repo = yield* EventWebhooksRepo
      const http = yield* OutboundHttp
      const secrets = yield* AppSecret
      const config = yield* AppConfig
      const pg = yield* PgClient.PgClient

      const send = (d: DueDelivery) =>
        Effect.gen(function*() {
          const id = eventMessageId(d.event_id)
          const timestamp = String(Math.floor(Date.now() / 1000))
          const body = JSON.stringify({ type: d.type, timestamp: d.created_at, data: d.payload })
          const headers = {
            "content-type": "application/json",
            "webhook-id": id,
            "webhook-timestamp": timestamp,
            "webhook-signature": eventSignature(secrets.decrypt(d.secret_ciphertext), id, timestamp, body)
          }
          const started = Date.now()
          const result = yield* http.request("POST", d.url, headers, body, config.webhookTimeoutMs).pipe(Effect.either)
          const statusCode = Either.isRight(result) ? result.right.status : null
          const delivered = statusCode !== null && statusCode >= 200 && statusCode < 300
          const attempt = d.attempts + 1
          const retryInSeconds = delivered || attempt >= MAX_ATTEMPTS
            ? null
            : Math.min(3600, Math.ceil((config.webhookRetryDelayMs / 1000) * 2 ** (attempt - 1)))
          yield* repo.record(d.id, attempt, {
            statusCode,
            error: Either.isLeft(result) ? result.left.message : delivered ? null : `HTTP ${statusCode}`,
            durationMs: Date.now() - started,
            delivered,
            retryInSeconds
          })
          yield* Metric.increment(Metric.taggedWithLabels(eventDeliveries, [
            MetricLabel.make("type", d.type),
            MetricLabel.make("outcome", delivered ? "delivered" : retryInSeconds === null ? "failed" : "retry")
          ]))
        }).pipe(Effect.withSpan("EventSender.send", { attributes: { delivery: d.id, type: d.type } }))

      const round = Effect.gen(function*() {
        yield* repo.fanOut
        const due = yield* repo.claimDue(20, LEASE_SECONDS)
        yield* Effect.forEach(due, send, { concurrency: 4, discard: true })
      }).pipe(Effect.catchAllCause(Effect.logWarning))

      const written = pg.listen("parley_workspace_events").pipe(
        Stream.as(undefined as void),
        Stream.catchAllCause((cause) =>
          Stream.fromEffect(Effect.logWarning("workspace event notifications stopped; polling only", cause)).pipe(
            Stream.drain
          )
        )
      )
      yield* Stream.merge(written, Stream.tick(every)).pipe(
        Stream.buffer({ capacity: 1, strategy: "sliding" }),
        Stream.runForEach(() => round)
      )
    })
  ).pipe(Layer.provide(EventWebhooksRepo.Default))
