/**
 * The Twilio REST calls Parley makes for an SMS channel (docs/channels.md, "SMS (Twilio)"), at
 * `{TWILIO_API_URL}/2010-04-01/Accounts/{sid}/...` with HTTP Basic auth (account SID and auth token): messages with
 * media by link, media downloads, and the account's own record. Client spans record the URL (the SID, no secret)
 * and headers with `authorization` redacted (@effect/platform's default). Twilio's error codes are read by meaning.
 */
import { HttpClient, HttpClientRequest, type HttpClientResponse, UrlParams } from "@effect/platform"
import { type InboundMedia, type OutboundMessage, SendFailure } from "@parley/domain"
import { Duration, Effect } from "effect"
import { bounded } from "../MediaDownload.js"
import { sendInParts, splitText } from "../TextParts.js"

export interface TwilioAccount {
  readonly account_sid: string
  readonly auth_token: string
  /** A number (`+14155550100`), a WhatsApp sender (`whatsapp:+14155550100`) or a Messaging Service (`MG...`). */
  readonly from_number: string
}

/** Twilio's limit on a message's `Body`: longer texts are split; within it Twilio segments the SMS itself. */
export const MAX_BODY_CHARS = 1600
/** Twilio takes at most ten `MediaUrl` a message. */
const MAX_MEDIA = 10
const TIMEOUT = Duration.seconds(20)
const API = "2010-04-01"

/** Codes Twilio documents, by what Parley does about them (https://www.twilio.com/docs/api/errors). */
const RATE_LIMITED = new Set([20429, 14107])
const AUTH_REVOKED = new Set([20003, 20005])
/** 63016: a WhatsApp sender outside the contact's 24-hour window (only a template may go). */
const WINDOW_CLOSED = new Set([63016])

/** A `Retry-After` header in seconds, at most a day. */
const retryAfterOf = (header: string | undefined) => {
  const seconds = Number(header)
  return header !== undefined && Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, 86_400) * 1000 : undefined
}

/** Twilio's error body `{code, message, more_info, status}` as a `SendFailure`. */
export const failureOf = (status: number, body: string, retryAfter?: string): SendFailure => {
  let code: number | null = null
  let message = `HTTP ${status}`
  try {
    const parsed = JSON.parse(body) as { code?: unknown; message?: unknown }
    if (typeof parsed.code === "number") code = parsed.code
    if (typeof parsed.message === "string") message = parsed.message
  } catch {
    // not Twilio's JSON: the status decides
  }
  const kind = (code !== null && WINDOW_CLOSED.has(code))
    ? "window_closed"
    : (code !== null && RATE_LIMITED.has(code)) || status === 429
    ? "rate_limited"
    : (code !== null && AUTH_REVOKED.has(code)) || status === 401
    ? "auth_revoked"
    : status >= 500
    ? "transient"
    : "undeliverable"
  const wait = kind === "rate_limited" ? retryAfterOf(retryAfter) : undefined
  return new SendFailure({
    kind,
    message: code === null ? message : `${message} (Twilio error ${code})`,
    status,
    code,
    excerpt: body.slice(0, 1000),
    ...(wait === undefined ? {} : { retryAfterMs: wait })
  })
}

const unreachable = (cause: unknown) =>
  new SendFailure({
    kind: "transient",
    message: `Twilio could not be reached: ${cause instanceof Error ? cause.message : String(cause)}`,
    status: null,
    code: null,
    excerpt: null
  })

const undeliverable = (message: string) =>
  new SendFailure({ kind: "undeliverable", message, status: null, code: null, excerpt: null })

export const makeTwilioApi = Effect.gen(function*() {
  const client = (yield* HttpClient.HttpClient).pipe(HttpClient.withTracerPropagation(false))

  const call = (request: HttpClientRequest.HttpClientRequest, c: TwilioAccount) =>
    client.execute(HttpClientRequest.basicAuth(request, c.account_sid, c.auth_token)).pipe(
      Effect.flatMap((response) =>
        Effect.map(
          response.text,
          (body) => ({ status: response.status, body, retryAfter: response.headers["retry-after"] })
        )
      ),
      Effect.timeout(TIMEOUT),
      Effect.mapError(unreachable),
      Effect.flatMap((r) =>
        r.status >= 200 && r.status < 300
          ? Effect.succeed(r)
          : Effect.fail(failureOf(r.status, r.body, r.retryAfter))
      ),
      Effect.scoped
    )

  const account = (base: string, c: TwilioAccount) => `${base}/${API}/Accounts/${encodeURIComponent(c.account_sid)}`

  const sidOf = (body: string) => {
    try {
      const sid = (JSON.parse(body) as { sid?: unknown }).sid
      return typeof sid === "string" ? sid : undefined
    } catch {
      return undefined
    }
  }

  /**
   * One Twilio message a part: the text split beyond Twilio's 1,600 characters, the first part with up to ten files
   * by signed link (`MediaUrl`), further files ten a message. Each asks for its status callbacks at the channel's
   * webhook. Parts an earlier attempt sent are not sent again; a failure says how many of this attempt's went out.
   */
  const send = (base: string, c: TwilioAccount, m: OutboundMessage) =>
    Effect.gen(function*() {
      if (m.to === null) return yield* undeliverable("The conversation has no phone number to text.")
      const texts = m.text === null || m.text === "" ? [] : splitText(m.text, MAX_BODY_CHARS)
      const urls = m.files.map((f) => f.url)
      const parts: Array<{ readonly body: string | undefined; readonly media: ReadonlyArray<string> }> = []
      for (const [i, body] of texts.entries()) parts.push({ body, media: i === 0 ? urls.slice(0, MAX_MEDIA) : [] })
      for (let i = texts.length === 0 ? 0 : MAX_MEDIA; i < urls.length; i += MAX_MEDIA) {
        parts.push({ body: undefined, media: urls.slice(i, i + MAX_MEDIA) })
      }
      if (parts.length === 0) return yield* undeliverable("The message has neither text nor files.")
      const from: Array<[string, string]> = c.from_number.startsWith("MG")
        ? [["MessagingServiceSid", c.from_number]]
        : [["From", c.from_number]]
      return yield* sendInParts(parts, m.fromPart, (part) => {
        const params: Array<[string, string]> = [
          ["To", m.to!],
          ...from,
          ...(part.body === undefined ? [] : [["Body", part.body] as [string, string]]),
          ...part.media.map((url): [string, string] => ["MediaUrl", url]),
          ...(m.webhookUrl === null ? [] : [["StatusCallback", m.webhookUrl] as [string, string]])
        ]
        return call(
          HttpClientRequest.post(`${account(base, c)}/Messages.json`).pipe(
            HttpClientRequest.bodyUrlParams(UrlParams.fromInput(params))
          ),
          c
        ).pipe(Effect.map((r) => ({ status: r.status, body: r.body, id: sidOf(r.body) })))
      })
    })

  /**
   * A contact's media at its Twilio URL: with the account's Basic auth when it is on Twilio's own host, then its
   * redirect (a signed link to Twilio's media store, which refuses other credentials) followed without them, within
   * `maxBytes`, streamed.
   */
  const fetchMedia = (base: string, c: TwilioAccount, media: InboundMedia, maxBytes: number) =>
    Effect.gen(function*() {
      const twilio = new URL(base).origin
      let url = media.providerId
      let response: HttpClientResponse.HttpClientResponse | undefined
      for (let hop = 0; hop < 5; hop++) {
        const target = new URL(url, twilio)
        if (target.protocol !== "https:" && target.protocol !== "http:") {
          return yield* undeliverable("The media's URL is not http(s).")
        }
        const request = HttpClientRequest.get(target.toString())
        response = yield* HttpClient.withScope(client).execute(
          hop === 0 && target.origin === twilio
            ? HttpClientRequest.basicAuth(request, c.account_sid, c.auth_token)
            : request
        ).pipe(Effect.timeout(TIMEOUT), Effect.mapError(unreachable))
        const location = response.headers["location"]
        if (response.status < 300 || response.status >= 400 || location === undefined) break
        url = new URL(location, target).toString()
      }
      if (response === undefined) return yield* undeliverable("The media's URL redirects too often.")
      return yield* bounded(response, {
        maxBytes,
        timeout: TIMEOUT,
        unreachable,
        refused: (status, body) => failureOf(status, body),
        mimetype: (r) => media.mimetype ?? r.headers["content-type"]?.split(";")[0] ?? "application/octet-stream",
        name: media.name
      })
    })

  /**
   * The account's own record (`GET /Accounts/{sid}.json`): who the channel is, or what is wrong. Twilio's answer
   * holds the auth token, so only the account's sid, name, status and type are kept.
   */
  const check = (base: string, c: TwilioAccount) =>
    call(HttpClientRequest.get(`${account(base, c)}.json`), c).pipe(
      Effect.map((r) => {
        const a = JSON.parse(r.body) as Record<string, unknown>
        return { sid: a.sid, friendly_name: a.friendly_name, status: a.status, type: a.type, from: c.from_number }
      }),
      Effect.mapError((failure) =>
        failure.kind === "auth_revoked"
          ? new SendFailure({
            kind: failure.kind,
            message: `Twilio refused the account SID and auth token: ${failure.message}`,
            status: failure.status,
            code: failure.code,
            excerpt: failure.excerpt
          })
          : failure
      )
    )

  return { send, fetchMedia, check }
})
