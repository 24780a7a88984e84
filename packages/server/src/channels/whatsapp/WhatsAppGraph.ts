/**
 * The WhatsApp Cloud API calls Parley makes (docs/channels.md, "WhatsApp"): messages, read receipts with the
 * typing indicator, media downloads and the phone number's details, at `{META_GRAPH_API_URL}/{api_version}/...`
 * with the channel's bearer token. Meta's error codes are read by meaning (`SendFailure`).
 */
import { HttpClientRequest } from "@effect/platform"
import {
  ChannelTemplate,
  type InboundMedia,
  type OutboundMessage,
  SendFailure,
  templateParameterCount
} from "@parley/domain"
import { Effect } from "effect"
import { download, tooLarge } from "../MediaDownload.js"
import { GRAPH_TIMEOUT, graphUnreachable, makeGraphCall } from "../meta/GraphHttp.js"
import { mediaKind, sendInParts, splitText } from "../TextParts.js"

export interface GraphCredentials {
  readonly phone_number_id: string
  readonly access_token: string
  readonly api_version: string
}

/** WhatsApp's limit on one text message. */
export const MAX_TEXT_CHARS = 4096
/** WhatsApp's limit on a media message's caption. */
const MAX_CAPTION_CHARS = 1024

/** Codes Meta documents for the Cloud API, by what Parley does about them. */
const WINDOW_CLOSED = new Set([131047])
const RATE_LIMITED = new Set([4, 80007, 130429, 131056])
const AUTH_REVOKED = new Set([190, 0, 10, 200])
const TRANSIENT = new Set([1, 2, 131000, 131016])

/** Meta's error body `{error: {message, type, code, error_data: {details}, fbtrace_id}}` as a `SendFailure`. */
export const failureOf = (status: number, body: string): SendFailure => {
  let code: number | null = null
  let message = `HTTP ${status}`
  try {
    const error = (JSON.parse(body) as { error?: { code?: unknown; message?: unknown; error_data?: unknown } }).error
    if (typeof error?.code === "number") code = error.code
    const details = (error?.error_data as { details?: unknown } | undefined)?.details
    if (typeof error?.message === "string") {
      message = `${error.message}${typeof details === "string" && details !== "" ? `: ${details}` : ""}`
    }
  } catch {
    // not Meta's JSON: the status decides
  }
  const kind = code !== null && WINDOW_CLOSED.has(code)
    ? "window_closed"
    : (code !== null && RATE_LIMITED.has(code)) || status === 429
    ? "rate_limited"
    : (code !== null && AUTH_REVOKED.has(code)) || status === 401
    ? "auth_revoked"
    : (code !== null && TRANSIENT.has(code)) || status >= 500
    ? "transient"
    : "undeliverable"
  const text = code === null || message.startsWith(`(#${code})`) ? message : `(#${code}) ${message}`
  return new SendFailure({ kind, message: text, status, code, excerpt: body.slice(0, 1000) })
}

const mediaType = (type: string, mimetype: string) => {
  const kind = mediaKind(type, mimetype)
  return kind === "other" ? "document" : kind
}

export const makeGraph = Effect.gen(function*() {
  const { call, client } = yield* makeGraphCall(failureOf)

  const url = (base: string, c: GraphCredentials, path: string) => `${base}/${c.api_version}/${path}`

  const post = (base: string, c: GraphCredentials, payload: Record<string, unknown>) =>
    call(
      HttpClientRequest.post(url(base, c, `${c.phone_number_id}/messages`)).pipe(
        HttpClientRequest.bodyUnsafeJson({ messaging_product: "whatsapp", ...payload })
      ),
      c.access_token
    )

  const messageId = (body: string) => {
    try {
      const id = (JSON.parse(body) as { messages?: Array<{ id?: unknown }> }).messages?.[0]?.id
      return typeof id === "string" ? id : undefined
    } catch {
      return undefined
    }
  }

  /** Each part as its own message (text split at 4,096 characters, files by signed link, or one template). */
  const send = (base: string, c: GraphCredentials, m: OutboundMessage) =>
    Effect.gen(function*() {
      if (m.to === null) {
        return yield* new SendFailure({
          kind: "undeliverable",
          message: "The conversation has no thread at the provider.",
          status: null,
          code: null,
          excerpt: null
        })
      }
      const target = { recipient_type: "individual", to: m.to }
      const payloads: Array<Record<string, unknown>> = []
      if (m.template !== undefined) {
        const parameters = m.template.parameters.map((text) => ({ type: "text", text }))
        payloads.push({
          type: "template",
          template: {
            name: m.template.name,
            language: { code: m.template.language },
            ...(parameters.length > 0 ? { components: [{ type: "body", parameters }] } : {})
          }
        })
      } else {
        const types = m.files.map((f) => mediaType(f.type, f.mimetype))
        // a short text goes as the caption of the first file, when that file can carry one: one message, as people send
        const caption = m.text !== null && m.text !== "" && m.text.length <= MAX_CAPTION_CHARS &&
            types[0] !== undefined && types[0] !== "audio"
          ? m.text
          : undefined
        const texts = m.text === null || m.text === "" || caption !== undefined ? [] : splitText(m.text, MAX_TEXT_CHARS)
        for (const body of texts) payloads.push({ type: "text", text: { body, preview_url: false } })
        for (const [i, f] of m.files.entries()) {
          const type = types[i]!
          payloads.push({
            type,
            [type]: {
              link: f.url,
              ...(type === "document" ? { filename: f.name } : {}),
              ...(i === 0 && caption !== undefined ? { caption } : {})
            }
          })
        }
      }
      return yield* sendInParts(payloads, m.fromPart, (payload, i) => {
        const context = i === 0 && m.quotedId !== undefined ? { context: { message_id: m.quotedId } } : {}
        return Effect.map(
          post(base, c, { ...target, ...context, ...payload }),
          (r) => ({ status: r.status, body: r.body, id: messageId(r.body) })
        )
      })
    })

  /** Blue ticks on the contact's message, and "typing…" until the reply or 25 seconds. */
  const markRead = (base: string, c: GraphCredentials, providerMessageId: string) =>
    post(base, c, { status: "read", message_id: providerMessageId, typing_indicator: { type: "text" } }).pipe(
      Effect.asVoid
    )

  /** `GET /{media_id}` for the media's URL, then that URL with the same token, within `maxBytes`. */
  const fetchMedia = (base: string, c: GraphCredentials, media: InboundMedia, maxBytes: number) =>
    Effect.gen(function*() {
      const meta = yield* call(HttpClientRequest.get(url(base, c, media.providerId)), c.access_token)
      const info = JSON.parse(meta.body) as { url?: unknown; mime_type?: unknown; file_size?: unknown }
      if (typeof info.url !== "string") {
        return yield* new SendFailure({
          kind: "undeliverable",
          message: "The media has no URL.",
          status: meta.status,
          code: null,
          excerpt: meta.body.slice(0, 1000)
        })
      }
      if (typeof info.file_size === "number" && info.file_size > maxBytes) {
        return yield* tooLarge(info.file_size, maxBytes)
      }
      return yield* download(client, HttpClientRequest.bearerToken(HttpClientRequest.get(info.url), c.access_token), {
        maxBytes,
        timeout: GRAPH_TIMEOUT,
        unreachable: graphUnreachable,
        refused: failureOf,
        mimetype: () =>
          typeof info.mime_type === "string" ? info.mime_type : media.mimetype ?? "application/octet-stream",
        name: media.name
      })
    })

  /** The phone number's own record: who the channel is, or what is wrong. */
  const check = (base: string, c: GraphCredentials) =>
    call(
      HttpClientRequest.get(url(base, c, c.phone_number_id)).pipe(
        HttpClientRequest.setUrlParam("fields", "display_phone_number,verified_name,quality_rating")
      ),
      c.access_token
    ).pipe(Effect.map((r) => JSON.parse(r.body) as Record<string, unknown>))

  /**
   * The business account's message templates (`GET /{business_account_id}/message_templates`), every page up to
   * `MAX_TEMPLATE_PAGES`: name, language, status, category and the body's text with its `{{n}}` placeholders.
   */
  const templates = (base: string, c: GraphCredentials & { readonly business_account_id?: string | undefined }) =>
    Effect.gen(function*() {
      if (c.business_account_id === undefined) {
        return yield* new SendFailure({
          kind: "misconfigured",
          message:
            "The channel has no business_account_id: add it to the credentials (PUT) to list the account's templates.",
          status: null,
          code: null,
          excerpt: null
        })
      }
      const out: Array<ChannelTemplate> = []
      let next: string | undefined = url(base, c, `${c.business_account_id}/message_templates`) +
        "?fields=name,language,status,category,components&limit=100"
      for (let page = 0; next !== undefined && page < MAX_TEMPLATE_PAGES; page++) {
        const r = yield* call(HttpClientRequest.get(next), c.access_token)
        const body = JSON.parse(r.body) as { data?: Array<GraphTemplate>; paging?: { next?: unknown } }
        for (const t of body.data ?? []) {
          const text = t.components?.find((p) => p.type === "BODY")?.text
          const bodyText = typeof text === "string" ? text : null
          out.push(
            new ChannelTemplate({
              name: String(t.name),
              language: String(t.language),
              status: String(t.status ?? "UNKNOWN"),
              category: typeof t.category === "string" ? t.category : null,
              body: bodyText,
              parameters: templateParameterCount(bodyText)
            })
          )
        }
        // Meta's `next` link carries the access token in its query string: sent as the bearer header instead, so the
        // URL a client span records (url.full, url.query) holds no token
        next = typeof body.paging?.next === "string" ? withoutToken(body.paging.next) : undefined
      }
      return out
    })

  return { send, markRead, fetchMedia, check, templates }
})

const withoutToken = (link: string) => {
  const url = new URL(link)
  url.searchParams.delete("access_token")
  return url.toString()
}

/** At most this many pages of 100 templates are read (Meta allows 250 templates per account by default). */
const MAX_TEMPLATE_PAGES = 10

interface GraphTemplate {
  readonly name?: unknown
  readonly language?: unknown
  readonly status?: unknown
  readonly category?: unknown
  readonly components?: ReadonlyArray<{ readonly type?: unknown; readonly text?: unknown }>
}
