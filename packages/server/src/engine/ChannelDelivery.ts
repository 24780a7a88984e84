/**
 * The one outbound path (docs/channels.md, "Outbound"): one attempt to send a stored message through its channel's
 * adapter, whatever the kind (the web chat's signed reply webhook, WhatsApp's Graph API). One log for every kind
 * (`webhook_deliveries`, one row per attempt, written before the call so a crash leaves it too), the message's
 * status and provider id by the adapter's rules, and a failure read by meaning: a rate limit or a transient
 * failure is retried by the DeliverReply workflow, a closed window or an undeliverable message fails with the
 * provider's error (unless the web chat's socket already has it), a revoked token disconnects the channel.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import {
  ChannelId,
  ConversationId,
  DeliveryOutcome,
  type DeliveryRules,
  type FileEntry,
  type SendFailure,
  WorkspaceId
} from "@parley/domain"
import { Effect, Option, Schema } from "effect"
import { ChannelsRepo } from "../channels/ChannelsRepo.js"
import { AUTOMATED } from "../channels/InboundMessages.js"
import { ProviderCredentials } from "../channels/ProviderCredentials.js"
import { ChannelProviders } from "../channels/Providers.js"
import { SendPace } from "../channels/SendPace.js"
import { contactSentAtMs } from "../channels/ServiceWindow.js"
import { AppConfig, receiverBaseUrl } from "../config/AppConfig.js"
import { FileStorage } from "../files/FileStorage.js"
import { BoundAddresses } from "../http/Listener.js"
import { MessagesRepo } from "../messages/MessagesRepo.js"
import { CHANNEL_STATUS_EVENT, Realtime } from "../realtime/Realtime.js"
import { makeDeliveryLog, type MessageOutcome } from "./DeliveryLog.js"

/** A stored message, its conversation and its channel: what delivering it needs, read in one statement. */
export const DeliveryTarget = Schema.Struct({
  id: Schema.String,
  workspace_id: WorkspaceId,
  conversation_id: ConversationId,
  channel_id: Schema.NullOr(ChannelId),
  message: Schema.NullOr(Schema.String),
  cost: Schema.Number,
  is_manual: Schema.Boolean,
  /** an operator's display name (`users.name`); null for the agent's messages */
  sender_name: Schema.NullOr(Schema.String),
  /** an eval's conversation (docs/evals.md): its replies are recorded as sent, and nobody is told */
  is_eval: Schema.Boolean,
  files: Schema.Array(Schema.Unknown),
  status: Schema.String,
  external_message_id: Schema.NullOr(Schema.String),
  thread: Schema.NullOr(Schema.String),
  quoted_id: Schema.NullOr(Schema.String),
  kind: Schema.NullOr(Schema.String),
  is_active: Schema.NullOr(Schema.Boolean),
  channel_status: Schema.NullOr(Schema.String),
  rate_per_second: Schema.NullOr(Schema.Number),
  credentials_ciphertext: Schema.NullOr(Schema.String),
  client_id: Schema.NullOr(Schema.String),
  secret_ciphertext: Schema.NullOr(Schema.String),
  callback_url: Schema.NullOr(Schema.String),
  webhook_key: Schema.NullOr(Schema.String),
  /** when the contact's latest message was sent by the provider's clock (ms), on a provider channel */
  contact_sent_at_ms: Schema.NullOr(Schema.Number),
  /** the contact's latest message that may be answered (not a machine's): its provider id and structured parts */
  contact_message: Schema.NullOr(Schema.Struct({
    id: Schema.NullOr(Schema.String),
    attachments: Schema.Array(Schema.Unknown)
  })),
  /** parts of a split message an earlier attempt sent */
  provider_parts_sent: Schema.Number,
  /** sent as this approved template (a provider's window closed), resolved when the message was stored */
  template: Schema.NullOr(Schema.Struct({
    name: Schema.String,
    language: Schema.String,
    parameters: Schema.Array(Schema.String)
  }))
})
export type DeliveryTarget = typeof DeliveryTarget.Type

/** One attempt's outcome, and how many attempts the channel's rules allow in all (the retries' workflow). */
export interface Attempted {
  readonly outcome: DeliveryOutcome
  readonly attempts: number
}

const done: Attempted = { outcome: new DeliveryOutcome({ delivered: true, retryable: false }), attempts: 1 }
const failed: Attempted = { outcome: new DeliveryOutcome({ delivered: false, retryable: false }), attempts: 1 }

export class ChannelDelivery extends Effect.Service<ChannelDelivery>()("@parley/server/ChannelDelivery", {
  dependencies: [
    ChannelProviders.Default,
    ChannelsRepo.Default,
    ProviderCredentials.Default,
    AppConfig.Default,
    FileStorage.Default,
    BoundAddresses.Default,
    Realtime.Default,
    SendPace.Default,
    MessagesRepo.Default
  ],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const providers = yield* ChannelProviders
    const channels = yield* ChannelsRepo
    const providerCredentials = yield* ProviderCredentials
    const config = yield* AppConfig
    const storage = yield* FileStorage
    const bound = yield* BoundAddresses
    const realtime = yield* Realtime
    const pace = yield* SendPace
    const messages = yield* MessagesRepo
    const log = yield* makeDeliveryLog

    /** The message, its thread at the provider, and the contact message it quotes when the talk moved on since. */
    const target = SqlSchema.findOne({
      Request: Schema.String,
      Result: DeliveryTarget,
      execute: (messageId) =>
        sql`
          select m.id, m.workspace_id, m.conversation_id, m.channel_id, m.message, m.files, m.status, m.external_message_id,
                 m.cost_for_user::float8 as cost, m.is_manual, cv.is_eval,
                 (select u.name from users u where u.id = m.sender_id and m.is_manual) as sender_name,
                 m.template, m.provider_parts_sent,
                 coalesce(cv.external_chat_id, m.external_chat_id) as thread,
                 (select q.external_message_id from messages q where q.id = m.in_reply_to and exists (
                    select 1 from messages later where later.conversation_id = q.conversation_id and later.role = 'user'
                      and (later.created_at, later.id) > (q.created_at, q.id))) as quoted_id,
                 ch.kind, ch.is_active, ch.status as channel_status, ch.rate_per_second, ch.credentials_ciphertext,
                 ch.client_id, ch.secret_ciphertext, ch.callback_url, ch.webhook_key,
                 ${contactSentAtMs(sql, "cv", "ch")} as contact_sent_at_ms,
                 (select jsonb_build_object('id', c.external_message_id, 'attachments', c.attachments) from messages c
                  where c.conversation_id = m.conversation_id and c.role = 'user'
                    and c.handled_reason is distinct from ${AUTOMATED}
                  order by c.created_at desc, c.id desc limit 1) as contact_message
          from messages m join conversations cv on cv.id = m.conversation_id left join channels ch on ch.id = m.channel_id
          where m.id = ${messageId}`
    })

    const publicBase = () =>
      Option.getOrElse(config.publicUrl, () => bound.apiNow() ?? `http://${config.host}:${config.port}`)

    /** The provider revoked the token: the channel stops sending until its credentials are replaced; operators hear. */
    const disconnect = (t: DeliveryTarget & { readonly channel_id: ChannelId }, failure: SendFailure) =>
      Effect.gen(function*() {
        if (!(yield* channels.disconnect(t.channel_id, failure.message))) return
        yield* sql`select workspace_event(${t.workspace_id}, 'channel.disconnected', jsonb_build_object(
          'channel_id', ${t.channel_id}::int8, 'kind', ${t.kind}::text, 'reason', ${failure.message}::text))`
        yield* realtime.toWorkspace(t.workspace_id, CHANNEL_STATUS_EVENT, {
          channel_id: t.channel_id,
          status: "disconnected",
          reason: failure.message
        })
        yield* Effect.logWarning("A provider revoked a channel's token: the channel is disconnected").pipe(
          Effect.annotateLogs({ channel_id: t.channel_id, kind: t.kind })
        )
      })

    /** What the attempt changes on its message, by the channel's rules (`socket`: see `DeliveryRules`). */
    const onMessage = (rules: DeliveryRules, handing: boolean, m: MessageOutcome): MessageOutcome =>
      rules.handOff === "provider"
        ? m
        : handing
        ? { ...m, status: "sent_to_user", error: null, keepManual: false }
        : { ...m, status: null }

    /**
     * Attempt `n` of run `run` for a message `target` read; `final`: no retry follows, so a failure worth retrying
     * fails the message too. A message sent already (a repeated activity after a crash) counts as delivered, as does
     * one with nothing to send it through (no channel; a web channel without `callback_url`, whose socket has it).
     */
    const attemptOn = (t: DeliveryTarget, run: number, n: number, final: boolean) =>
      Effect.gen(function*() {
        if (t.status === "sent_to_user" && t.external_message_id !== null && run === 0) return done
        if (t.channel_id === null || t.kind === null) return done
        const entry = providers.forKind(t.kind)
        const credentials = Option.isNone(entry)
          ? Option.none()
          : yield* providerCredentials.load(entry.value, t)
        const channelId = t.channel_id
        // the web chat's first attempt of a turn or an operator's message is its hand-off (its socket has it)
        const handing = run === 0 && n === 1
        if (Option.isNone(entry) || Option.isNone(credentials)) {
          if (Option.isSome(entry) && entry.value.provider.rules.delivery.handOff === "socket") {
            if (handing) yield* messages.setStatus(t.id, null)
            return done
          }
          yield* messages.setStatus(
            t.id,
            Option.isNone(entry)
              ? `Sending on ${t.kind} channels is not supported by this server.`
              : `The ${t.kind} channel has no credentials to send with: replace them with PUT /api/user/channels/${channelId}.`
          )
          return failed
        }
        const { delivery: rules, defaultRatePerSecond } = entry.value.provider.rules
        const logId = yield* log.begin({ ...t, channel_id: channelId }, run, n, entry.value.endpoint(credentials.value))
        const refusal = t.is_active !== true
          ? "The conversation's channel is inactive."
          : t.channel_status !== "connected"
          ? "The channel is disconnected: the provider revoked its token. Replace its credentials."
          : null
        if (refusal !== null) {
          yield* log.record(logId, t.id, {
            status: null,
            durationMs: 0,
            error: refusal,
            excerpt: null,
            retryInMs: null,
            message: onMessage(rules, handing, { status: "failed", error: refusal, providerId: null })
          })
          return { ...failed, attempts: rules.attempts }
        }
        const base = publicBase()
        const files = (t.files as ReadonlyArray<FileEntry>).map((f) => ({
          url: base + storage.signedPath(f.path),
          key: f.path,
          size: f.size,
          mimetype: f.mimetype,
          name: f.name,
          type: f.type
        }))
        const rate = t.rate_per_second ?? defaultRatePerSecond
        if (rate !== null) yield* pace.reserve(channelId, rate)
        const started = Date.now()
        const result = yield* entry.value.provider.send(credentials.value, {
          id: t.id,
          to: t.thread,
          sender: t.is_manual ? "operator" : "ai",
          senderName: t.sender_name,
          attempt: n,
          text: t.message,
          files,
          template: t.template ?? undefined,
          quotedId: t.quoted_id ?? undefined,
          fromPart: t.provider_parts_sent,
          webhookUrl: t.webhook_key === null
            ? null
            : `${receiverBaseUrl(config, yield* bound.receiver)}/channels/${t.webhook_key}/webhook`,
          contactSentAt: t.contact_sent_at_ms === null ? null : new Date(t.contact_sent_at_ms),
          contactMessage: t.contact_message === null
            ? undefined
            : { providerMessageId: t.contact_message.id, attachments: t.contact_message.attachments }
        }).pipe(Effect.either)
        const durationMs = Date.now() - started
        if (result._tag === "Right") {
          const ids = result.right.providerMessageIds
          yield* log.record(logId, t.id, {
            status: result.right.status,
            durationMs,
            error: null,
            excerpt: result.right.excerpt,
            retryInMs: null,
            message: onMessage(rules, handing, {
              status: "sent_to_user",
              error: null,
              // a split message an earlier attempt began keeps its first part's id
              providerId: t.provider_parts_sent > 0 ? null : ids[0] ?? null,
              ...(t.provider_parts_sent > 0 || ids.length > 1
                ? { parts: { channelId, from: t.provider_parts_sent, ids } }
                : {})
            })
          })
          return { ...done, attempts: rules.attempts }
        }
        const failure = result.left
        const retryable = (failure.kind === "rate_limited" || failure.kind === "transient") && !final
        // the parts this attempt got out stay sent: the retry sends the rest
        const sent = failure.sent === undefined ? {} : {
          partsSent: t.provider_parts_sent + failure.sent.parts,
          providerId: failure.sent.ids[0] ?? null,
          parts: { channelId, from: t.provider_parts_sent, ids: failure.sent.ids }
        }
        if (failure.kind === "auth_revoked") yield* disconnect({ ...t, channel_id: channelId }, failure)
        yield* log.record(logId, t.id, {
          status: failure.status,
          durationMs,
          error: failure.message,
          excerpt: failure.excerpt,
          retryInMs: retryable && n === 1 ? Math.max(config.webhookRetryDelayMs, failure.retryAfterMs ?? 0) : null,
          // while a retry is due an agent's reply is `sending`: no later turn hands it off again
          message: onMessage(
            rules,
            handing,
            retryable
              ? { status: "sending", error: null, providerId: null, keepManual: true, ...sent }
              : { status: "failed", error: failure.message, providerId: null, ...sent }
          )
        })
        const outcome = new DeliveryOutcome({
          delivered: false,
          retryable,
          ...(retryable && failure.retryAfterMs !== undefined ? { retryAfterMs: Math.ceil(failure.retryAfterMs) } : {})
        })
        return { outcome, attempts: rules.attempts }
      }).pipe(
        Effect.orDie,
        Effect.withSpan("ChannelDelivery.attempt", { attributes: { messageId: t.id, run, attempt: n } }),
        Effect.annotateLogs({ messageId: t.id, attempt: n })
      )

    /** The DeliverReply workflow's attempt: a message no longer stored counts as delivered. */
    const attempt = (messageId: string, run: number, n: number, final: boolean) =>
      target(messageId).pipe(
        Effect.orDie,
        Effect.flatMap(Option.match({
          onNone: () => Effect.succeed(done.outcome),
          onSome: (t) => Effect.map(attemptOn(t, run, n, final), (a) => a.outcome)
        }))
      )

    return { target: (messageId: string) => Effect.orDie(target(messageId)), attemptOn, attempt }
  })
}) {}
