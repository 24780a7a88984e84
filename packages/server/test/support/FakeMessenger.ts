/**
 * A local stand-in for Meta's Messenger Platform as it documents the Send API for a Facebook page or an Instagram
 * account (real HTTP on a random port, for META_GRAPH_API_URL): it checks the bearer token and the request shapes
 * (recipient, messaging_type, the HUMAN_AGENT tag, text length, attachments by URL), keeps the 24-hour window and the
 * tag's 7 days by its own clock, answers with Meta's bodies and error codes, serves profiles and attachments by
 * signed CDN links, and signs the webhooks it makes: each message it accepts is echoed to the page's webhook, as Meta
 * does.
 */
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { hubSignature } from "./FakeGraph.js"

export const API_VERSION = "v23.0"
const DAY = 24 * 3_600_000

export interface MessengerRequest {
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly body: any
  readonly token: string | undefined
  readonly at: number
}

export interface FakeMessengerState {
  readonly object: "page" | "instagram"
  readonly account: string
  token: string
  readonly appSecret: string
  /** Where the fake posts its echoes (the channel's webhook_url), once the test knows it. */
  webhookUrl: string | undefined
  /** The page may send HUMAN_AGENT messages (Meta grants it on review). */
  humanAgent: boolean
  /** Message sends are taken (recorded in `requests`) and never answered, as a Send API that hangs. */
  hang: boolean
  readonly requests: Array<MessengerRequest>
  /** Answers for the next sends, in order (then the normal answer). */
  readonly failures: Array<{ readonly status: number; readonly body: unknown }>
  /** Each contact's latest message time (ms), as Meta keeps the window: set by `messaging`. */
  readonly lastInbound: Map<string, number>
  readonly profiles: Map<string, Record<string, string>>
  /** Files the fake's CDN serves, by name, behind the signature its links carry. */
  readonly files: Map<string, { readonly bytes: Buffer; readonly mimetype: string }>
  /** Echoes posted, with the answer Parley gave. */
  readonly echoes: Array<{ readonly mid: string; readonly status: number }>
  url: string
}

export const messengerState = (object: "page" | "instagram", account: string, appSecret: string) =>
  ({
    object,
    account,
    token: `EAAG${randomBytes(12).toString("hex")}`,
    appSecret,
    webhookUrl: undefined,
    humanAgent: true,
    hang: false,
    requests: [],
    failures: [],
    lastInbound: new Map(),
    profiles: new Map(),
    files: new Map(),
    echoes: [],
    url: ""
  }) satisfies FakeMessengerState as FakeMessengerState

/** Meta's error body (the Send API's documented shape). */
export const metaError = (code: number, message: string, subcode?: number) => ({
  error: {
    message: `(#${code}) ${message}`,
    type: "OAuthException",
    code,
    ...(subcode === undefined ? {} : { error_subcode: subcode }),
    fbtrace_id: "AbCdEfGhIjKl"
  }
})

export const outsideWindow = metaError(10, "This message is sent outside of allowed window.", 2018278)
export const unavailable = metaError(551, "This person isn't available right now.", 1545041)
export const tooManyCalls = metaError(613, "Calls to this api have exceeded the rate limit.")
export const invalidToken = {
  error: {
    message: "Error validating access token: The session has been invalidated because the user changed their password.",
    type: "OAuthException",
    code: 190,
    error_subcode: 460,
    fbtrace_id: "AbCdEfGhIjKl"
  }
}

const SIGNATURE = "oh"
const signed = new Map<string, string>()

/** A CDN link to a file the fake serves, signed as Meta's attachment links are. */
export const cdnLink = (state: FakeMessengerState, name: string, bytes: Buffer, mimetype: string) => {
  state.files.set(name, { bytes, mimetype })
  const sig = randomBytes(8).toString("hex")
  signed.set(name, sig)
  return `${state.url}/cdn/${name}?${SIGNATURE}=${sig}&oe=6A1B2C3D`
}

/** The messages the fake accepted for a contact, in order: text or an attachment, with the send's type and tag. */
export const sentTo = (state: FakeMessengerState, psid: string) =>
  state.requests.filter((r) =>
    r.method === "POST" && r.path.endsWith(`/${state.account}/messages`) && r.body?.recipient?.id === psid &&
    r.body?.message !== undefined
  ).map((r) => ({ ...r.body.message, messaging_type: r.body.messaging_type, tag: r.body.tag }))

const maxText = (state: FakeMessengerState) => state.object === "page" ? 2000 : 1000

/** Why a Send API body is refused (code 100), or null. */
const invalidSend = (state: FakeMessengerState, body: any): string | null => {
  if (typeof body?.recipient?.id !== "string") return "param recipient[id] must be non-empty."
  if (body.sender_action !== undefined) {
    return ["typing_on", "typing_off", "mark_seen"].includes(body.sender_action) ? null : "Invalid sender_action"
  }
  if (!["RESPONSE", "UPDATE", "MESSAGE_TAG"].includes(body.messaging_type)) return "Invalid messaging_type"
  if ((body.messaging_type === "MESSAGE_TAG") !== (body.tag !== undefined)) return "A tag needs MESSAGE_TAG"
  const m = body.message
  if (typeof m !== "object" || m === null) return "param message must be non-empty."
  if (typeof m.text === "string") {
    if (m.text.length === 0) return "param message[text] must be non-empty."
    if (m.text.length > maxText(state)) {
      return `Length of param message[text] must be less than or equal to ${maxText(state)}`
    }
    return null
  }
  const a = m.attachment
  if (!["image", "video", "audio", "file"].includes(a?.type) || typeof a?.payload?.url !== "string") {
    return "param message[attachment] must have a type and a payload url."
  }
  return null
}

/** A webhook body of `messaging` events for the fake's page or account; contact messages open their window. */
export const messaging = (state: FakeMessengerState, events: ReadonlyArray<Record<string, any>>, account?: string) => {
  for (const e of events) {
    if (e.message !== undefined && e.message.is_echo !== true && e.sender?.id !== undefined) {
      state.lastInbound.set(e.sender.id, Math.max(state.lastInbound.get(e.sender.id) ?? 0, e.timestamp))
    }
  }
  return {
    object: state.object,
    entry: [{ id: account ?? state.account, time: Date.now(), messaging: events }]
  }
}

/** A contact's message event; `at` in ms. */
export const fromContact = (state: FakeMessengerState, psid: string, at: number, message: Record<string, unknown>) => ({
  sender: { id: psid },
  recipient: { id: state.account },
  timestamp: at,
  message: { mid: `m_${randomBytes(16).toString("base64url")}`, ...message }
})

/** POSTs a signed webhook (or with `signature` as given) to `url`; the status and text. */
export const deliver = (url: string, state: FakeMessengerState, payload: unknown, signature?: string | null) =>
  Effect.promise(async () => {
    const body = JSON.stringify(payload)
    const headers: Record<string, string> = { "content-type": "application/json" }
    const sig = signature === undefined ? hubSignature(state.appSecret, body) : signature
    if (sig !== null) headers["x-hub-signature-256"] = sig
    const response = await fetch(url, { method: "POST", headers, body })
    return { status: response.status, text: await response.text() }
  })

/**
 * The fake Messenger Platform for one or more pages and accounts (one Graph API serves them all); its base URL is
 * each state's `url` (for META_GRAPH_API_URL), closed with the scope.
 */
export const fakeMessenger = (states: ReadonlyArray<FakeMessengerState>, now: () => number = Date.now) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<Http.Server>((resolve) => {
        const server = Http.createServer((req, res) => {
          const chunks: Array<Buffer> = []
          req.on("data", (c: Buffer) => chunks.push(c))
          req.on("end", () => {
            const url = new URL(req.url ?? "/", "http://fake")
            const raw = Buffer.concat(chunks).toString("utf8")
            let body: any
            try {
              body = raw ? JSON.parse(raw) : undefined
            } catch {
              body = raw
            }
            const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1]
            const method = req.method ?? "GET"
            const [, version, first, second] = url.pathname.split("/")
            const cdn = /^\/cdn\/(.+)$/.exec(url.pathname)
            // the page or account called (by the path), else whose token it is (a profile), else whose file
            const state = states.find((s) => s.account === first) ?? states.find((s) => s.token === token) ??
              states.find((s) => cdn !== null && s.files.has(cdn[1]!)) ?? states[0]!
            state.requests.push({ method, path: url.pathname, query: url.searchParams, body, token, at: Date.now() })
            const json = (status: number, payload: unknown) =>
              res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(payload))
            if (cdn !== null) {
              // the CDN needs no token, only its own signature
              const file = state.files.get(cdn[1]!)
              if (file === undefined || url.searchParams.get(SIGNATURE) !== signed.get(cdn[1]!)) {
                return res.writeHead(403, { "content-type": "text/plain" }).end("URL signature mismatch")
              }
              return res.writeHead(200, { "content-type": file.mimetype, "content-length": file.bytes.length }).end(
                file.bytes
              )
            }
            if (token !== state.token) return json(400, invalidToken)
            if (version !== API_VERSION) return json(400, metaError(2635, "Unknown API version"))
            if (method === "GET" && second === undefined) {
              if (first === state.account) {
                return json(
                  200,
                  state.object === "page"
                    ? { id: state.account, name: "Acme Store" }
                    : { id: state.account, username: "acme.store", name: "Acme Store" }
                )
              }
              const profile = state.profiles.get(first ?? "")
              return profile === undefined
                ? json(400, metaError(100, "Object does not exist, cannot be loaded due to missing permissions", 33))
                : json(200, { ...profile, id: first })
            }
            if (method !== "POST" || first !== state.account || second !== "messages") {
              return json(400, metaError(100, "Unsupported request"))
            }
            const invalid = invalidSend(state, body)
            if (invalid !== null) return json(400, metaError(100, invalid))
            if (body.sender_action !== undefined) return json(200, { recipient_id: body.recipient.id })
            if (state.hang) return
            const failure = state.failures.shift()
            if (failure !== undefined) return json(failure.status, failure.body)
            const since = now() - (state.lastInbound.get(body.recipient.id) ?? -Infinity)
            const allowed = body.messaging_type === "MESSAGE_TAG"
              ? body.tag === "HUMAN_AGENT" && state.humanAgent && since <= 7 * DAY
              : since <= DAY
            if (!allowed) return json(400, outsideWindow)
            const mid = `m_${randomBytes(16).toString("base64url")}`
            json(200, { recipient_id: body.recipient.id, message_id: mid })
            // Meta echoes what the page sent to the page's webhook, with the sender's metadata
            if (state.webhookUrl !== undefined) {
              const echo = {
                sender: { id: state.account },
                recipient: { id: body.recipient.id },
                timestamp: now(),
                message: {
                  is_echo: true,
                  app_id: 1517776481860111,
                  mid,
                  ...(body.message.metadata === undefined ? {} : { metadata: body.message.metadata }),
                  ...(body.message.text === undefined ? {} : { text: body.message.text }),
                  ...(body.message.attachment === undefined ? {} : { attachments: [body.message.attachment] })
                }
              }
              const target = state.webhookUrl
              void Effect.runPromise(
                deliver(target, state, {
                  object: state.object,
                  entry: [{ id: state.account, time: now(), messaging: [echo] }]
                })
              )
                .then((r) => state.echoes.push({ mid, status: r.status }))
            }
          })
        })
        server.listen(0, "127.0.0.1", () => resolve(server))
      })
    ),
    (server) =>
      Effect.promise(() =>
        new Promise<void>((r) => {
          server.closeAllConnections()
          server.close(() => r())
        })
      )
  ).pipe(Effect.map((server) => {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    for (const state of states) state.url = base
    return base
  }))
