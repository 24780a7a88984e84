/**
 * A provider's webhook, the same way for every kind (docs/channels.md, "Inbound"): find the channel by its
 * webhook key, let its adapter verify and parse the request, store each contact message (contact, conversation,
 * current opportunity and message in one transaction, once per provider id) before answering, apply receipts,
 * record what cannot be used; then hand each new message to its conversation's entity.
 */
import {
  type ChannelId,
  classifyFile,
  type ContactMessageEvent,
  type FileEntry,
  type InboundEvent,
  type ProviderRequest,
  ulid
} from "@parley/domain"
import { Data, Effect, Option } from "effect"
import { FileStorage } from "../files/FileStorage.js"
import { MESSAGE_STATUS_EVENT, Realtime } from "../realtime/Realtime.js"
import { ChannelCache } from "./ChannelCache.js"
import { ChannelsRepo, type ProviderChannelRow } from "./ChannelsRepo.js"
import { InboundMessages } from "./InboundMessages.js"
import { InboundRepo } from "./InboundRepo.js"
import { ProviderCredentials } from "./ProviderCredentials.js"
import { ChannelProviders, type ProviderEntry } from "./Providers.js"

/** How the webhook is answered: 404 unknown, 401 not the provider's (nothing stored), 200 otherwise. */
export class WebhookRefused extends Data.TaggedError("WebhookRefused")<{
  readonly status: 401 | 403 | 404
  readonly message: string
}> {}

const unknownWebhook = new WebhookRefused({ status: 404, message: "No channel has this webhook." })

/** A stored message lost to a concurrent retry of the same webhook: the transaction is rolled back. */

const safeName = (name: string) => name.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^\.+/, "_").slice(-100) || "file"

const extension = (mimetype: string) => {
  const sub = mimetype.split("/")[1]?.split(";")[0] ?? "bin"
  return sub.replace(/[^a-z0-9]+/gi, "").slice(0, 10) || "bin"
}

export class ProviderInbound extends Effect.Service<ProviderInbound>()("@parley/server/ProviderInbound", {
  dependencies: [
    ChannelsRepo.Default,
    ChannelProviders.Default,
    InboundRepo.Default,
    FileStorage.Default,
    Realtime.Default,
    InboundMessages.Default,
    ChannelCache.Default,
    ProviderCredentials.Default
  ],
  effect: Effect.gen(function*() {
    const channels = yield* ChannelsRepo
    const providers = yield* ChannelProviders
    const repo = yield* InboundRepo
    const storage = yield* FileStorage
    const realtime = yield* Realtime
    const inbound = yield* InboundMessages
    const channelCache = yield* ChannelCache
    const providerCredentials = yield* ProviderCredentials

    const channelOf = (key: string) =>
      Effect.gen(function*() {
        const row = yield* channelCache.get(`webhook:${key}`, channels.byWebhookKey(key))
        if (Option.isNone(row)) return yield* unknownWebhook
        const entry = providers.forKind(row.value.kind)
        if (Option.isNone(entry)) return yield* unknownWebhook
        const credentials = yield* providerCredentials.of(entry.value, row.value.credentials_ciphertext)
        return { channel: row.value, entry: entry.value, credentials }
      })

    /** The verify handshake: the challenge to echo, or 403. */
    const handshake = Effect.fn("ProviderInbound.handshake")(function*(key: string, request: ProviderRequest) {
      const { credentials, entry } = yield* channelOf(key)
      const challenge = entry.provider.handshake(credentials, request)
      if (Option.isNone(challenge)) {
        return yield* new WebhookRefused({ status: 403, message: "The verify token does not match." })
      }
      return challenge.value
    })

    /** Each file of the message fetched into storage; one that fails is said in the text, not lost. */
    const fetchFiles = (
      channel: ProviderChannelRow,
      entry: ProviderEntry,
      credentials: unknown,
      event: ContactMessageEvent
    ) =>
      Effect.forEach(
        event.media,
        (media) =>
          entry.provider.fetchMedia(credentials, media, entry.provider.rules.maxFileBytes).pipe(
            Effect.flatMap((fetched) => {
              const month = new Date().toISOString().slice(0, 7).replace("-", "/")
              const name = media.name ?? `${event.type}.${extension(fetched.mimetype)}`
              const key = `channels/${channel.id}/${month}/${ulid()}/${safeName(name)}`
              return Effect.map(storage.putStream(key, fetched.body), (size) => ({
                key,
                entry: {
                  path: key,
                  mimetype: fetched.mimetype,
                  type: classifyFile(fetched.mimetype),
                  size,
                  name
                } satisfies FileEntry
              }))
            }),
            Effect.scoped,
            Effect.map((stored) => ({ stored, error: null })),
            Effect.catchTag(
              "SendFailure",
              (failure) =>
                Effect.succeed({ stored: null, error: `[${event.type} could not be downloaded: ${failure.message}]` })
            )
          )
      )

    /**
     * One contact message through the one inbound path (InboundMessages), stored once per provider id. Its files are
     * fetched first, unless the id is stored already; one that cannot be fetched is said in the message's text.
     */
    const storeMessage = (
      channel: ProviderChannelRow,
      entry: ProviderEntry,
      credentials: unknown,
      event: ContactMessageEvent
    ) =>
      Effect.gen(function*() {
        if (event.media.length > 0 && (yield* inbound.seen(channel.id, event.providerMessageId))) return false
        const files = yield* fetchFiles(channel, entry, credentials, event)
        const stored = files.flatMap((f) => f.stored === null ? [] : [f.stored])
        const problems = files.flatMap((f) => f.error === null ? [] : [f.error])
        const accepted = yield* inbound.accept(channel, {
          thread: event.thread,
          text: [event.text, ...problems].filter((t) => t !== "").join("\n"),
          files: stored.map((f) => f.entry),
          newFiles: stored.map((f) => ({
            key: f.key,
            name: f.entry.name,
            mimetype: f.entry.mimetype,
            size: f.entry.size
          })),
          attachments: event.attachments,
          providerMessageId: event.providerMessageId,
          sentAt: event.sentAt,
          callType: channel.kind
        }, {
          contact: {
            source: channel.kind,
            phone: event.phone,
            name: event.profileName,
            ...(event.sharesPhone === true ? { shared: true } : {})
          }
        })
        return !accepted.duplicate
      })

    /**
     * A POST from the provider: 401 with nothing stored unless its signature holds; otherwise every event is
     * stored, applied or recorded before the answer, and nothing the provider sent ever answers a 500.
     */
    const receive = Effect.fn("ProviderInbound.receive")(function*(key: string, request: ProviderRequest) {
      const { channel, credentials, entry } = yield* channelOf(key)
      if (!entry.provider.verify(credentials, request)) {
        yield* Effect.logWarning("A provider webhook with a missing or wrong signature was refused").pipe(
          Effect.annotateLogs({ channel_id: channel.id, kind: channel.kind })
        )
        return yield* new WebhookRefused({ status: 401, message: "Invalid signature." })
      }
      yield* apply({ channel, credentials, entry }, entry.provider.parse(credentials, request.body))
      return entry.provider.webhookAnswer
    })

    interface Receiving {
      readonly channel: ProviderChannelRow
      readonly credentials: unknown
      readonly entry: ProviderEntry
    }

    /**
     * The channel of the workspace whose account `account` is, when the webhook that carried its events could carry
     * them (WhatsApp: the same Meta app, whose secret signed the request).
     */
    const channelOfAccount = (by: Receiving, account: string) =>
      Effect.gen(function*() {
        const rows = yield* channelCache.get(
          `accounts:${by.channel.workspace_id}:${by.channel.kind}`,
          channels.providerChannels(by.channel.workspace_id, by.channel.kind)
        )
        for (const row of rows) {
          const credentials = yield* providerCredentials.of(by.entry, row.credentials_ciphertext)
          if (
            by.entry.provider.account(credentials) === account &&
            by.entry.provider.sharesWebhook(by.credentials, credentials)
          ) return Option.some<Receiving>({ channel: row, credentials, entry: by.entry })
        }
        return Option.none<Receiving>()
      })

    /**
     * Tells the provider a stored event was received, where it waits for that (Telegram's button presses): briefly,
     * and a failure is only logged, since the message is stored and the contact's app recovers by itself.
     */
    const acknowledge = (to: Receiving, event: ContactMessageEvent) =>
      to.entry.provider.acknowledge === undefined
        ? Effect.void
        : to.entry.provider.acknowledge(to.credentials, event).pipe(
          Effect.timeout("3 seconds"),
          Effect.catchAllCause((cause) =>
            Effect.logWarning("Acknowledging a contact's event to the provider failed", cause).pipe(
              Effect.annotateLogs({ channel_id: to.channel.id, kind: to.channel.kind })
            )
          )
        )

    /** Every event stored, applied or recorded for the channel it belongs to. */
    const apply = (to: Receiving, events: ReadonlyArray<InboundEvent>): Effect.Effect<void> =>
      Effect.gen(function*() {
        const { channel, credentials, entry } = to
        const record = (kind: string, reason: string, detail: unknown) =>
          repo.recordEvent({ workspaceId: channel.workspace_id, channelId: channel.id, kind, reason, detail })
        for (const event of events) {
          if (event._tag === "ForAccount") {
            const other = yield* channelOfAccount(to, event.account)
            if (Option.isSome(other)) yield* apply(other.value, event.events)
            else {
              yield* record(
                "unusable",
                `For another account (${event.account}): no channel of this workspace and app has it.`,
                { events: event.events.length }
              )
            }
          } else if (event._tag === "Unusable") {
            yield* record("unusable", event.reason, event.detail)
          } else if (event._tag === "Receipt") {
            const applied = yield* repo.applyReceipt(channel.id, event)
            if (Option.isSome(applied)) {
              yield* realtime.toWorkspace(channel.workspace_id, MESSAGE_STATUS_EVENT, {
                conversation_id: applied.value.conversation_id,
                message_id: applied.value.id,
                delivery_status: applied.value.delivery_status
              })
            }
          } else if (!channel.is_active) {
            yield* record("unusable", "The channel is inactive: the message was not stored.", {
              provider_message_id: event.providerMessageId,
              thread: event.thread
            })
          } else {
            // a retried update's event was acknowledged when it was stored
            if (yield* storeMessage(channel, entry, credentials, event)) yield* acknowledge(to, event)
          }
        }
      })

    return { handshake, receive }
  })
}) {}

export type { ChannelId }
