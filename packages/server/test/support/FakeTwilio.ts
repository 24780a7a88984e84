/**
 * A local stand-in for Twilio's Programmable Messaging REST API (https://www.twilio.com/docs/messaging/api; real HTTP
 * on a random port, for TWILIO_API_URL): `POST /2010-04-01/Accounts/{sid}/Messages.json` with a form body and Basic
 * auth, `GET /2010-04-01/Accounts/{sid}.json`, and media at `/2010-04-01/Accounts/{sid}/Messages/{MM}/Media/{ME}`
 * behind Basic auth that redirects to a media store refusing credentials, as Twilio's does. It checks the account
 * and the form's fields, answers with Twilio's bodies and error codes, and posts incoming messages and status
 * callbacks to a webhook with the `X-Twilio-Signature` Twilio computes (twilio-node's `getExpectedTwilioSignature`).
 */
import type { Scope } from "effect"
import { Effect } from "effect"
import { createHmac, randomBytes } from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

/** A call the fake received (media downloads too). */
export interface TwilioRequest {
  readonly method: string
  readonly path: string
  readonly form: URLSearchParams
  readonly authorization: string | undefined
  readonly at: number
}

/** A message the fake accepted. */
export interface TwilioSent {
  readonly sid: string
  readonly to: string
  readonly from: string
  readonly body: string
  readonly media: ReadonlyArray<string>
  readonly statusCallback: string | undefined
}

export interface FakeTwilioState {
  /** The account the fake accepts; set `authToken` to something else to revoke the channel's. */
  readonly accountSid: string
  authToken: string
  /** The numbers of the account (`From` must be one). */
  readonly numbers: ReadonlyArray<string>
  readonly requests: Array<TwilioRequest>
  readonly sent: Array<TwilioSent>
  /** Answers for the next message creations, in order (then the normal answer). */
  readonly failures: Array<
    { readonly status: number; readonly body: unknown; readonly headers?: Record<string, string> }
  >
  /** Media by path (`/2010-04-01/Accounts/{sid}/Messages/{MM}/Media/{ME}`). */
  readonly media: Map<string, { readonly bytes: Buffer; readonly type: string }>
  /** Message creations are taken (recorded in `requests`) and never answered, as a Twilio that hangs. */
  hang: boolean
}

/** Twilio's error body. */
export const twilioError = (status: number, code: number, message: string) => ({
  status,
  body: { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status }
})

/** A 429 as Twilio answers too many requests, with a `Retry-After`. */
export const tooManyRequests = (retryAfter: number) => ({
  ...twilioError(429, 20429, "Too Many Requests"),
  headers: { "retry-after": String(retryAfter) }
})

/** The recipient texted STOP: Twilio refuses to send until they text START. */
export const unsubscribed = () => twilioError(400, 21610, "Attempt to send to unsubscribed recipient")

/** Twilio's signature of a form posted to `url`, computed as twilio-node does. */
export const twilioSignature = (authToken: string, url: string, params: URLSearchParams) => {
  const byName = new Map<string, Array<string>>()
  for (const [k, v] of params) byName.set(k, [...(byName.get(k) ?? []), v])
  const data = [...byName.keys()].sort().reduce(
    (acc, k) => acc + [...new Set(byName.get(k))].sort().map((v) => k + v).join(""),
    new URL(url).toString()
  )
  return createHmac("sha1", authToken).update(Buffer.from(data, "utf-8")).digest("base64")
}

const sidOf = (prefix: string) => `${prefix}${randomBytes(16).toString("hex")}`
const rfc2822 = (d: Date) => d.toUTCString().replace("GMT", "+0000")
const E164 = /^(whatsapp:)?\+[1-9]\d{6,14}$/

export const makeFakeTwilio = (
  options: { readonly from?: string } = {}
): Effect.Effect<FakeTwilio, never, Scope.Scope> =>
  Effect.gen(function*() {
    const state: FakeTwilioState = {
      accountSid: sidOf("AC"),
      authToken: randomBytes(16).toString("hex"),
      numbers: [options.from ?? "+15005550006", "whatsapp:+14155238886"],
      requests: [],
      sent: [],
      failures: [],
      hang: false,
      media: new Map()
    }
    let url = ""
    const basic = () => `Basic ${Buffer.from(`${state.accountSid}:${state.authToken}`).toString("base64")}`
    const authenticate = {
      ...twilioError(401, 20003, "Authenticate"),
      body: { ...twilioError(401, 20003, "Authenticate").body, detail: "Your AccountSid or AuthToken was incorrect." }
    }
    const account = `/2010-04-01/Accounts/${state.accountSid}`

    const createMessage = (form: URLSearchParams) => {
      const to = form.get("To") ?? ""
      const from = form.get("From") ?? ""
      if (to === "") return twilioError(400, 21604, "A 'To' phone number is required.")
      if (!E164.test(to)) return twilioError(400, 21211, `Invalid 'To' Phone Number: ${to}`)
      if (!state.numbers.includes(from)) {
        return twilioError(
          400,
          21606,
          `The From phone number ${from} is not a valid, SMS-capable inbound phone number or short code for your account.`
        )
      }
      if (to.startsWith("whatsapp:") !== from.startsWith("whatsapp:")) {
        return twilioError(400, 63007, "Twilio could not find a Channel with the specified From address")
      }
      const body = form.get("Body") ?? ""
      const media = form.getAll("MediaUrl")
      if (body === "" && media.length === 0) return twilioError(400, 21602, "Message body is required.")
      if (body.length > 1600) {
        return twilioError(400, 21617, "The concatenated message body exceeds the 1600 character limit.")
      }
      if (media.length > 10) {
        return twilioError(400, 21623, "Number of media files exceeds allowed limit.")
      }
      const scripted = state.failures.shift()
      if (scripted !== undefined) return scripted
      const sid = sidOf(media.length > 0 ? "MM" : "SM")
      const callback = form.get("StatusCallback") ?? undefined
      state.sent.push({ sid, to, from, body, media, statusCallback: callback })
      const now = rfc2822(new Date())
      return {
        status: 201,
        body: {
          account_sid: state.accountSid,
          api_version: "2010-04-01",
          body,
          date_created: now,
          date_sent: null,
          date_updated: now,
          direction: "outbound-api",
          error_code: null,
          error_message: null,
          from,
          messaging_service_sid: null,
          num_media: String(media.length),
          num_segments: String(Math.max(1, Math.ceil(body.length / 153))),
          price: null,
          price_unit: "USD",
          sid,
          status: "queued",
          subresource_uris: { media: `${account}/Messages/${sid}/Media.json` },
          to,
          uri: `${account}/Messages/${sid}.json`
        }
      }
    }

    const handle = (req: Http.IncomingMessage, raw: string) => {
      const path = (req.url ?? "").split("?")[0]!
      const form = new URLSearchParams(
        req.headers["content-type"]?.startsWith("application/x-www-form-urlencoded") ? raw : ""
      )
      state.requests.push({
        method: req.method ?? "",
        path,
        form,
        authorization: req.headers.authorization,
        at: Date.now()
      })
      // the media store behind Twilio's redirect: a signed link that takes no other credentials, as S3's
      if (path.startsWith("/media-store/")) {
        if (req.headers.authorization !== undefined) {
          return {
            status: 400,
            body: "<Error><Code>InvalidArgument</Code><Message>Only one auth mechanism allowed</Message></Error>",
            type: "application/xml"
          }
        }
        const file = state.media.get(path.slice("/media-store".length))
        return file === undefined ? { status: 404, body: "" } : { status: 200, body: file.bytes, type: file.type }
      }
      if (req.headers.authorization !== basic()) return authenticate
      if (req.method === "GET" && path === `${account}.json`) {
        return {
          status: 200,
          body: {
            auth_token: state.authToken,
            date_created: rfc2822(new Date(0)),
            friendly_name: "Parley tests",
            owner_account_sid: state.accountSid,
            sid: state.accountSid,
            status: "active",
            type: "Full",
            uri: `${account}.json`
          }
        }
      }
      if (req.method === "POST" && path === `${account}/Messages.json`) {
        if (!req.headers["content-type"]?.startsWith("application/x-www-form-urlencoded")) {
          return twilioError(400, 20001, "Content-Type must be application/x-www-form-urlencoded")
        }
        return createMessage(form)
      }
      if (req.method === "GET" && state.media.has(path)) {
        return { status: 307, body: "", location: `${url}/media-store${path}?Expires=1&Signature=fake` }
      }
      return twilioError(404, 20404, `The requested resource ${path} was not found`)
    }

    const server = yield* Effect.acquireRelease(
      Effect.async<Http.Server>((resume) => {
        const s = Http.createServer((req, res) => {
          const chunks: Array<Buffer> = []
          req.on("data", (c: Buffer) => chunks.push(c))
          req.on("end", () => {
            const raw = Buffer.concat(chunks).toString("utf8")
            if (state.hang && req.method === "POST" && (req.url ?? "").endsWith("/Messages.json")) {
              state.requests.push({
                method: "POST",
                path: (req.url ?? "").split("?")[0]!,
                form: new URLSearchParams(raw),
                authorization: req.headers.authorization,
                at: Date.now()
              })
              return
            }
            const answer = handle(req, raw) as {
              status: number
              body: unknown
              type?: string
              location?: string
              headers?: Record<string, string>
            }
            const bytes = Buffer.isBuffer(answer.body)
              ? answer.body
              : Buffer.from(typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body))
            res.writeHead(answer.status, {
              "content-type": answer.type ?? "application/json",
              "content-length": String(bytes.length),
              ...(answer.location === undefined ? {} : { location: answer.location }),
              ...answer.headers
            })
            res.end(bytes)
          })
        })
        s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
      }),
      (s) => Effect.async<void>((resume) => void s.close(() => resume(Effect.void)))
    )
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

    /**
     * Posts a form to the webhook, signed with `token` (the account's unless given; null: no signature) over
     * `signed` (the form itself unless given: a body changed on the way).
     */
    const post = async (
      webhook: string,
      params: Record<string, string>,
      token?: string | null,
      signed?: Record<string, string>
    ) => {
      const form = new URLSearchParams(params)
      const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" }
      if (token !== null) {
        headers["x-twilio-signature"] = twilioSignature(
          token ?? state.authToken,
          webhook,
          new URLSearchParams(signed ?? params)
        )
      }
      const response = await fetch(webhook, { method: "POST", headers, body: form.toString() })
      return { status: response.status, type: response.headers.get("content-type"), body: await response.text() }
    }

    /** An incoming message's parameters as Twilio posts them: text, and media stored at the fake. */
    const message = (
      from: string,
      content: {
        readonly body?: string
        readonly media?: ReadonlyArray<{ readonly bytes: Buffer; readonly type: string }>
        readonly extra?: Record<string, string>
      }
    ) => {
      const sid = sidOf((content.media?.length ?? 0) > 0 ? "MM" : "SM")
      const params: Record<string, string> = {
        ToCountry: "US",
        ToState: "CA",
        SmsMessageSid: sid,
        NumMedia: String(content.media?.length ?? 0),
        ToCity: "",
        FromZip: "",
        SmsSid: sid,
        FromState: "",
        SmsStatus: "received",
        FromCity: "",
        Body: content.body ?? "",
        FromCountry: "US",
        To: from.startsWith("whatsapp:") ? state.numbers[1]! : state.numbers[0]!,
        ToZip: "",
        NumSegments: "1",
        MessageSid: sid,
        AccountSid: state.accountSid,
        From: from,
        ApiVersion: "2010-04-01",
        ...content.extra
      }
      for (const [i, m] of (content.media ?? []).entries()) {
        const path = `${account}/Messages/${sid}/Media/${sidOf("ME")}`
        state.media.set(path, m)
        params[`MediaUrl${i}`] = `${url}${path}`
        params[`MediaContentType${i}`] = m.type
      }
      return params
    }

    /** A status callback for a message the fake accepted, posted to its `StatusCallback` as Twilio does. */
    const status = (sent: TwilioSent, messageStatus: string, extra: Record<string, string> = {}) =>
      post(sent.statusCallback!, {
        SmsSid: sent.sid,
        SmsStatus: messageStatus,
        MessageStatus: messageStatus,
        To: sent.to,
        MessageSid: sent.sid,
        AccountSid: state.accountSid,
        From: sent.from,
        ApiVersion: "2010-04-01",
        ...extra
      })

    return { url, state, post, message, status } satisfies FakeTwilio
  })

export interface FakeTwilio {
  readonly url: string
  readonly state: FakeTwilioState
  readonly post: (
    webhook: string,
    params: Record<string, string>,
    token?: string | null,
    signed?: Record<string, string>
  ) => Promise<{ status: number; type: string | null; body: string }>
  readonly message: (
    from: string,
    content: {
      readonly body?: string
      readonly media?: ReadonlyArray<{ readonly bytes: Buffer; readonly type: string }>
      readonly extra?: Record<string, string>
    }
  ) => Record<string, string>
  readonly status: (
    sent: TwilioSent,
    messageStatus: string,
    extra?: Record<string, string>
  ) => Promise<{ status: number; type: string | null; body: string }>
}
