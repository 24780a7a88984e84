/**
 * The Bot API calls Parley makes for a Telegram channel (docs/channels.md, "Telegram"), at
 * `{TELEGRAM_API_URL}/bot{token}/{method}`: messages and files by link, the typing action, file downloads, the bot's
 * own record and its webhook. The token is part of every URL, so these calls make no client span (a span records
 * its URL) and every message Parley keeps from them has the token taken out. Telegram's errors are read by meaning.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { type InboundMedia, type OutboundFile, type OutboundMessage, SendFailure } from "@parley/domain"
import { Duration, Effect, Option } from "effect"
import { FileStorage } from "../../files/FileStorage.js"
import { download, tooLarge } from "../MediaDownload.js"
import { sendInParts, splitText } from "../TextParts.js"

export interface BotCredentials {
  readonly bot_token: string
}

/** Telegram's limits: a text message, a caption, and a file a bot may download. */
export const MAX_TEXT_CHARS = 4096
const MAX_CAPTION_CHARS = 1024
export const MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024
/** Between two messages to one chat (Telegram: "avoid sending more than one message per second" in a chat). */
const PER_CHAT_GAP = Duration.seconds(1)
const TIMEOUT = Duration.seconds(20)

/** The token out of any text Parley keeps or logs (an error can quote the URL it called). */
const redact = (text: string, token: string) => token === "" ? text : text.replaceAll(token, "***")

const failure = (kind: SendFailure["kind"], message: string, status: number | null, excerpt: string | null) =>
  new SendFailure({ kind, message, status, code: status, excerpt })

/** Telegram's error body `{ok: false, error_code, description, parameters: {retry_after}}` as a `SendFailure`. */
export const failureOf = (status: number, body: string, token: string): SendFailure => {
  let description = `HTTP ${status}`
  let retryAfter: number | undefined
  try {
    const parsed = JSON.parse(body) as { description?: unknown; parameters?: { retry_after?: unknown } }
    if (typeof parsed.description === "string") description = parsed.description
    const seconds = parsed.parameters?.retry_after
    if (typeof seconds === "number" && Number.isFinite(seconds) && seconds > 0) retryAfter = seconds
  } catch {
    // not Telegram's JSON: the status decides
  }
  const kind = status === 429
    ? "rate_limited"
    : status === 401 || status === 404
    ? "auth_revoked"
    : status >= 500
    ? "transient"
    : "undeliverable"
  return new SendFailure({
    kind,
    message: redact(description, token),
    status,
    code: status,
    excerpt: redact(body.slice(0, 1000), token),
    // a 429 says how long the bot must wait: the retry waits that long (and at most a day)
    ...(kind === "rate_limited" && retryAfter !== undefined
      ? { retryAfterMs: Math.min(retryAfter, 86_400) * 1000 }
      : {})
  })
}

const unreachable = (cause: unknown, token: string) =>
  failure(
    "transient",
    redact(`Telegram could not be reached: ${cause instanceof Error ? cause.message : String(cause)}`, token),
    null,
    null
  )

/** The method that sends a file of this kind by link, and the field it takes the link in. */
const fileMethod = (type: string, mimetype: string) =>
  type === "image" || mimetype.startsWith("image/")
    ? ["sendPhoto", "photo"] as const
    : type === "video" || mimetype.startsWith("video/")
    ? ["sendVideo", "video"] as const
    : type === "audio" || mimetype.startsWith("audio/")
    ? ["sendAudio", "audio"] as const
    : ["sendDocument", "document"] as const

/**
 * Whether Telegram can take the file by link: it fetches photos up to 5 MB and other files up to 20 MB, and a
 * document only as a PDF, ZIP or GIF. Any other file is uploaded.
 */
const byLink = (method: string, f: OutboundFile) =>
  method === "sendPhoto"
    ? f.size <= 5 * 1024 * 1024
    : f.size <= 20 * 1024 * 1024 &&
      (method !== "sendDocument" || ["application/pdf", "application/zip", "image/gif"].includes(f.mimetype))

export const makeBot = Effect.gen(function*() {
  const storage = yield* FileStorage
  const client = (yield* HttpClient.HttpClient).pipe(
    HttpClient.withTracerPropagation(false),
    HttpClient.withTracerDisabledWhen(() => true)
  )

  /** One Bot API method with a JSON body (or a form, with a file): its `result`, or Telegram's error by meaning. */
  const call = (base: string, c: BotCredentials, method: string, payload: Record<string, unknown> | FormData) =>
    client.execute(
      HttpClientRequest.post(`${base}/bot${c.bot_token}/${method}`).pipe(
        payload instanceof FormData
          ? HttpClientRequest.bodyFormData(payload)
          : HttpClientRequest.bodyUnsafeJson(payload)
      )
    ).pipe(
      Effect.flatMap((response) => Effect.map(response.text, (body) => ({ status: response.status, body }))),
      Effect.timeout(TIMEOUT),
      Effect.mapError((cause) => unreachable(cause, c.bot_token)),
      Effect.flatMap((r) =>
        r.status >= 200 && r.status < 300
          ? Effect.succeed({ status: r.status, body: r.body, result: resultOf(r.body) })
          : Effect.fail(failureOf(r.status, r.body, c.bot_token))
      ),
      Effect.scoped,
      Effect.withSpan(`Telegram.${method}`)
    )

  /** JSON, or a form when a field is a file to upload (read from storage as it is sent). */
  const bodyOf = (payload: Record<string, unknown>) =>
    Effect.gen(function*() {
      const entries = Object.entries(payload)
      const file = entries.find(([, v]) => typeof v === "object" && v !== null && "upload" in v)
      if (file === undefined) return payload
      const f = (file[1] as { upload: OutboundFile }).upload
      const blob = yield* storage.blob(f.key, f.mimetype)
      if (Option.isNone(blob)) {
        return yield* failure("undeliverable", `The file ${f.name} is no longer stored.`, null, null)
      }
      const form = new FormData()
      for (const [name, value] of entries) {
        if (name !== file[0]) {
          form.append(name, typeof value === "string" ? value : JSON.stringify(value))
        }
      }
      form.append(file[0], blob.value, f.name)
      return form
    })

  /** Each part as its own message: text split at 4,096 characters, files by signed link (a short text as caption). */
  const send = (base: string, c: BotCredentials, m: OutboundMessage) =>
    Effect.gen(function*() {
      if (m.to === null) return yield* failure("undeliverable", "The conversation has no Telegram chat.", null, null)
      const text = m.text ?? ""
      const first = m.files[0]
      const caption = text !== "" && text.length <= MAX_CAPTION_CHARS && first !== undefined ? text : undefined
      const payloads: Array<readonly [string, Record<string, unknown>]> = []
      if (caption === undefined && text !== "") {
        for (const part of splitText(text, MAX_TEXT_CHARS)) payloads.push(["sendMessage", { text: part }])
      }
      for (const [i, f] of m.files.entries()) {
        const [method, field] = fileMethod(f.type, f.mimetype)
        const upload = !byLink(method, f)
        // a photo too large to fetch goes as a document, which Telegram takes up to 50 MB uploaded
        const [sendAs, as] = upload && method === "sendPhoto" ? ["sendDocument", "document"] as const : [method, field]
        payloads.push([sendAs, {
          [as]: upload ? { upload: f } : f.url,
          ...(i === 0 && caption !== undefined ? { caption } : {})
        }])
      }
      const quoted = m.quotedId === undefined ? undefined : Number(m.quotedId.split(":")[1])
      return yield* sendInParts(payloads, m.fromPart, ([method, payload], i) =>
        Effect.gen(function*() {
          // Telegram asks for about one message a second in a chat: the parts of one message keep that pace
          if (i > m.fromPart) yield* Effect.sleep(PER_CHAT_GAP)
          const reply = i === 0 && quoted !== undefined && Number.isInteger(quoted)
            ? { reply_parameters: { message_id: quoted, allow_sending_without_reply: true } }
            : {}
          const r = yield* call(base, c, method, yield* bodyOf({ chat_id: m.to, ...payload, ...reply }))
          const id = (r.result as { message_id?: unknown } | undefined)?.message_id
          return { status: r.status, body: r.body, id: typeof id === "number" ? `${m.to}:${id}` : undefined }
        }))
    })

  /** "typing…" in the chat (Telegram shows a bot no read receipts): until the reply or five seconds. */
  const typing = (base: string, c: BotCredentials, chat: string) =>
    call(base, c, "sendChatAction", { chat_id: chat, action: "typing" }).pipe(Effect.asVoid)

  /** `getFile` for the file's path, then the file itself, within `maxBytes` (Telegram serves bots up to 20 MB). */
  const fetchMedia = (base: string, c: BotCredentials, media: InboundMedia, maxBytes: number) =>
    Effect.gen(function*() {
      const limit = Math.min(maxBytes, MAX_DOWNLOAD_BYTES)
      const file = (yield* call(base, c, "getFile", { file_id: media.providerId })).result as {
        file_path?: unknown
        file_size?: unknown
      }
      if (typeof file.file_size === "number" && file.file_size > limit) return yield* tooLarge(file.file_size, limit)
      if (typeof file.file_path !== "string") {
        return yield* failure("undeliverable", "Telegram gave the file no path.", null, null)
      }
      return yield* download(client, HttpClientRequest.get(`${base}/file/bot${c.bot_token}/${file.file_path}`), {
        maxBytes: limit,
        timeout: TIMEOUT,
        unreachable: (cause) => unreachable(cause, c.bot_token),
        refused: (status, body) => failureOf(status, body, c.bot_token),
        mimetype: () => media.mimetype ?? "application/octet-stream",
        name: media.name ?? file.file_path.split("/").pop()
      })
    })

  /** Answers a button press, so the contact's app stops showing it loading. */
  const answerCallback = (base: string, c: BotCredentials, queryId: string) =>
    call(base, c, "answerCallbackQuery", { callback_query_id: queryId }).pipe(Effect.asVoid)

  /** The bot's own record (`getMe`): who the channel is, or what is wrong. */
  const check = (base: string, c: BotCredentials) =>
    call(base, c, "getMe", {}).pipe(Effect.map((r) => r.result as Record<string, unknown>))

  /** Points the bot's updates at Parley's webhook, with the secret Telegram will send back on each. */
  const setWebhook = (base: string, c: BotCredentials, url: string, secret: string) =>
    call(base, c, "setWebhook", {
      url,
      secret_token: secret,
      allowed_updates: ["message", "edited_message", "callback_query"]
    }).pipe(Effect.asVoid)

  return { send, typing, fetchMedia, check, setWebhook, answerCallback }
})

const resultOf = (body: string): unknown => {
  try {
    return (JSON.parse(body) as { result?: unknown }).result
  } catch {
    return undefined
  }
}
