/**
 * A provider's webhook, the same way for every kind (docs/channels.md, "Inbound"): find the channel by its
 * webhook key, let its adapter verify and parse the request, store each contact message (contact, conversation,
 * current opportunity and message in one transaction, once per provider id) before answering, apply receipts,
 * record what cannot be used; then hand each new message to its conversation's entity.
 */
import {
  type ChannelId,
  type ContactMessageEvent,
  type ConversationId,
  type EchoEvent,
  type InboundEvent,
  type ProviderRequest,
  ulid
} from "@parley/domain"
import { Data, Effect, Option } from "effect"
import { FileStorage } from "../files/FileStorage.js"
import { MESSAGE_STATUS_EVENT, NEW_MESSAGE_EVENT, Realtime } from "../realtime/Realtime.js"
import { ChannelCache } from "./ChannelCache.js"
import { ChannelLinks } from "./ChannelLinks.js"
import { ChannelsRepo, type ProviderChannelRow } from "./ChannelsRepo.js"
import { makeInboundFiles } from "./InboundFiles.js"
import { InboundMessages } from "./InboundMessages.js"
import { InboundRepo } from "./InboundRepo.js"
import { ProviderCredentials } from "./ProviderCredentials.js"
import { ProviderEventsRepo } from "./ProviderEventsRepo.js"
import { ChannelProviders, type ProviderEntry } from "./Providers.js"

/** How the webhook is answered: 404 unknown, 401 not the provider's (nothing stored), 200 otherwise. */
export class WebhookRefused extends Data.TaggedError("WebhookRefused")<{
  readonly status: 401 | 403 | 404
  readonly message: string
}> {}

/** How many known threads `profileName` remembers. */
const MAX_SEEN_THREADS = 10_000

const unknownWebhook = new WebhookRefused({ status: 404, message: "No channel has this webhook." })

export class ProviderInbound extends Effect.Service<ProviderInbound>()("@parley/server/ProviderInbound", {
  dependencies: [
    ChannelsRepo.Default,
    ChannelProviders.Default,
    InboundRepo.Default,
    FileStorage.Default,
    Realtime.Default,
    InboundMessages.Default,
    ChannelCache.Default,
    ProviderCredentials.Default,
    ProviderEventsRepo.Default,
    ChannelLinks.Default
  ],
  effect: Effect.gen(function*() {
    const channels = yield* ChannelsRepo
    const providers = yield* ChannelProviders
    const repo = yield* InboundRepo
    const inboundFiles = yield* makeInboundFiles
    const realtime = yield* Realtime
    const inbound = yield* InboundMessages
    const channelCache = yield* ChannelCache
    const providerCredentials = yield* ProviderCredentials
    const providerEvents = yield* ProviderEventsRepo
    const links = yield* ChannelLinks
    /** Threads known to have a conversation, oldest first (for `profileName`). */
    const seenThreads = new Set<string>()

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

    /**
     * The contact's name from the provider's profile, for a thread Parley has not seen, where the provider's events
     * carry none (Messenger): briefly, and without it when the provider will not say.
     */
    const profileName = (channel: ProviderChannelRow, entry: ProviderEntry, credentials: unknown, thread: string) =>
      Effect.gen(function*() {
        const ask = entry.provider.profileName
        if (ask === undefined) return undefined
        // a thread this process saw is known: a returning contact's message makes no query for it
        const key = `${channel.id}:${thread}`
        if (seenThreads.has(key)) return undefined
        const known = yield* providerEvents.knownThread(channel.id, thread)
        if (seenThreads.size >= MAX_SEEN_THREADS) seenThreads.delete(seenThreads.values().next().value!)
        seenThreads.add(key)
        if (known) return undefined
        return yield* ask(credentials, thread).pipe(
          Effect.timeout("3 seconds"),
          Effect.catchAllCause((cause) =>
            Effect.as(
              Effect.logInfo("The provider gave no profile name for a new contact", cause).pipe(
                Effect.annotateLogs({ channel_id: channel.id, kind: channel.kind })
              ),
              undefined
            )
          )
        )
      })

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
        const files = yield* inboundFiles.fetch(channel, entry, credentials, event)
        const stored = files.flatMap((f) => f.stored === null ? [] : [f.stored])
        const problems = files.flatMap((f) => f.error === null ? [] : [f.error])
        const name = event.profileName ?? (yield* profileName(channel, entry, credentials, event.thread))
        const linked = event.linkToken === undefined ? Option.none() : yield* links.contactOf(channel, event.linkToken)
        if (event.linkToken !== undefined && Option.isNone(linked)) {
          yield* Effect.logInfo("A chat started by a link Parley did not issue, or whose link expired").pipe(
            Effect.annotateLogs({ channel_id: channel.id, kind: channel.kind })
          )
        }
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
          callType: channel.kind,
          automated: event.automated
        }, {
          contact: {
            source: channel.kind,
            phone: event.phone,
            email: event.email,
            ...(entry.provider.rules.conversationPerThread === true ? { perThread: true } : {}),
            name,
            ...(Option.isSome(linked) ? { contactId: linked.value } : {}),
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

    /** Operators see each message a receipt moved. */
    const statusMoved = (
      channel: ProviderChannelRow,
      moved: ReadonlyArray<{ id: string; conversation_id: ConversationId; delivery_status: string }>
    ) =>
      Effect.forEach(moved, (m) =>
        realtime.toWorkspace(channel.workspace_id, MESSAGE_STATUS_EVENT, {
          conversation_id: m.conversation_id,
          message_id: m.id,
          delivery_status: m.delivery_status
        }), { discard: true })

    /** The account's message sent from elsewhere, kept as an operator's (never answered); recorded without a thread. */
    const storeEcho = (channel: ProviderChannelRow, event: EchoEvent) =>
      Effect.gen(function*() {
        const stored = yield* providerEvents.insertEcho({ ...event, id: ulid(), channelId: channel.id })
        if (Option.isSome(stored)) {
          yield* realtime.toWorkspace(channel.workspace_id, NEW_MESSAGE_EVENT, {
            conversation_id: stored.value.conversation_id,
            message_id: stored.value.id,
            role: "assistant",
            sender: "operator",
            sender_id: null,
            message: event.text
          })
        } else if (!(yield* providerEvents.knownThread(channel.id, event.thread))) {
          yield* repo.recordEvent({
            workspaceId: channel.workspace_id,
            channelId: channel.id,
            kind: "unusable",
            reason: "An echo of a message the account sent on a thread Parley has no conversation for.",
            detail: { provider_message_id: event.providerMessageId, thread: event.thread }
          })
        }
      })

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
            yield* statusMoved(channel, Option.toArray(yield* providerEvents.applyReceipt(channel.id, event)))
          } else if (event._tag === "WatermarkReceipt") {
            yield* statusMoved(channel, yield* providerEvents.applyWatermark(channel.id, event))
          } else if (event._tag === "Echo") {
            yield* storeEcho(channel, event)
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

    /**
     * Events a provider gave without a webhook (a mailbox synced over IMAP, a simulator), for one of its channels:
     * stored, applied or recorded as a webhook's are.
     */
    const applyTo = Effect.fn("ProviderInbound.applyTo")(
      function*(channel: ProviderChannelRow, events: ReadonlyArray<InboundEvent>) {
        const entry = providers.forKind(channel.kind)
        if (Option.isNone(entry)) return yield* Effect.dieMessage(`No adapter for ${channel.kind}`)
        const credentials = yield* providerCredentials.of(entry.value, channel.credentials_ciphertext)
        yield* apply({ channel, credentials, entry: entry.value }, events)
      }
    )

    return { handshake, receive, applyTo }
  })
}) {}

export type { ChannelId }
