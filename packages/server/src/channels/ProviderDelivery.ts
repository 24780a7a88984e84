/**
 * One attempt to send a stored message through its provider channel's adapter (docs/channels.md, "Outbound"): the
 * same log as reply webhooks (`webhook_deliveries`, one row per attempt, written before the call so a crash leaves
 * it too), the message's status and provider id, and the provider's failure read by meaning: a rate limit or a
 * transient failure is retried by the DeliverReply workflow, a closed window or an undeliverable message fails
 * with the provider's error, a revoked token disconnects the channel.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import {
  ChannelId,
  ConversationId,
  DeliveryOutcome,
  type FileEntry,
  type SendFailure,
  WorkspaceId
} from "@parley/domain"
import { Effect, Option, Schema } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import { IN_PROGRESS, INTERRUPTED } from "../engine/AttemptLog.js"
import { FileStorage } from "../files/FileStorage.js"
import { BoundAddresses } from "../http/Listener.js"
import { CHANNEL_STATUS_EVENT, Realtime } from "../realtime/Realtime.js"
import * as MessagePartWrites from "../tables/MessagePartWrites.js"
import * as MessageWrites from "../tables/MessageWrites.js"
import { ChannelsRepo } from "./ChannelsRepo.js"
import { ProviderCredentials } from "./ProviderCredentials.js"
import { ChannelProviders } from "./Providers.js"
import { SendPace } from "./SendPace.js"

const Target = Schema.Struct({
  id: Schema.String,
  workspace_id: WorkspaceId,
  conversation_id: ConversationId,
  channel_id: ChannelId,
  message: Schema.NullOr(Schema.String),
  files: Schema.Array(Schema.Unknown),
  status: Schema.String,
  external_message_id: Schema.NullOr(Schema.String),
  thread: Schema.NullOr(Schema.String),
  quoted_id: Schema.NullOr(Schema.String),
  kind: Schema.String,
  is_active: Schema.Boolean,
  channel_status: Schema.String,
  rate_per_second: Schema.NullOr(Schema.Number),
  credentials_ciphertext: Schema.String,
  /** parts of a split message an earlier attempt sent */
  provider_parts_sent: Schema.Number,
  /** sent as this approved template (a provider's window closed), resolved when the message was stored */
  template: Schema.NullOr(Schema.Struct({
    name: Schema.String,
    language: Schema.String,
    parameters: Schema.Array(Schema.String)
  }))
})

/** A provider channel's message is tried this often in all, each wait twice the last (rate limits pass). */
export const PROVIDER_ATTEMPTS = 6

const done = new DeliveryOutcome({ delivered: true, retryable: false })
const failed = new DeliveryOutcome({ delivered: false, retryable: false })

export class ProviderDelivery extends Effect.Service<ProviderDelivery>()("@parley/server/ProviderDelivery", {
  dependencies: [
    ChannelProviders.Default,
    ChannelsRepo.Default,
    ProviderCredentials.Default,
    AppConfig.Default,
    FileStorage.Default,
    BoundAddresses.Default,
    Realtime.Default,
    SendPace.Default
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

    /** The message, its thread at the provider, and the contact message it quotes when the talk moved on since. */
    const target = SqlSchema.findOne({
      Request: Schema.String,
      Result: Target,
      execute: (messageId) =>
        sql`
          select m.id, m.workspace_id, m.conversation_id, m.channel_id, m.message, m.files, m.status, m.external_message_id,
                 m.template, m.provider_parts_sent,
                 coalesce(cv.external_chat_id, m.external_chat_id) as thread,
                 (select q.external_message_id from messages q where q.id = m.in_reply_to and exists (
                    select 1 from messages later where later.conversation_id = q.conversation_id and later.role = 'user'
                      and (later.created_at, later.id) > (q.created_at, q.id))) as quoted_id,
                 ch.kind, ch.is_active, ch.status as channel_status, ch.rate_per_second, ch.credentials_ciphertext
          from messages m join conversations cv on cv.id = m.conversation_id join channels ch on ch.id = m.channel_id
          where m.id = ${messageId} and ch.credentials_ciphertext is not null`
    })

    const publicBase = () =>
      Option.getOrElse(config.publicUrl, () => bound.apiNow() ?? `http://${config.host}:${config.port}`)

    const logAttempt = (t: typeof Target.Type, run: number, attempt: number, url: string) =>
      sql<{ id: string }>`
        with earlier as (
          update webhook_deliveries
          set retry_at = null,
              error = case when status_code is null and error = ${IN_PROGRESS} then ${INTERRUPTED} else error end
          where message_id = ${t.id} and run = ${run} and (retry_at is not null or (status_code is null and error = ${IN_PROGRESS}))
        )
        insert into webhook_deliveries (workspace_id, channel_id, message_id, run, attempt, url, status_code, duration_ms, error)
        values (${t.workspace_id}, ${t.channel_id}, ${t.id}, ${run}, ${attempt}, ${url}, null, 0, ${IN_PROGRESS})
        returning id::text`.pipe(Effect.map((rows) => rows[0]!.id))

    /** The attempt's row and the message's columns in one statement. */
    const record = (
      logId: string,
      messageId: string,
      r: {
        status: number | null
        durationMs: number
        error: string | null
        excerpt: string | null
        retryInMs: number | null
        message: {
          status: string
          error: string | null
          providerId: string | null
          keepManual?: boolean
          /** parts of a split message sent so far, when some were */
          partsSent?: number
          /** the ids of the parts this attempt sent, the first being part `from` */
          parts?: { readonly channelId: ChannelId; readonly from: number; readonly ids: ReadonlyArray<string> }
        } | null
      }
    ) =>
      sql`
        with logged as (
          update webhook_deliveries
          set status_code = ${r.status}, duration_ms = ${r.durationMs}, error = ${r.error}, response_excerpt = ${r.excerpt},
              retry_at = ${r.retryInMs === null ? null : sql`now() + make_interval(secs => ${r.retryInMs / 1000})`}
          where id = ${logId}
        ), parts as (
          ${
        r.message?.parts === undefined
          ? sql`select 1`
          : MessagePartWrites.insertParts(sql, { messageId, ...r.message.parts })
      }
        )
        ${
        r.message === null
          ? sql`select 1`
          : MessageWrites.update(sql, {
            // an operator's message keeps `created_manually` until it is sent or fails (SPEC.md 3.4)
            status: r.message.keepManual === true
              ? sql`case when status = 'created_manually' then status else ${r.message.status} end`
              : r.message.status,
            error: r.message.error,
            external_message_id: sql`coalesce(${r.message.providerId}::text, external_message_id)`,
            ...(r.message.partsSent === undefined ? {} : { provider_parts_sent: r.message.partsSent }),
            updated_at: sql`now()`
          }, sql`where id = ${messageId}`)
      }`

    /** The provider revoked the token: the channel stops sending until its credentials are replaced; operators hear. */
    const disconnect = (t: typeof Target.Type, failure: SendFailure) =>
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

    /**
     * Attempt `attempt` of run `run`; `final`: no retry follows, so a failure worth retrying fails the message too.
     * A message sent already (a repeated activity after a crash) counts as delivered. None: not a provider channel's
     * message (the reply webhook's attempt is the caller's).
     */
    const attempt = (messageId: string, run: number, n: number, final: boolean) =>
      Effect.gen(function*() {
        const found = yield* target(messageId)
        if (Option.isNone(found)) return Option.none()
        const t = found.value
        if (t.status === "sent_to_user" && t.external_message_id !== null && run === 0) return Option.some(done)
        const entry = providers.forKind(t.kind)
        if (Option.isNone(entry)) return Option.some(failed)
        const credentials = yield* providerCredentials.of(entry.value, t.credentials_ciphertext)
        const logId = yield* logAttempt(t, run, n, entry.value.endpoint(credentials))
        const refusal = !t.is_active
          ? "The conversation's channel is inactive."
          : t.channel_status !== "connected"
          ? "The channel is disconnected: the provider revoked its token. Replace its credentials."
          : t.thread === null
          ? "The conversation has no thread at the provider."
          : null
        if (refusal !== null) {
          yield* record(logId, messageId, {
            status: null,
            durationMs: 0,
            error: refusal,
            excerpt: null,
            retryInMs: null,
            message: { status: "failed", error: refusal, providerId: null }
          })
          return Option.some(failed)
        }
        const base = publicBase()
        const files = (t.files as ReadonlyArray<FileEntry>).map((f) => ({
          url: base + storage.signedPath(f.path),
          mimetype: f.mimetype,
          name: f.name,
          type: f.type
        }))
        yield* pace.reserve(t.channel_id, t.rate_per_second ?? entry.value.provider.rules.defaultRatePerSecond)
        const started = Date.now()
        const result = yield* entry.value.provider.send(credentials, {
          to: t.thread!,
          text: t.message,
          files,
          template: t.template ?? undefined,
          quotedId: t.quoted_id ?? undefined,
          fromPart: t.provider_parts_sent
        }).pipe(Effect.either)
        const durationMs = Date.now() - started
        if (result._tag === "Right") {
          yield* record(logId, messageId, {
            status: result.right.status,
            durationMs,
            error: null,
            excerpt: result.right.excerpt,
            retryInMs: null,
            message: {
              status: "sent_to_user",
              error: null,
              // a split message an earlier attempt began keeps its first part's id
              providerId: t.provider_parts_sent > 0 ? null : result.right.providerMessageIds[0] ?? null,
              ...(t.provider_parts_sent > 0 || result.right.providerMessageIds.length > 1
                ? {
                  parts: { channelId: t.channel_id, from: t.provider_parts_sent, ids: result.right.providerMessageIds }
                }
                : {})
            }
          })
          return Option.some(done)
        }
        const failure = result.left
        const retryable = (failure.kind === "rate_limited" || failure.kind === "transient") && !final
        // the parts this attempt got out stay sent: the retry sends the rest
        const sent = failure.sent === undefined
          ? {}
          : {
            partsSent: t.provider_parts_sent + failure.sent.parts,
            providerId: failure.sent.ids[0] ?? null,
            parts: { channelId: t.channel_id, from: t.provider_parts_sent, ids: failure.sent.ids }
          }
        if (failure.kind === "auth_revoked") yield* disconnect(t, failure)
        yield* record(logId, messageId, {
          status: failure.status,
          durationMs,
          error: failure.message,
          excerpt: failure.excerpt,
          retryInMs: retryable && n === 1 ? config.webhookRetryDelayMs : null,
          // while a retry is due an agent's reply is `sending`: no later turn hands it off again
          message: retryable
            ? { status: "sending", error: null, providerId: null, keepManual: true, ...sent }
            : { status: "failed", error: failure.message, providerId: null, ...sent }
        })
        return Option.some(new DeliveryOutcome({ delivered: false, retryable }))
      }).pipe(
        Effect.orDie,
        Effect.withSpan("ProviderDelivery.attempt", { attributes: { messageId, run, attempt: n } }),
        Effect.annotateLogs({ messageId, attempt: n })
      )

    return { attempt }
  })
}) {}
