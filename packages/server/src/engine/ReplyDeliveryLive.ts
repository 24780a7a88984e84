import { SqlClient, SqlSchema } from "@effect/sql"
import { DeliveryOutcome, ReplyDelivery, webhookHeaders } from "@parley/domain"
import { Deferred, Effect, Either, FiberId, Layer, Metric, MetricLabel, Option, Schema } from "effect"
import { ProviderDelivery } from "../channels/ProviderDelivery.js"
import { AppConfig } from "../config/AppConfig.js"
import { AppSecret } from "../config/AppSecret.js"
import { attemptOutcome, OutboundHttp } from "../outbound/OutboundHttp.js"
import * as MessageWrites from "../tables/MessageWrites.js"
import { IN_PROGRESS, INTERRUPTED } from "./AttemptLog.js"

/**
 * A reply, its channel, and the delivery log's row for the attempt that is about to be made (`log_id`:
 * null when nothing is to be sent: no signed webhook, or the channel refused it).
 */
export const AttemptTarget = Schema.Struct({
  id: Schema.String,
  conversation_id: Schema.Number,
  message: Schema.NullOr(Schema.String),
  contact_key: Schema.NullOr(Schema.String),
  workspace_id: Schema.Number,
  channel_id: Schema.NullOr(Schema.Number),
  is_manual: Schema.Boolean,
  /** an operator's display name (`users.name`); null for the agent's messages */
  sender_name: Schema.NullOr(Schema.String),
  cost: Schema.Number,
  kind: Schema.NullOr(Schema.String),
  is_active: Schema.NullOr(Schema.Boolean),
  client_id: Schema.NullOr(Schema.String),
  secret_ciphertext: Schema.NullOr(Schema.String),
  callback_url: Schema.NullOr(Schema.String),
  is_eval: Schema.Boolean,
  log_id: Schema.NullOr(Schema.String)
})
export type AttemptTarget = typeof AttemptTarget.Type

/**
 * `channel`: a turn's first attempt sends only through an active web or widget channel, and never for an
 * eval's conversation (docs/evals.md); a retry only needs the webhook's settings.
 */
const BeginAttempt = Schema.Struct({
  messageId: Schema.String,
  run: Schema.Number,
  attempt: Schema.Number,
  channel: Schema.Boolean
})

/**
 * Reply-webhook attempts by `attempt` (1, 2) and `outcome`: `delivered` (2xx), `rejected` (another
 * status), or the transport's failure (`timeout`, `network`, `refused`, `invalidurl`).
 */
const webhookDeliveries = Metric.counter("parley_webhook_deliveries_total", {
  description: "Reply-webhook delivery attempts by attempt and outcome",
  incremental: true
})

export { IN_PROGRESS, INTERRUPTED } from "./AttemptLog.js"

/**
 * One attempt of SPEC.md 6.2: the signed POST, its record in the delivery log, and `external_message_id`.
 * Two statements: `begin` reads the reply and its channel and logs the attempt before the POST (so an
 * attempt cut short by a crash is in the log too, marked interrupted when the attempt is made again);
 * `send` makes the POST and records its outcome together with the message's own columns
 * (`external_message_id`; with `markSent`, the status a turn's delivery sets).
 */
export class ReplyAttempts extends Effect.Service<ReplyAttempts>()("@parley/server/ReplyAttempts", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const http = yield* OutboundHttp
    const secrets = yield* AppSecret
    const config = yield* AppConfig

    const begin = SqlSchema.findOne({
      Request: BeginAttempt,
      Result: AttemptTarget,
      execute: ({ attempt, channel, messageId, run }) =>
        sql`
          with t as (
            select m.id, m.conversation_id, m.workspace_id, m.channel_id, m.message, m.external_chat_id as contact_key,
                   m.is_manual, (select u.name from users u where u.id = m.sender_id and m.is_manual) as sender_name,
                   m.cost_for_user::float8 as cost, ch.kind, ch.is_active, ch.client_id, ch.secret_ciphertext,
                   ch.callback_url, coalesce((select c.is_eval from conversations c where c.id = m.conversation_id), false) as is_eval
            from messages m left join channels ch on ch.id = m.channel_id where m.id = ${messageId}
          ), sending as (
            select t.* from t
            where t.callback_url is not null and t.secret_ciphertext is not null and t.client_id is not null
              and (not ${channel}::boolean or (t.kind in ('web', 'widget') and t.is_active and not t.is_eval))
          ), earlier as (
            -- an earlier attempt's due retry is cleared; one a crash cut short is marked interrupted
            update webhook_deliveries
            set retry_at = null,
                error = case when status_code is null and error = ${IN_PROGRESS} then ${INTERRUPTED} else error end
            where message_id = ${messageId} and run = ${run} and exists (select 1 from sending)
              and (retry_at is not null or (status_code is null and error = ${IN_PROGRESS}))
          ), logged as (
            insert into webhook_deliveries (workspace_id, channel_id, message_id, run, attempt, url, status_code, duration_ms, error)
            select workspace_id, channel_id, id, ${run}, ${attempt}, callback_url, null, 0, ${IN_PROGRESS} from sending
            returning id
          )
          select t.*, (select id from logged)::text as log_id from t`
    })

    /** The POST of an attempt `begin` logged, and its outcome. */
    const send = (
      target: AttemptTarget & { readonly log_id: string },
      run: number,
      attempt: number,
      options: { readonly markSent: boolean }
    ) =>
      Effect.gen(function*() {
        const timestamp = String(Math.floor(Date.now() / 1000))
        const body = JSON.stringify({
          event: "message",
          client_id: target.client_id,
          contact_id: target.contact_key,
          message_id: target.id,
          text: target.message ?? "",
          timestamp,
          // beyond SPEC.md 6.2: who wrote it, so an integrator can tell an operator's message from the agent's
          sender: target.is_manual ? "operator" : "ai",
          // an operator's display name, so a front end can show who answers
          sender_name: target.is_manual ? target.sender_name : null
        })
        const secret = secrets.decrypt(target.secret_ciphertext!)
        const started = Date.now()
        const result = yield* http.request(
          "POST",
          target.callback_url!,
          webhookHeaders(secret, target.id, timestamp, body),
          body,
          config.webhookTimeoutMs
        )
          .pipe(Effect.either)
        const duration = Date.now() - started
        const { body: answer, error, ok, retryable, status } = attemptOutcome(result)
        const external = ok ? externalMessageId(answer!) ?? null : null
        // a first attempt worth retrying records when the retry is due: RetrySweep resumes the workflow
        // should its wake-up be lost
        yield* sql`
          with logged as (
            update webhook_deliveries
            set status_code = ${status}, duration_ms = ${duration},
                error = ${error},
                response_excerpt = ${answer === null ? null : answer.slice(0, 1000)},
                retry_at = ${
          retryable && attempt === 1 ? sql`now() + make_interval(secs => ${config.webhookRetryDelayMs / 1000})` : null
        }
            where id = ${target.log_id}
          )
          ${
          MessageWrites.update(sql, {
            status: sql`case when ${options.markSent}::boolean then 'sent_to_user' else status end`,
            error: sql`case when ${options.markSent}::boolean then null else error end`,
            external_message_id: sql`coalesce(${external}::text, external_message_id)`,
            updated_at: sql`now()`
          }, sql`where id = ${target.id} and (${options.markSent}::boolean or ${external}::text is not null)`)
        }`
        yield* Metric.increment(
          Metric.taggedWithLabels(webhookDeliveries, [
            MetricLabel.make(
              "outcome",
              ok ? "delivered" : Either.isLeft(result) ? result.left.reason.toLowerCase() : "rejected"
            ),
            MetricLabel.make("attempt", String(attempt))
          ])
        )
        return new DeliveryOutcome({ delivered: ok, retryable })
      }).pipe(
        Effect.orDie,
        Effect.withSpan("ReplyDelivery.attempt", { attributes: { messageId: target.id, run, attempt } }),
        Effect.annotateLogs({ messageId: target.id, attempt })
      )

    /** A retry (the DeliverReply workflow): no reply or no webhook left to send to counts as delivered. */
    const attempt = (messageId: string, run: number, n: number) =>
      Effect.gen(function*() {
        const target = yield* begin({ messageId, run, attempt: n, channel: false }).pipe(Effect.orDie)
        if (Option.isNone(target) || target.value.log_id === null) {
          return new DeliveryOutcome({ delivered: true, retryable: false })
        }
        return yield* send({ ...target.value, log_id: target.value.log_id }, run, n, { markSent: false })
      })

    return {
      attempt,
      begin: (messageId: string, run: number, n: number) =>
        begin({ messageId, run, attempt: n, channel: true }).pipe(Effect.orDie),
      send
    }
  })
}) {}

/**
 * The domain's port (the DeliverReply workflow's attempts): a provider channel's message through its adapter, else
 * the reply webhook (ReplyAttempts, which also makes a turn's first attempt).
 */
export const ReplyDeliveryLive = Layer.effect(
  ReplyDelivery,
  Effect.gen(function*() {
    const attempts = yield* ReplyAttempts
    const providers = yield* ProviderDelivery
    const send = (messageId: string, run: number, n: number, final: boolean) =>
      providers.attempt(messageId, run, n, final).pipe(
        Effect.flatMap(Option.match({
          onSome: Effect.succeed,
          onNone: () => attempts.attempt(messageId, run, n)
        }))
      )
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
          return send(messageId, run, n, final).pipe(
            Effect.onExit((exit) => Effect.zipRight(Deferred.done(done, exit), Effect.sync(() => inFlight.delete(key))))
          )
        })
    }
  })
).pipe(
  Layer.provideMerge(ReplyAttempts.Default),
  Layer.provideMerge(ProviderDelivery.Default)
)

/** SPEC.md 6.2: a top-level `message_id` in the receiver's JSON answer is kept. */
const externalMessageId = (body: string): string | undefined => {
  try {
    const parsed = JSON.parse(body) as unknown
    const id = typeof parsed === "object" && parsed !== null
      ? (parsed as Record<string, unknown>).message_id
      : undefined
    return typeof id === "string" || typeof id === "number" ? String(id).slice(0, 255) : undefined
  } catch {
    return undefined
  }
}
