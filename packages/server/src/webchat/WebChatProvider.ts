/**
 * The web chat as an adapter behind the channel port (docs/channels.md, "The channel layer"): its send is the
 * signed reply webhook of SPEC.md 6.2, its credentials are the channel's client id, secret and `callback_url`, and
 * its rules say that a message counts as sent once the chat's socket has it, so the webhook's refusal is logged and
 * never fails the message. Its contacts write to its own receiver (SPEC.md 4.4, Receiver.ts and Inbound.ts), which
 * authenticates the sender itself and answers with the stored message's id: no provider webhook reaches this
 * adapter, so `verify` and `parse` only say what such a request would be.
 */
import { type ChannelProvider, SendFailure, webhookHeaders } from "@parley/domain"
import { Effect, Either, Metric, MetricLabel, Option, Schema } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import { equalSecrets } from "../identity/Secrets.js"
import { attemptOutcome, OutboundHttp } from "../outbound/OutboundHttp.js"

/** What a web channel's row holds for its reply webhook (the secret decrypted only in memory). */
export const WebChatCredentials = Schema.Struct({
  client_id: Schema.String,
  client_secret: Schema.String,
  callback_url: Schema.String
})
export type WebChatCredentials = typeof WebChatCredentials.Type

/**
 * Reply-webhook attempts by `attempt` (1, 2) and `outcome`: `delivered` (2xx), `rejected` (another
 * status), or the transport's failure (`timeout`, `network`, `refused`, `invalidurl`).
 */
const webhookDeliveries = Metric.counter("parley_webhook_deliveries_total", {
  description: "Reply-webhook delivery attempts by attempt and outcome",
  incremental: true
})

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

/** `Authorization: Basic base64(client_id:client_secret)`, as a web channel's server sends it (SPEC.md 4.4). */
export const basicCredentials = (header: string | undefined) => {
  if (header === undefined || !/^basic /i.test(header)) return Option.none()
  const decoded = Buffer.from(header.slice(6).trim(), "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  return colon < 0
    ? Option.none()
    : Option.some({ clientId: decoded.slice(0, colon), secret: decoded.slice(colon + 1) })
}

const noWebhook = (what: string) =>
  new SendFailure({
    kind: "misconfigured",
    message: `The web chat ${what}: its contacts write to its receiver (SPEC.md 4.4).`,
    status: null,
    code: null,
    excerpt: null
  })

export const makeWebChatProvider = Effect.gen(function*() {
  const http = yield* OutboundHttp
  const config = yield* AppConfig

  /** One signed POST of SPEC.md 6.2; a 2xx is sent, a timeout, a network failure, a 5xx or a 429 may be retried. */
  const send = (c: WebChatCredentials, m: Parameters<ChannelProvider<WebChatCredentials>["send"]>[1]) =>
    Effect.gen(function*() {
      const timestamp = String(Math.floor(Date.now() / 1000))
      const body = JSON.stringify({
        event: "message",
        client_id: c.client_id,
        contact_id: m.to,
        message_id: m.id,
        text: m.text ?? "",
        timestamp,
        // beyond SPEC.md 6.2: who wrote it, so an integrator can tell an operator's message from the agent's
        sender: m.sender,
        // an operator's display name, so a front end can show who answers
        sender_name: m.sender === "operator" ? m.senderName : null
      })
      const result = yield* http.request(
        "POST",
        c.callback_url,
        webhookHeaders(c.client_secret, m.id, timestamp, body),
        body,
        config.webhookTimeoutMs
      ).pipe(Effect.either)
      const { body: answer, error, ok, retryable, status } = attemptOutcome(result)
      yield* Metric.increment(
        Metric.taggedWithLabels(webhookDeliveries, [
          MetricLabel.make(
            "outcome",
            ok ? "delivered" : Either.isLeft(result) ? result.left.reason.toLowerCase() : "rejected"
          ),
          MetricLabel.make("attempt", String(m.attempt))
        ])
      )
      const excerpt = answer === null ? null : answer.slice(0, 1000)
      if (ok) {
        const external = externalMessageId(answer!)
        return { providerMessageIds: external === undefined ? [] : [external], status: status!, excerpt: excerpt! }
      }
      return yield* new SendFailure({
        kind: retryable ? "transient" : "undeliverable",
        message: error ?? `HTTP ${status}`,
        status,
        code: null,
        excerpt
      })
    })

  const provider = (kind: "web" | "widget"): ChannelProvider<WebChatCredentials> => ({
    kind,
    rules: {
      serviceWindowMs: null,
      defaultRatePerSecond: null,
      // SPEC.md 8: two attempts; SPEC.md 6.2: a non-2xx answer is logged, the message stays sent
      delivery: { handOff: "socket", attempts: 2 },
      maxTextChars: 10_000,
      maxFileBytes: 5 * 1024 * 1024
    },
    credentials: WebChatCredentials,
    handshake: () => Option.none(),
    verify: (c, request) =>
      Option.match(basicCredentials(request.headers["authorization"]), {
        onNone: () => false,
        onSome: (given) => equalSecrets(given.clientId, c.client_id) && equalSecrets(given.secret, c.client_secret)
      }),
    parse: () => [{
      _tag: "Unusable",
      reason: "The web chat's contacts write to its receiver (SPEC.md 4.4), not to a provider webhook.",
      detail: null
    }],
    send,
    // the widget shows the agent typing over its socket (Realtime), not through a provider
    markRead: () => Effect.void,
    fetchMedia: () => Effect.fail(noWebhook("has no media at a provider")),
    check: (c) => Effect.succeed({ client_id: c.client_id, callback_url: c.callback_url }),
    account: (c) => c.client_id,
    sharesWebhook: () => false
  })

  return { web: provider("web"), widget: provider("widget") }
})
