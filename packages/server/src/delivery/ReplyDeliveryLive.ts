import { SqlClient } from "@effect/sql"
import { DeliveryOutcome, ReplyDelivery, webhookHeaders } from "@parley/domain"
import { Effect, Either, Layer, Metric, MetricLabel } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import { AppSecret } from "../config/AppSecret.js"
import { OutboundHttp } from "../outbound/OutboundHttp.js"

/** A reply and its channel, as an attempt needs them. */
export interface ReplyTarget {
  readonly id: string
  readonly message: string | null
  readonly contact_key: string | null
  readonly workspace_id: number
  readonly channel_id: number
  readonly client_id: string | null
  readonly secret_ciphertext: string | null
  readonly callback_url: string | null
  readonly is_manual: boolean
}

/**
 * Reply-webhook attempts by `attempt` (1, 2) and `outcome`: `delivered` (2xx), `rejected` (another
 * status), or the transport's failure (`timeout`, `network`, `refused`, `invalidurl`).
 */
const webhookDeliveries = Metric.counter("parley_webhook_deliveries_total", {
  description: "Reply-webhook delivery attempts by attempt and outcome",
  incremental: true
})

/** The delivery log's `error` while an attempt awaits its answer, and once a crash cut it short. */
export const IN_PROGRESS = "In progress"
export const INTERRUPTED = "Interrupted: the process stopped before the answer was recorded (the receiver may have got it)"

/**
 * One attempt of SPEC.md 6.2: the signed POST, its record in the delivery log, and `external_message_id`.
 * Two statements: the log row before the POST, and after it the row's outcome together with the
 * message's own columns (`external_message_id`; with `markSent`, the status a turn's delivery sets).
 */
export class ReplyAttempts extends Effect.Service<ReplyAttempts>()("@parley/server/ReplyAttempts", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const http = yield* OutboundHttp
    const secrets = yield* AppSecret
    const config = yield* AppConfig

    const attemptTarget = (target: ReplyTarget, run: number, attempt: number, options: { readonly markSent: boolean }) =>
      Effect.gen(function*() {
        // no callback URL: replies go over the socket only (SPEC.md 6.2)
        if (!target.callback_url || !target.secret_ciphertext || !target.client_id) {
          return new DeliveryOutcome({ delivered: true, retryable: false })
        }
        const timestamp = String(Math.floor(Date.now() / 1000))
        const body = JSON.stringify({
          event: "message",
          client_id: target.client_id,
          contact_id: target.contact_key,
          message_id: target.id,
          text: target.message ?? "",
          timestamp,
          // beyond SPEC.md 6.2: who wrote it, so an integrator can tell an operator's message from the agent's
          sender: target.is_manual ? "operator" : "ai"
        })
        const secret = secrets.decrypt(target.secret_ciphertext)
        // logged before it is sent, so an attempt cut short by a crash is in the log too (marked interrupted
        // when the attempt is made again); the same statement clears an earlier attempt's due retry
        const [logged] = yield* sql<{ id: string }>`
          with earlier as (
            update webhook_deliveries
            set retry_at = null,
                error = case when status_code is null and error = ${IN_PROGRESS} then ${INTERRUPTED} else error end
            where message_id = ${target.id} and run = ${run} and (retry_at is not null or (status_code is null and error = ${IN_PROGRESS}))
          )
          insert into webhook_deliveries (workspace_id, channel_id, message_id, run, attempt, url, status_code, duration_ms, error)
          values (${target.workspace_id}, ${target.channel_id}, ${target.id}, ${run}, ${attempt}, ${target.callback_url}, null, 0, ${IN_PROGRESS})
          returning id`
        const started = Date.now()
        const result = yield* http.request("POST", target.callback_url, webhookHeaders(secret, target.id, timestamp, body), body, config.webhookTimeoutMs)
          .pipe(Effect.either)
        const duration = Date.now() - started
        const status = Either.isRight(result) ? result.right.status : null
        const ok = status !== null && status >= 200 && status < 300
        const retryable = !ok && (Either.isLeft(result)
          ? result.left.reason === "Timeout" || result.left.reason === "Network"
          : status! >= 500 || status === 429)
        const external = ok ? externalMessageId(Either.getOrThrow(result).body) ?? null : null
        // a first attempt worth retrying records when the retry is due: RetrySweep resumes the workflow
        // should its wake-up be lost
        yield* sql`
          with logged as (
            update webhook_deliveries
            set status_code = ${status}, duration_ms = ${duration},
                error = ${Either.isLeft(result) ? result.left.message : ok ? null : `HTTP ${status}`},
                response_excerpt = ${Either.isRight(result) ? result.right.body.slice(0, 1000) : null},
                retry_at = ${retryable && attempt === 1 ? sql`now() + make_interval(secs => ${config.webhookRetryDelayMs / 1000})` : null}
            where id = ${logged!.id}
          )
          update messages
          set status = case when ${options.markSent}::boolean then 'sent_to_user' else status end,
              error = case when ${options.markSent}::boolean then null else error end,
              external_message_id = coalesce(${external}::text, external_message_id), updated_at = now()
          where id = ${target.id} and (${options.markSent}::boolean or ${external}::text is not null)`
        yield* Metric.increment(
          Metric.taggedWithLabels(webhookDeliveries, [
            MetricLabel.make("outcome", ok ? "delivered" : Either.isLeft(result) ? result.left.reason.toLowerCase() : "rejected"),
            MetricLabel.make("attempt", String(attempt))
          ])
        )
        return new DeliveryOutcome({ delivered: ok, retryable })
      }).pipe(
        Effect.orDie,
        Effect.withSpan("ReplyDelivery.attempt", { attributes: { messageId: target.id, run, attempt } }),
        Effect.annotateLogs({ messageId: target.id, attempt })
      )

    const attempt = (messageId: string, run: number, n: number) =>
      Effect.gen(function*() {
        const rows = yield* sql<ReplyTarget>`
          select m.id, m.message, m.external_chat_id as contact_key, m.workspace_id, m.channel_id, m.is_manual,
                 c.client_id, c.secret_ciphertext, c.callback_url
          from messages m join channels c on c.id = m.channel_id where m.id = ${messageId}`.pipe(Effect.orDie)
        const target = rows[0]
        if (!target) return new DeliveryOutcome({ delivered: true, retryable: false })
        return yield* attemptTarget(target, run, n, { markSent: false })
      })

    return { attempt, attemptTarget }
  })
}) {}

/** The domain's port (the DeliverReply workflow's attempts), with ReplyAttempts for the turn's first one. */
export const ReplyDeliveryLive = Layer.effect(ReplyDelivery, Effect.map(ReplyAttempts, (attempts) => ({ attempt: attempts.attempt }))).pipe(
  Layer.provideMerge(ReplyAttempts.Default)
)

/** SPEC.md 6.2: a top-level `message_id` in the receiver's JSON answer is kept. */
const externalMessageId = (body: string): string | undefined => {
  try {
    const parsed = JSON.parse(body) as unknown
    const id = typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>).message_id : undefined
    return typeof id === "string" || typeof id === "number" ? String(id).slice(0, 255) : undefined
  } catch {
    return undefined
  }
}
