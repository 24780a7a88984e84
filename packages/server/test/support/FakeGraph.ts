/**
 * A local stand-in for Meta's Graph API as the WhatsApp Cloud API documents it (real HTTP on a random port, for
 * META_GRAPH_API_URL): it checks the bearer token and the request shapes, answers with Meta's bodies and error
 * codes (a closed 24-hour window by its own clock, a revoked token, scripted failures), serves media, and makes
 * correctly signed webhooks for the tests to post to Parley.
 */
import { Effect } from "effect"
import { createHmac } from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

export const API_VERSION = "v23.0"

/** A request the fake received: method, path, parsed JSON body, bearer token. */
export interface GraphRequest {
  readonly method: string
  readonly path: string
  readonly body: any
  readonly token: string | undefined
  /** The query string, `?` included ("" when none). */
  readonly query: string
  /** When it arrived (real ms). */
  readonly at: number
}

/** Meta's error body for `code` (the shapes the Cloud API documents). */
export const graphError = (code: number, message: string, details?: string) => ({
  error: {
    message: `(#${code}) ${message}`,
    type: "OAuthException",
    code,
    ...(details === undefined ? {} : { error_data: { messaging_product: "whatsapp", details } }),
    fbtrace_id: "AbCdEfGhIjKl"
  }
})

export const expiredToken = {
  error: {
    message: "Error validating access token: Session has expired on Friday, 27-Nov-26 10:00:00 PST.",
    type: "OAuthException",
    code: 190,
    error_subcode: 463,
    fbtrace_id: "AbCdEfGhIjKl"
  }
}

export interface FakeGraphState {
  readonly phoneNumberId: string
  /** The token the fake accepts; set it to something else to revoke the channel's. */
  token: string
  readonly requests: Array<GraphRequest>
  /** Answers for the next message sends, in order (then the normal answer); null: that send is answered normally. */
  readonly failures: Array<{ readonly status: number; readonly body: unknown } | null>
  /** Each contact's latest inbound message time (ms), as Meta keeps the window: set by `webhookFor`. */
  readonly lastInbound: Map<string, number>
  /**
   * Media the fake serves: id → bytes and MIME type; `file_size` is the size its record states (default: the
   * bytes' length; null: none stated, as Meta's record may lack it).
   */
  readonly media: Map<
    string,
    { readonly bytes: Buffer; readonly mimetype: string; readonly file_size?: number | null }
  >
  /** The fake's clock (ms); tests may move it. */
  now: () => number
  /** While true, message sends are taken and never answered (a process killed mid-send). */
  hang: boolean
  /** Every n-th message send answers 130429 (Meta's throughput limit); 0: never. */
  rateLimitEvery: number
  /** The message sends answered 200, in order, with when they arrived. */
  readonly accepted: Array<{ readonly at: number; readonly body: any; readonly id: string }>
  /** The business account whose templates the fake lists (`GET /{id}/message_templates`). */
  readonly businessAccountId: string
  /** The account's templates as Meta lists them (name, language, status, category, components). */
  readonly templates: Array<GraphTemplate>
}

export interface GraphTemplate {
  readonly id: string
  readonly name: string
  readonly language: string
  readonly status: "APPROVED" | "PENDING" | "REJECTED" | "PAUSED" | "DISABLED"
  readonly category: "MARKETING" | "UTILITY" | "AUTHENTICATION"
  readonly components: ReadonlyArray<{ readonly type: string; readonly text?: string; readonly format?: string }>
}

/** The account's templates unless a test sets its own: one without parameters, one with two, one still in review. */
export const defaultTemplates = (): Array<GraphTemplate> => [
  {
    id: "1001",
    name: "hello_world",
    language: "en_US",
    status: "APPROVED",
    category: "UTILITY",
    components: [{ type: "HEADER", format: "TEXT", text: "Hello World" }, {
      type: "BODY",
      text:
        "Welcome and congratulations!! This message demonstrates your ability to send a WhatsApp message notification."
    }]
  },
  {
    id: "1002",
    name: "order_followup",
    language: "en",
    status: "APPROVED",
    category: "UTILITY",
    components: [{ type: "BODY", text: "Hi {{1}}, your order {{2}} is waiting. Reply here to finish it." }, {
      type: "FOOTER",
      text: "Acme"
    }]
  },
  {
    id: "1003",
    name: "spring_sale",
    language: "en",
    status: "PENDING",
    category: "MARKETING",
    components: [{ type: "BODY", text: "Our spring sale starts today, {{1}}!" }]
  }
]

export const graphState = (phoneNumberId: string, token: string): FakeGraphState => ({
  phoneNumberId,
  token,
  requests: [],
  failures: [],
  lastInbound: new Map(),
  media: new Map(),
  now: () => Date.now(),
  hang: false,
  rateLimitEvery: 0,
  accepted: [],
  businessAccountId: "2000000000001",
  templates: defaultTemplates()
})

/** The message sends the fake accepted (`POST /{phone}/messages` that are not read receipts). */
export const sends = (state: FakeGraphState) =>
  state.requests.filter((r) => r.method === "POST" && r.path.endsWith("/messages") && r.body?.status !== "read")

const MEDIA_TYPES = ["image", "audio", "video", "document", "sticker"]
const DAY = 24 * 3_600_000

/** Why Meta would refuse this send payload (its `(#100)` parameter errors), or null. */
const invalidSend = (body: any): string | null => {
  if (body?.messaging_product !== "whatsapp") return "messaging_product must be whatsapp"
  if (body.status === "read") return typeof body.message_id === "string" ? null : "message_id is required"
  if (typeof body.to !== "string" || !/^\d{7,15}$/.test(body.to)) return "to must be a phone number"
  if (body.type === "text") {
    const text = body.text?.body
    return typeof text === "string" && text.length > 0 && text.length <= 4096
      ? null
      : "text.body must be 1 to 4096 chars"
  }
  if (MEDIA_TYPES.includes(body.type)) {
    const part = body[body.type]
    if (
      part?.caption !== undefined && (["audio", "sticker"].includes(body.type) || String(part.caption).length > 1024)
    ) {
      return `${body.type}.caption is not allowed or longer than 1024 characters`
    }
    return typeof part?.link === "string" || typeof part?.id === "string" ? null : `${body.type}.link or id is required`
  }
  if (body.type === "template") {
    if (typeof body.template?.name !== "string" || typeof body.template?.language?.code !== "string") {
      return "template.name and template.language.code are required"
    }
    const parameters = body.template.components?.find((c: any) => c?.type === "body")?.parameters ?? []
    return Array.isArray(parameters) && parameters.every((p: any) => p?.type === "text" && typeof p.text === "string")
      ? null
      : "template body parameters must be {type: text, text}"
  }
  return `type ${String(body.type)} is not supported`
}

/** Meta's refusal of a template send: unknown in that language (132001), not approved, or the wrong parameter count. */
const templateRefusal = (state: FakeGraphState, template: any) => {
  const found = state.templates.find((t) => t.name === template.name && t.language === template.language.code)
  if (found === undefined || found.status !== "APPROVED") {
    return graphError(
      132001,
      "Template name does not exist in the translation",
      `template name (${template.name}) does not exist in ${template.language.code}`
    )
  }
  const body = found.components.find((c) => c.type === "BODY")?.text ?? ""
  const wanted = Math.max(0, ...[...body.matchAll(/\{\{(\d+)\}\}/g)].map((m) => Number(m[1])))
  const given = template.components?.find((c: any) => c?.type === "body")?.parameters?.length ?? 0
  return wanted === given
    ? null
    : graphError(
      132000,
      "Number of parameters does not match the expected number of params",
      `body: number of localizable_params (${given}) does not match the expected number of params (${wanted})`
    )
}

/** The fake Graph API; its base URL (for META_GRAPH_API_URL), closed with the scope. */
export const fakeGraph = (state: FakeGraphState) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<Http.Server>((resolve) => {
        let ids = 0
        let calls = 0
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
            state.requests.push({
              method: req.method ?? "GET",
              path: url.pathname,
              query: url.search,
              body,
              token,
              at: Date.now()
            })
            const json = (status: number, payload: unknown) =>
              res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(payload))
            if (token !== state.token) return json(401, expiredToken)
            const [, version, first, second] = url.pathname.split("/")
            if (url.pathname.startsWith("/media-download/")) {
              const media = state.media.get(url.pathname.slice("/media-download/".length))
              if (media === undefined) return json(404, graphError(100, "Invalid parameter"))
              return res.writeHead(200, { "content-type": media.mimetype }).end(media.bytes)
            }
            if (version !== API_VERSION) return json(400, graphError(2635, "Unknown API version"))
            if (req.method === "POST" && first === state.phoneNumberId && second === "messages") {
              const invalid = invalidSend(body)
              if (invalid !== null) return json(400, graphError(100, "Invalid parameter", invalid))
              if (body.status === "read") return json(200, { success: true })
              if (state.hang) return
              calls++
              if (state.rateLimitEvery > 0 && calls % state.rateLimitEvery === 0) {
                return json(400, graphError(130429, "Rate limit hit", "Cloud API message throughput has been reached."))
              }
              const failure = state.failures.shift()
              if (failure !== undefined && failure !== null) return json(failure.status, failure.body)
              if (body.type === "template") {
                const refused = templateRefusal(state, body.template)
                if (refused !== null) return json(400, refused)
              }
              const opened = state.lastInbound.get(body.to)
              if (body.type !== "template" && (opened === undefined || state.now() - opened > DAY)) {
                return json(
                  400,
                  graphError(
                    131047,
                    "Re-engagement message",
                    "Message failed to send because more than 24 hours have passed since the customer last replied to this number."
                  )
                )
              }
              const id = `wamid.fake${++ids}`
              state.accepted.push({ at: Date.now(), body, id })
              return json(200, {
                messaging_product: "whatsapp",
                contacts: [{ input: body.to, wa_id: body.to }],
                messages: [{ id }]
              })
            }
            if (req.method === "GET" && first === state.businessAccountId && second === "message_templates") {
              // Meta's cursor paging: `limit` per page, `after` the last id of the page before
              const limit = Math.min(Number(url.searchParams.get("limit") ?? "25") || 25, 100)
              const after = url.searchParams.get("after")
              const from = after === null ? 0 : state.templates.findIndex((t) => t.id === after) + 1
              const page = state.templates.slice(from, from + limit)
              const more = from + limit < state.templates.length
              const next = new URL(
                url.toString().replace("http://fake", `http://127.0.0.1:${(server.address() as AddressInfo).port}`)
              )
              next.searchParams.set("after", page.at(-1)?.id ?? "")
              // as Meta's paging links do
              next.searchParams.set("access_token", token ?? "")
              return json(200, {
                data: page,
                paging: {
                  cursors: { before: page[0]?.id ?? "", after: page.at(-1)?.id ?? "" },
                  ...(more ? { next: next.toString() } : {})
                }
              })
            }
            if (req.method === "GET" && first === state.phoneNumberId && second === undefined) {
              return json(200, {
                verified_name: "Acme Support",
                display_phone_number: "+1 555-010-0000",
                quality_rating: "GREEN",
                id: state.phoneNumberId
              })
            }
            const media = req.method === "GET" && second === undefined ? state.media.get(first ?? "") : undefined
            if (media !== undefined) {
              const address = server.address() as AddressInfo
              return json(200, {
                messaging_product: "whatsapp",
                url: `http://127.0.0.1:${address.port}/media-download/${first}`,
                mime_type: media.mimetype,
                sha256: "0".repeat(64),
                ...(media.file_size === null ? {} : { file_size: media.file_size ?? media.bytes.length }),
                id: first
              })
            }
            return json(400, graphError(100, "Unsupported request"))
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
  ).pipe(Effect.map((server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`))

/** `X-Hub-Signature-256` for `body` with `appSecret`, as Meta signs webhooks. */
export const hubSignature = (appSecret: string, body: string) =>
  `sha256=${createHmac("sha256", appSecret).update(body).digest("hex")}`

/** A contact's message as Meta's webhook carries it (`messages[]` item); `at` in ms. */
export const inbound = (from: string, id: string, at: number, content: Record<string, unknown>) => ({
  from,
  id,
  timestamp: String(Math.floor(at / 1000)),
  ...content
})

/** A receipt as Meta's webhook carries it (`statuses[]` item). */
export const receipt = (id: string, status: string, at: number, recipient: string, errors?: Array<unknown>) => ({
  id,
  status,
  timestamp: String(Math.floor(at / 1000)),
  recipient_id: recipient,
  ...(errors === undefined ? {} : { errors })
})

/**
 * A webhook body for the fake's phone number: one entry per change; each contact message opens that contact's
 * window at the fake (as Meta does) by the message's own timestamp.
 */
export const webhookFor = (
  state: FakeGraphState,
  changes: ReadonlyArray<{
    readonly messages?: ReadonlyArray<ReturnType<typeof inbound>>
    readonly statuses?: ReadonlyArray<ReturnType<typeof receipt>>
    readonly names?: Record<string, string>
  }>
) => {
  for (const change of changes) {
    for (const m of change.messages ?? []) {
      const at = Number(m.timestamp) * 1000
      state.lastInbound.set(m.from, Math.max(state.lastInbound.get(m.from) ?? 0, at))
    }
  }
  return {
    object: "whatsapp_business_account",
    entry: [{
      id: "102290129340398",
      changes: changes.map((change) => ({
        field: "messages",
        value: {
          messaging_product: "whatsapp",
          metadata: { display_phone_number: "15550100000", phone_number_id: state.phoneNumberId },
          ...(change.messages === undefined ? {} : {
            contacts: [...new Set(change.messages.map((m) => m.from))].map((waId) => ({
              profile: { name: change.names?.[waId] ?? `Contact ${waId.slice(-4)}` },
              wa_id: waId
            })),
            messages: change.messages
          }),
          ...(change.statuses === undefined ? {} : { statuses: change.statuses })
        }
      }))
    }]
  }
}

/** POSTs `payload` to a webhook URL signed with `appSecret` (or with `signature` as given); status and text. */
export const postWebhook = (
  url: string,
  appSecret: string,
  payload: unknown,
  options: { readonly signature?: string | null } = {}
) =>
  Effect.promise(async () => {
    const body = typeof payload === "string" ? payload : JSON.stringify(payload)
    const headers: Record<string, string> = { "content-type": "application/json" }
    const signature = options.signature === undefined ? hubSignature(appSecret, body) : options.signature
    if (signature !== null) headers["x-hub-signature-256"] = signature
    const response = await fetch(url, { method: "POST", headers, body })
    return { status: response.status, text: await response.text() }
  })
