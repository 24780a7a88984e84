/**
 * The Messenger Platform calls Parley makes for a Facebook page or an Instagram account (docs/channels.md,
 * "Messenger and Instagram"): the Send API (`POST {META_GRAPH_API_URL}/{api_version}/{account}/messages`) for text,
 * files by link and sender actions, the contact's profile, the account's own record, and attachment downloads.
 * Meta's error codes are read by meaning (`SendFailure`); the token goes as a bearer header, never in a URL.
 */
import { HttpClientRequest } from "@effect/platform"
import { type InboundMedia, type OutboundMessage, SendFailure } from "@parley/domain"
import { Effect } from "effect"
import { download } from "../MediaDownload.js"
import { mediaKind, sendInParts, splitText } from "../TextParts.js"
import { GRAPH_TIMEOUT, graphUnreachable, makeGraphCall } from "./GraphHttp.js"
import { OWN_METADATA_PREFIX } from "./MessagingEvents.js"

export interface SendAccount {
  readonly kind: "messenger" | "instagram"
  /** The page id (Messenger) or the Instagram account id. */
  readonly account: string
  readonly token: string
  readonly api_version: string
}

const DAY = 24 * 3_600_000
/** Meta's standard messaging window, and the HUMAN_AGENT tag's for a person answering (7 days). */
export const WINDOW_MS = DAY
export const HUMAN_AGENT_WINDOW_MS = 7 * DAY

/** Meta's limit on one text: 2,000 characters on Messenger, 1,000 on Instagram. */
export const maxTextChars = (kind: SendAccount["kind"]) => kind === "messenger" ? 2000 : 1000

/** Codes and subcodes the Messenger Platform documents, by what Parley does about them. */
const WINDOW_SUBCODES = new Set([2018278, 2018065, 2534022])
const RATE_LIMITED = new Set([4, 17, 32, 613])
const TRANSIENT = new Set([1, 2])

/** Meta's error body `{error: {message, type, code, error_subcode, fbtrace_id}}` as a `SendFailure`. */
export const failureOf = (status: number, body: string): SendFailure => {
  let code: number | null = null
  let subcode: number | null = null
  let message = `HTTP ${status}`
  try {
    const error = (JSON.parse(body) as { error?: { code?: unknown; error_subcode?: unknown; message?: unknown } })
      .error
    if (typeof error?.code === "number") code = error.code
    if (typeof error?.error_subcode === "number") subcode = error.error_subcode
    if (typeof error?.message === "string") message = error.message
  } catch {
    // not Meta's JSON: the status decides
  }
  const kind = subcode !== null && WINDOW_SUBCODES.has(subcode)
    ? "window_closed"
    : (code !== null && RATE_LIMITED.has(code)) || status === 429
    ? "rate_limited"
    : code === 190 || status === 401
    ? "auth_revoked"
    : (code !== null && TRANSIENT.has(code)) || status >= 500
    ? "transient"
    : "undeliverable"
  const text = code === null || message.startsWith(`(#${code})`) ? message : `(#${code}) ${message}`
  return new SendFailure({ kind, message: text, status, code, excerpt: body.slice(0, 1000) })
}

const refuse = (kind: SendFailure["kind"], message: string) =>
  new SendFailure({ kind, message, status: null, code: null, excerpt: null })

const attachmentType = (type: string, mimetype: string) => {
  const kind = mediaKind(type, mimetype)
  return kind === "other" ? "file" : kind
}

/**
 * How the message may go now: inside the 24-hour window as a response; after it, an operator's message within 7
 * days with the HUMAN_AGENT tag; else not at all (no call is made).
 */
export const messagingType = (m: OutboundMessage, now: number) => {
  const since = m.contactSentAt === null ? Infinity : now - m.contactSentAt.getTime()
  if (since <= WINDOW_MS) return { messaging_type: "RESPONSE" }
  if (m.sender === "operator" && since <= HUMAN_AGENT_WINDOW_MS) {
    return { messaging_type: "MESSAGE_TAG", tag: "HUMAN_AGENT" }
  }
  return undefined
}

export const makeSendApi = Effect.gen(function*() {
  const { call, client } = yield* makeGraphCall(failureOf)

  const url = (base: string, a: SendAccount, path: string) => `${base}/${a.api_version}/${path}`

  const post = (base: string, a: SendAccount, payload: Record<string, unknown>) =>
    call(
      HttpClientRequest.post(url(base, a, `${a.account}/messages`)).pipe(HttpClientRequest.bodyUnsafeJson(payload)),
      a.token
    )

  const messageId = (body: string) => {
    try {
      const id = (JSON.parse(body) as { message_id?: unknown }).message_id
      return typeof id === "string" ? id : undefined
    } catch {
      return undefined
    }
  }

  /** The text (split at Meta's limit) and then each file by signed link, each its own message. */
  const send = (base: string, a: SendAccount, m: OutboundMessage) =>
    Effect.gen(function*() {
      if (m.to === null) return yield* refuse("undeliverable", "The conversation has no thread at the provider.")
      const type = messagingType(m, Date.now())
      if (type === undefined) {
        return yield* refuse(
          "window_closed",
          m.sender === "operator"
            ? "The contact's latest message is over 7 days old: Meta allows no message until the contact writes again."
            : "The contact's latest message is over 24 hours old: only a person may answer (HUMAN_AGENT), within 7 days."
        )
      }
      // Messenger sends back what the page sent, with this metadata: the echo of Parley's own message is known
      const metadata = a.kind === "messenger" ? { metadata: `${OWN_METADATA_PREFIX}${m.id}` } : {}
      const texts = m.text === null || m.text === "" ? [] : splitText(m.text, maxTextChars(a.kind))
      const messages: Array<Record<string, unknown>> = [
        ...texts.map((text) => ({ text, ...metadata })),
        ...m.files.map((f) => ({
          attachment: { type: attachmentType(f.type, f.mimetype), payload: { url: f.url, is_reusable: false } },
          ...metadata
        }))
      ]
      return yield* sendInParts(messages, m.fromPart, (message) =>
        Effect.map(
          post(base, a, { recipient: { id: m.to }, ...type, message }),
          (r) => ({ status: r.status, body: r.body, id: messageId(r.body) })
        ))
    })

  /** The contact's message seen, and the page typing until the reply (or 20 seconds). */
  const markRead = (base: string, a: SendAccount, thread: string) =>
    Effect.gen(function*() {
      if (a.kind === "messenger") yield* post(base, a, { recipient: { id: thread }, sender_action: "mark_seen" })
      yield* post(base, a, { recipient: { id: thread }, sender_action: "typing_on" })
    })

  /** The contact's name: Messenger's `first_name last_name`, Instagram's `name` or `username`. */
  const profileName = (base: string, a: SendAccount, thread: string) =>
    call(
      HttpClientRequest.get(url(base, a, thread)).pipe(
        HttpClientRequest.setUrlParam("fields", a.kind === "messenger" ? "first_name,last_name" : "name,username")
      ),
      a.token
    ).pipe(Effect.map((r) => {
      const p = JSON.parse(r.body) as Record<string, unknown>
      const text = (v: unknown) => typeof v === "string" && v !== "" ? v : undefined
      const full = [text(p.first_name), text(p.last_name)].filter((s) => s !== undefined).join(" ")
      return full !== "" ? full : text(p.name) ?? text(p.username)
    }))

  /** The page's or account's own record: who the channel is, or what is wrong. */
  const check = (base: string, a: SendAccount) =>
    call(
      HttpClientRequest.get(url(base, a, a.account)).pipe(
        HttpClientRequest.setUrlParam("fields", a.kind === "messenger" ? "id,name" : "id,username,name")
      ),
      a.token
    ).pipe(Effect.map((r) => JSON.parse(r.body) as Record<string, unknown>))

  /** An attachment by the link Meta's webhook gave (a signed CDN URL): the token is not sent with it. */
  const fetchMedia = (media: InboundMedia, maxBytes: number) =>
    download(client, HttpClientRequest.get(media.providerId), {
      maxBytes,
      timeout: GRAPH_TIMEOUT,
      unreachable: graphUnreachable,
      refused: failureOf,
      mimetype: (response) => response.headers["content-type"]?.split(";")[0] ?? "application/octet-stream",
      name: media.name
    })

  return { send, markRead, profileName, check, fetchMedia }
})
