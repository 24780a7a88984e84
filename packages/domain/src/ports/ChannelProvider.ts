/**
 * The port every messaging provider is an adapter behind (docs/channels.md, "The channel layer"): verify and
 * parse what the provider posts into normalised events, send a message, mark read and show typing, fetch a
 * contact's media, and say the provider's rules. The server holds one adapter per kind; everything outside
 * an adapter (storing, answering, delivering, receipts) is the same for every provider.
 */
import { Data, type Effect, type Option, Schema, type Scope, type Stream } from "effect"
import type { ChannelTemplate } from "../Templates.js"

/** A file the contact sent, still at the provider: fetched into our storage while the message is stored. */
export interface InboundMedia {
  readonly providerId: string
  readonly mimetype: string | undefined
  readonly name: string | undefined
  readonly caption: string | undefined
  /** The file came inside the message (a mail's attachment): stored from these bytes, nothing is fetched. */
  readonly content?: Uint8Array
}

/** A contact's message, whatever the provider: its text is what the agent reads. */
export interface ContactMessageEvent {
  readonly _tag: "ContactMessage"
  /** The provider's id of the message: the key that makes a retried webhook store nothing twice. */
  readonly providerMessageId: string
  /** The provider's thread id (a WhatsApp number, a page-scoped id, a chat id): `source_id`, `external_chat_id`. */
  readonly thread: string
  /** Identity the provider gives: a phone (digits only, country code) matches the contact by phone. */
  readonly phone: string | undefined
  /** The message itself gives the phone (a contact sharing its own card): it fills a known contact's phone too. */
  readonly sharesPhone?: boolean
  /** Identity the provider gives as an email address (a mail's sender): matches the contact by email. */
  readonly email?: string | undefined
  /**
   * Sent by a machine (an auto-reply, a bounce, a mailing list): stored, never answered, so two machines never
   * answer each other; says what told (`Auto-Submitted: auto-replied`).
   */
  readonly automated?: string | undefined
  readonly profileName: string | undefined
  /** The token of a link Parley issued that started this chat (Telegram's `/start {token}`): ties it to that contact. */
  readonly linkToken?: string | undefined
  /** When the contact sent it, by the provider's clock: a service window counts from here, never from our receipt. */
  readonly sentAt: Date
  /** The provider's type (`text`, `image`, `location`, ...). */
  readonly type: string
  readonly text: string
  readonly media: ReadonlyArray<InboundMedia>
  /** Structured parts (location, contact cards, interactive replies, reactions), kept as the message's attachments. */
  readonly attachments: ReadonlyArray<Record<string, unknown>>
  /** The provider's id of the message this one quotes or reacts to. */
  readonly quotedId: string | undefined
}

export const ReceiptStatuses = ["sent", "delivered", "read", "failed"] as const
export type ReceiptStatus = typeof ReceiptStatuses[number]

/** The provider's word on a message we sent. */
export interface ReceiptEvent {
  readonly _tag: "Receipt"
  readonly providerMessageId: string
  readonly status: ReceiptStatus
  readonly at: Date
  readonly error: string | undefined
}

/**
 * The provider's word that the contact received or read everything the account sent on a thread up to a moment
 * (Messenger's `watermark`): every message sent there until then moves.
 */
export interface WatermarkReceiptEvent {
  readonly _tag: "WatermarkReceipt"
  readonly thread: string
  readonly status: "delivered" | "read"
  /** Messages sent at or before this moment, by the provider's clock. */
  readonly upTo: Date
}

/**
 * A message the account sent to the contact from somewhere else (Messenger's Page inbox, the Instagram app): kept on
 * the conversation as an operator's message, never answered. The account's echoes of Parley's own sends are not
 * events.
 */
export interface EchoEvent {
  readonly _tag: "Echo"
  readonly providerMessageId: string
  readonly thread: string
  readonly sentAt: Date
  readonly text: string
  /** What it carried besides text (attachments by link), kept as the message's attachments. */
  readonly attachments: ReadonlyArray<Record<string, unknown>>
}

/** Something the provider posted that carries no message we can use: recorded, never dropped in silence. */
export interface UnusableEvent {
  readonly _tag: "Unusable"
  readonly reason: string
  readonly detail: unknown
}

/** An event of one account: a contact's message, a receipt, or what we cannot use. */
export type AccountEvent = ContactMessageEvent | ReceiptEvent | WatermarkReceiptEvent | EchoEvent | UnusableEvent

/**
 * Events for another account of the provider that posts to the same webhook (Meta posts every number of an app to
 * the one callback URL the app has): they belong to the channel of that account, if the workspace has one.
 */
export interface ForAccountEvent {
  readonly _tag: "ForAccount"
  /** The provider's id of the account (WhatsApp: the phone number id). */
  readonly account: string
  readonly events: ReadonlyArray<AccountEvent>
}

export type InboundEvent = AccountEvent | ForAccountEvent

/** What a send may carry: text, files by signed link, a template, and the contact's message it answers. */
export interface OutboundFile {
  /** A signed link to the file (for a provider that fetches it). */
  readonly url: string
  /** Our storage key and its size, for a provider the file must be uploaded to. */
  readonly key: string
  readonly size: number
  readonly mimetype: string
  readonly name: string
  readonly type: string
}

export interface TemplateSend {
  readonly name: string
  readonly language: string
  readonly parameters: ReadonlyArray<string>
}

export interface OutboundMessage {
  /** Our id of the message (the reply webhook's `message_id`, stable across attempts). */
  readonly id: string
  /** The provider's thread id (the conversation's `external_chat_id`); null when the contact never wrote. */
  readonly to: string | null
  /** Who wrote it: the agent, or an operator (with their display name). */
  readonly sender: "ai" | "operator"
  readonly senderName: string | null
  /** Which attempt of the message's delivery this is (1 for the first). */
  readonly attempt: number
  readonly text: string | null
  readonly files: ReadonlyArray<OutboundFile>
  readonly template: TemplateSend | undefined
  /** The provider's id of the contact message this answers (quoted where the provider can). */
  readonly quotedId: string | undefined
  /** Parts an earlier attempt sent already (a text split in several messages): the send starts after them. */
  readonly fromPart: number
  /** The channel's `webhook_url`, for a provider told per message where to post its receipts (Twilio). */
  readonly webhookUrl: string | null
  /**
   * When the contact's latest message was sent, by the provider's clock (null: never wrote): for a provider whose
   * rules depend on it at send time (Messenger tags an operator's message outside its 24-hour window).
   */
  readonly contactSentAt: Date | null
  /**
   * The contact's latest message that may be answered (not `automated`), as stored: its provider id and structured
   * parts, for a provider whose reply names what it answers (email: the address, subject and references).
   */
  readonly contactMessage?: {
    readonly providerMessageId: string | null
    readonly attachments: ReadonlyArray<unknown>
  } | undefined
}

/**
 * Why a send failed, by meaning: `window_closed` (only a template may go), `rate_limited` and `transient`
 * (retried durably), `undeliverable` (failed with the provider's error), `auth_revoked` (the channel is
 * disconnected until its credentials are replaced), `misconfigured` (the channel's credentials lack what the call
 * needs: no call was made; the operator's to fix).
 */
export const SendFailureKinds = [
  "window_closed",
  "rate_limited",
  "undeliverable",
  "auth_revoked",
  "transient",
  "misconfigured"
] as const
export type SendFailureKind = typeof SendFailureKinds[number]

export class SendFailure extends Data.TaggedError("SendFailure")<{
  readonly kind: SendFailureKind
  readonly message: string
  readonly status: number | null
  readonly code: number | null
  /** The provider's answer, cut short, for the delivery log. */
  readonly excerpt: string | null
  /** Of a message sent in parts, how many this attempt sent before it failed, and their ids: kept, not resent. */
  readonly sent?: { readonly parts: number; readonly ids: ReadonlyArray<string> }
  /** How long the provider asked us to wait before trying again (a 429's `retry_after`): the retry waits at least that. */
  readonly retryAfterMs?: number
}> {}

/** A send the provider took: its ids (one per part when the text was split), the call's status and answer. */
export interface Sent {
  readonly providerMessageIds: ReadonlyArray<string>
  readonly status: number
  readonly excerpt: string
}

/**
 * How the channel layer delivers through a provider (docs/channels.md, "Outbound"). `handOff`: when a message
 * counts as sent to the contact. `"provider"`: once the provider took it; a refusal fails the message with the
 * provider's error. `"socket"` (the web chat): once the chat's socket has it; the send that follows (the signed
 * reply webhook, SPEC.md 6.2) is logged, and a refusal never fails the message.
 */
export interface DeliveryRules {
  readonly handOff: "provider" | "socket"
  /** Attempts in all, each wait twice the last, for a failure worth retrying (a timeout, a 5xx, a rate limit). */
  readonly attempts: number
}

/** The provider's rules, which the channel layer applies the same way for every kind. */
export interface ProviderRules {
  /** How long after the contact's latest message free-form messages may be sent; null: no window. */
  readonly serviceWindowMs: number | null
  /**
   * How long after the contact's latest message an operator may still answer, when longer than the service window
   * (Messenger's and Instagram's `HUMAN_AGENT` tag: 7 days); absent: the service window.
   */
  readonly operatorWindowMs?: number
  /** Messages a second per sending account, unless the channel sets its own; null: not paced. */
  readonly defaultRatePerSecond: number | null
  readonly delivery: DeliveryRules
  readonly maxTextChars: number
  readonly maxFileBytes: number
  /**
   * Each thread is its own conversation with the contact (email: a new subject opens a new one); absent: one
   * conversation per contact on the channel.
   */
  readonly conversationPerThread?: boolean
}

/** A request as an adapter sees it: the raw body (signatures are over its bytes), headers, query. */
export interface ProviderRequest {
  readonly method: string
  /**
   * The URL the provider called, as the channel's `webhook_url` publishes it (RECEIVER_URL's base, not the Host the
   * request came with) and with its query string: some providers sign it (Twilio).
   */
  readonly url: string
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly query: Readonly<Record<string, string | undefined>>
  readonly body: Uint8Array
}

/** The verify handshake's answer: the challenge to echo, or none when the token does not match. */
export type Handshake = Option.Option<string>

/**
 * A media file as the provider sends it: its bytes stream into storage, never held whole in memory; the stream
 * fails once it passes the size the caller allowed.
 */
export interface FetchedMedia {
  readonly mimetype: string
  readonly name: string | undefined
  readonly body: Stream.Stream<Uint8Array, SendFailure>
}

/**
 * One provider. `Credentials` is the decrypted secret part of the channel (never logged); every call takes it,
 * so one adapter serves every channel of its kind.
 */
export interface ChannelProvider<Credentials> {
  readonly kind: string
  readonly rules: ProviderRules
  readonly credentials: Schema.Schema<Credentials, any, never>
  /** GET on the webhook URL (Meta's `hub.challenge`). */
  readonly handshake: (credentials: Credentials, request: ProviderRequest) => Handshake
  /** Whether the request is the provider's (its signature over the raw body). */
  readonly verify: (credentials: Credentials, request: ProviderRequest) => boolean
  /** Every event of a verified body; a body we cannot use is an `Unusable` event, never a failure. */
  readonly parse: (credentials: Credentials, body: Uint8Array) => ReadonlyArray<InboundEvent>
  readonly send: (credentials: Credentials, message: OutboundMessage) => Effect.Effect<Sent, SendFailure>
  /** The contact's message `providerMessageId` on `thread` marked read, with typing where the provider has it. */
  readonly markRead: (
    credentials: Credentials,
    providerMessageId: string,
    thread: string
  ) => Effect.Effect<void, SendFailure>
  /**
   * The contact's name from the provider's profile, for a provider whose webhook does not carry it (Messenger,
   * Instagram): asked once, for a thread Parley has not seen; absent: the events carry it.
   */
  readonly profileName?: (credentials: Credentials, thread: string) => Effect.Effect<string | undefined, SendFailure>
  readonly fetchMedia: (
    credentials: Credentials,
    media: InboundMedia,
    maxBytes: number
    /** the download is open until the scope closes */
  ) => Effect.Effect<FetchedMedia, SendFailure, Scope.Scope>
  /** Asks the provider who the channel is (the "check connection" call); a failure says plainly what is wrong. */
  readonly check: (credentials: Credentials) => Effect.Effect<Record<string, unknown>, SendFailure>
  /** The provider's id of the channel's account (WhatsApp: the phone number id), which `ForAccount` events name. */
  readonly account: (credentials: Credentials) => string
  /** Whether a request verified with `a`'s credentials may carry `b`'s events (WhatsApp: the same Meta app). */
  readonly sharesWebhook: (a: Credentials, b: Credentials) => boolean
  /**
   * Tells the provider a contact's event was received, where it waits for that (Telegram: a button press is
   * answered, so the contact's app stops showing it loading); absent: the provider waits for nothing.
   */
  readonly acknowledge?: (credentials: Credentials, event: ContactMessageEvent) => Effect.Effect<void, SendFailure>
  /**
   * The address of a link that starts a chat with the channel carrying Parley's `token` (Telegram:
   * `https://t.me/{bot}?start={token}`), which the contact's first message brings back as `linkToken`; absent: the
   * provider has no such links.
   */
  readonly linkFor?: (credentials: Credentials, token: string) => Effect.Effect<string, SendFailure>
  /**
   * What the webhook's POST is answered with when the provider expects a body of its own (Twilio: empty TwiML);
   * absent: Parley's JSON acknowledgement.
   */
  readonly webhookAnswer?: { readonly contentType: string; readonly body: string }
  /** The approved-message templates the provider has for the account (WhatsApp); absent: the provider has none. */
  readonly templates?: (credentials: Credentials) => Effect.Effect<ReadonlyArray<ChannelTemplate>, SendFailure>
}

/** A delivery status never moves backwards: providers send receipts out of order and may skip one. */
export const receiptRank: { readonly [S in ReceiptStatus]: number } = { sent: 1, delivered: 2, read: 3, failed: 4 }

export const DeliveryStatus = Schema.Literal(...ReceiptStatuses)
