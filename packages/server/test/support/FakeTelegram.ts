/**
 * A local stand-in for Telegram's Bot API (https://core.telegram.org/bots/api; real HTTP on a random port, for
 * TELEGRAM_API_URL): `POST /bot{token}/{method}` with JSON, form or multipart bodies, or GET with query parameters,
 * as Telegram takes them. It checks the token and the parameters, answers with Telegram's bodies and error codes
 * (unknown or blocked chats, too long texts, scripted failures), fetches media sent by URL as Telegram does, serves
 * files (`getFile`, `GET /file/bot{token}/{path}`), and delivers updates to the webhook set with `setWebhook` with
 * its secret token header, as Telegram does.
 */
import type { Scope } from "effect"
import { Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

/** An API call the fake received (file downloads are not recorded). */
export interface TelegramRequest {
  /** The API method as Telegram spells it (`sendMessage`), or as the path had it when the fake knows no such method. */
  readonly method: string
  /**
   * Its parameters: the query string's and the body's (JSON as sent; form and multipart values are strings, a
   * multipart file is `{ filename, type, size }`).
   */
  readonly body: any
  /** The token in the path. */
  readonly token: string
  /** When it arrived (real ms). */
  readonly at: number
}

/** A message the fake accepted from the bot. */
export interface TelegramSent {
  /** `sendMessage`, `sendPhoto`, … */
  readonly method: string
  readonly chat_id: number
  readonly text?: string
  readonly caption?: string
  /** The media as the bot gave it (its URL, a file_id, or `attach://{name}` for an upload) and its size. */
  readonly media?: { readonly url: string; readonly bytes: number }
  /** The message it replies to. */
  readonly reply_to?: number
  readonly message_id: number
}

/** A chat the bot can write to; the names are the user's (set by `message`), for the chat in the fake's answers. */
export interface TelegramChat {
  /** The user blocked the bot: sends answer 403. */
  blocked: boolean
  readonly first_name?: string
  readonly last_name?: string
  readonly username?: string
}

/** A private chat's user as `message` takes it. */
export interface TelegramUser {
  readonly id: number
  readonly first_name: string
  readonly last_name?: string
  readonly username?: string
}

/** An update as Telegram delivers it to the webhook. */
export interface TelegramUpdate {
  readonly update_id: number
  readonly [field: string]: any
}

/** A message update (`message`'s answer). */
export interface TelegramMessageUpdate extends TelegramUpdate {
  readonly message: { readonly message_id: number; readonly date: number; readonly [field: string]: any }
}

export interface FakeTelegramState {
  /** The bot token the fake accepts; set it to something else to revoke the bot's. */
  token: string
  readonly bot: { readonly id: number; readonly username: string; readonly first_name: string }
  /** Every API call, the refused ones too, in order. */
  readonly requests: Array<TelegramRequest>
  /** The webhook `setWebhook` set, or null. */
  webhook: {
    readonly url: string
    readonly secret_token: string | undefined
    readonly allowed_updates: ReadonlyArray<string> | undefined
  } | null
  /**
   * Answers for the next sends (sendMessage, sendPhoto, sendDocument, sendVideo, sendAudio, sendVoice), in order
   * (then the normal answer); null: that send is answered normally.
   */
  readonly failures: Array<{ readonly status: number; readonly body: unknown } | null>
  /**
   * The files `getFile` knows, by file_id: bytes, `file_path` and the size Telegram states (null: none stated).
   * Media the bot sends are added too, as Telegram keeps them.
   */
  readonly files: Map<string, { readonly bytes: Buffer; readonly path: string; readonly size: number | null }>
  /** The chats the bot can write to; a send to any other answers 400 `chat not found`. */
  readonly chats: Map<number, TelegramChat>
  /** The messages sent, in order. */
  readonly sent: Array<TelegramSent>
  /** The id of the next message (sent by the bot or made by `message`). */
  nextMessageId: number
  /** The id of the next update (`update`, `message`). */
  nextUpdateId: number
  /** Sends are taken (recorded in `requests`) and never answered, as a Bot API that hangs. */
  hang: boolean
  /** Button presses (`callback_query` ids of updates made by `update`) not answered yet. */
  readonly callbacks: Set<string>
}

/** Telegram's error body: `description` is the whole text (`Bad Request: chat not found`). */
export const telegramError = (status: number, description: string, parameters?: Record<string, unknown>) => ({
  ok: false as const,
  error_code: status,
  description,
  ...(parameters === undefined ? {} : { parameters })
})

/** A scripted 429 as Telegram answers a flood: `retry after n` and `parameters.retry_after` (and a Retry-After). */
export const tooManyRequests = (retryAfter: number) => ({
  status: 429,
  body: telegramError(429, `Too Many Requests: retry after ${retryAfter}`, { retry_after: retryAfter })
})

/** A scripted 403: the user blocked the bot. */
export const blocked = () => ({ status: 403, body: telegramError(403, "Forbidden: bot was blocked by the user") })

/** A scripted 400 (`chat not found` or the whole `Bad Request: chat not found`). */
export const badRequest = (description: string) => ({
  status: 400,
  body: telegramError(400, description.startsWith("Bad Request") ? description : `Bad Request: ${description}`)
})

const DEFAULT_TOKEN = "7000000001:AAFakeTelegramBotTokenForParleyTests"
const MAX_DOWNLOAD = 20 * 1024 * 1024
/** What Telegram fetches by URL: photos up to 5 MB, other files up to 20 MB. */
const PHOTO_BY_URL = 5 * 1024 * 1024
const CHAT_ACTIONS = [
  "typing",
  "upload_photo",
  "record_video",
  "upload_video",
  "record_voice",
  "upload_voice",
  "record_audio",
  "upload_audio",
  "upload_document",
  "choose_sticker",
  "find_location",
  "pick_up_location",
  "record_video_note",
  "upload_video_note",
  "cancel"
]
const WEBHOOK_ACTIVE =
  "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"
const PARSE_MODES = ["", "none", "html", "markdown", "markdownv2"]

/** The media sends: the parameter carrying the file, where Telegram files it, and its default extension and type. */
const MEDIA: Record<
  string,
  { readonly field: string; readonly folder: string; readonly ext: string; readonly mime: string }
> = {
  sendPhoto: { field: "photo", folder: "photos", ext: "jpg", mime: "image/jpeg" },
  sendDocument: { field: "document", folder: "documents", ext: "bin", mime: "application/octet-stream" },
  sendVideo: { field: "video", folder: "videos", ext: "mp4", mime: "video/mp4" },
  sendAudio: { field: "audio", folder: "music", ext: "mp3", mime: "audio/mpeg" },
  sendVoice: { field: "voice", folder: "voice", ext: "oga", mime: "audio/ogg" }
}

const METHODS = [
  "getMe",
  "setWebhook",
  "getWebhookInfo",
  "deleteWebhook",
  "getUpdates",
  "sendMessage",
  "sendChatAction",
  "answerCallbackQuery",
  "getFile",
  ...Object.keys(MEDIA)
]
/** Telegram's method names are case-insensitive. */
const CANONICAL = new Map(METHODS.map((m) => [m.toLowerCase(), m]))

interface Upload {
  readonly filename: string
  readonly type: string
  readonly bytes: Buffer
}

type Answer = { readonly status: number; readonly body: unknown }

const ok = (result: unknown, description?: string): Answer => ({
  status: 200,
  body: { ok: true, result, ...(description === undefined ? {} : { description }) }
})
const fail = (status: number, description: string): Answer => ({ status, body: telegramError(status, description) })
const bad = (description: string) => fail(400, `Bad Request: ${description}`)

/** A parameter that may arrive as JSON text (form and multipart bodies, query strings) or as JSON. */
const jsonParam = (value: unknown): unknown => {
  if (typeof value !== "string") return value
  try {
    return JSON.parse(value)
  } catch {
    return value
  }
}

const integerParam = (value: unknown): number | undefined => {
  if (typeof value === "number" && Number.isInteger(value)) return value
  if (typeof value === "string" && /^-?\d+$/.test(value.trim())) return Number(value)
  return undefined
}

const stringParam = (value: unknown): string =>
  value === undefined || value === null ? "" : typeof value === "string" ? value : JSON.stringify(value)

/** The query string's and the body's parameters, as Telegram reads them, or its refusal of the body. */
const readParams = async (
  req: Http.IncomingMessage,
  raw: Buffer,
  url: URL
): Promise<{ readonly params: Record<string, unknown>; readonly uploads: Map<string, Upload> } | Answer> => {
  const params: Record<string, unknown> = Object.fromEntries(url.searchParams)
  const uploads = new Map<string, Upload>()
  const contentType = req.headers["content-type"] ?? ""
  const type = contentType.split(";")[0]?.trim().toLowerCase()
  const text = raw.toString("utf8")
  if (type === "application/json" && text.trim() !== "") {
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      return bad(text.trim().startsWith("{") ? "can't parse parameter value" : "JSON object expected")
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return bad("JSON object expected")
    Object.assign(params, parsed)
  } else if (type === "application/x-www-form-urlencoded") {
    Object.assign(params, Object.fromEntries(new URLSearchParams(text)))
  } else if (type === "multipart/form-data") {
    let form: FormData
    try {
      form = await new Response(new Uint8Array(raw), { headers: { "content-type": contentType } }).formData()
    } catch {
      return bad("can't parse multipart/form-data")
    }
    const entries: Array<[string, FormDataEntryValue]> = []
    form.forEach((value, name) => entries.push([name, value]))
    for (const [name, value] of entries) {
      if (typeof value === "string") {
        params[name] = value
      } else {
        const bytes = Buffer.from(await value.arrayBuffer())
        uploads.set(name, { filename: value.name, type: value.type, bytes })
        params[name] = { filename: value.name, type: value.type, size: bytes.length }
      }
    }
  }
  // anything else (or no content type) carries no parameters for Telegram: a JSON body sent as text/plain is unread
  return { params, uploads }
}

/** The file_unique_id Telegram gives with a file_id. */
const uniqueOf = (fileId: string) => `unique-${fileId}`

const isLocal = (hostname: string) => ["127.0.0.1", "localhost", "[::1]"].includes(hostname.toLowerCase())

const fileName = (url: string) => {
  try {
    return decodeURIComponent(new URL(url).pathname.split("/").at(-1) ?? "")
  } catch {
    return ""
  }
}

const extension = (name: string, fallback: string) => /\.([A-Za-z0-9]{1,8})$/.exec(name)?.[1]?.toLowerCase() ?? fallback

/** Makes the fake Bot API (its base URL for TELEGRAM_API_URL, its state and its helpers), closed with the scope. */
export const makeFakeTelegram = (
  options: { readonly token?: string } = {}
): Effect.Effect<FakeTelegram, never, Scope.Scope> =>
  Effect.suspend(() => {
    const token = options.token ?? DEFAULT_TOKEN
    const state: FakeTelegramState = {
      token,
      bot: {
        id: Number(/^(\d+):/.exec(token)?.[1] ?? "7000000001"),
        username: "parley_test_bot",
        first_name: "Parley"
      },
      requests: [],
      webhook: null,
      failures: [],
      files: new Map(),
      chats: new Map(),
      sent: [],
      nextMessageId: 1,
      nextUpdateId: 100000001,
      hang: false,
      callbacks: new Set()
    }
    let files = 0

    const botUser = () => ({
      id: state.bot.id,
      is_bot: true,
      first_name: state.bot.first_name,
      username: state.bot.username
    })

    const addFile = (bytes: Buffer, file: { readonly path: string; readonly size?: number | null }) => {
      const id = `fake-file-${++files}`
      state.files.set(id, { bytes, path: file.path, size: file.size === undefined ? bytes.length : file.size })
      return id
    }

    const addChat = (chatId: number) => {
      if (!state.chats.has(chatId)) state.chats.set(chatId, { blocked: false })
    }

    /** The chat a send is for, or Telegram's refusal (unknown chat, blocked bot). */
    const chatOf = (params: Record<string, unknown>): { readonly id: number; readonly chat: TelegramChat } | Answer => {
      const raw = params.chat_id
      if (raw === undefined || raw === null || raw === "") return bad("chat_id is empty")
      const id = integerParam(raw)
      const chat = id === undefined ? undefined : state.chats.get(id)
      if (id === undefined || chat === undefined) return bad("chat not found")
      if (chat.blocked) return fail(403, "Forbidden: bot was blocked by the user")
      return { id, chat }
    }

    /** A message of the bot's in `chat`, as Telegram answers a send. */
    const botMessage = (
      method: string,
      chat: { readonly id: number; readonly chat: TelegramChat },
      replyTo: number | undefined,
      content: Record<string, unknown>,
      record: Pick<TelegramSent, "text" | "caption" | "media">
    ) => {
      const messageId = state.nextMessageId++
      const date = Math.floor(Date.now() / 1000)
      const privateChat = {
        id: chat.id,
        type: "private",
        first_name: chat.chat.first_name ?? `User ${chat.id}`,
        ...(chat.chat.last_name === undefined ? {} : { last_name: chat.chat.last_name }),
        ...(chat.chat.username === undefined ? {} : { username: chat.chat.username })
      }
      state.sent.push({
        method,
        chat_id: chat.id,
        ...record,
        ...(replyTo === undefined ? {} : { reply_to: replyTo }),
        message_id: messageId
      })
      return ok({
        message_id: messageId,
        from: botUser(),
        chat: privateChat,
        date,
        // Telegram answers the whole replied-to message; the fake knows its id and chat
        ...(replyTo === undefined ? {} : { reply_to_message: { message_id: replyTo, chat: privateChat, date } }),
        ...content
      })
    }

    const replyOf = (params: Record<string, unknown>) => {
      const parameters = jsonParam(params.reply_parameters) as any
      return integerParam(parameters?.message_id) ?? integerParam(params.reply_to_message_id)
    }

    const captionOf = (params: Record<string, unknown>) => {
      const caption = stringParam(params.caption)
      if (caption.length > 1024) return bad("message caption is too long")
      if (!PARSE_MODES.includes(stringParam(params.parse_mode).toLowerCase())) return bad("unsupported parse_mode")
      return caption
    }

    /** The bytes of a media send's file: uploaded, fetched by URL (as Telegram does), or a file_id's; else why not. */
    const mediaOf = async (
      method: string,
      value: unknown,
      uploads: Map<string, Upload>
    ): Promise<
      { readonly url: string; readonly bytes: Buffer; readonly name: string; readonly mime: string } | Answer
    > => {
      const kind = MEDIA[method]!
      const noFile = bad(`there is no ${kind.field} in the request`)
      const upload = (name: string) => {
        const part = uploads.get(name)
        return part === undefined
          ? noFile
          : { url: `attach://${name}`, bytes: part.bytes, name: part.filename, mime: part.type || kind.mime }
      }
      const given = typeof value === "string" ? value : ""
      if (given === "") return upload(kind.field)
      if (given.startsWith("attach://")) return upload(given.slice("attach://".length))
      const wrong = bad("wrong file identifier/HTTP URL specified")
      if (/^https?:\/\//i.test(given)) {
        try {
          const response = await fetch(given, { signal: AbortSignal.timeout(10_000) })
          if (!response.ok) return wrong
          const bytes = Buffer.from(await response.arrayBuffer())
          if (bytes.length > (kind.field === "photo" ? PHOTO_BY_URL : MAX_DOWNLOAD)) return wrong
          const mime = response.headers.get("content-type")?.split(";")[0]?.trim() || kind.mime
          return { url: given, bytes, name: fileName(given), mime }
        } catch {
          return wrong
        }
      }
      const known = state.files.get(given)
      return known === undefined
        ? wrong
        : { url: given, bytes: known.bytes, name: known.path.split("/").at(-1) ?? "", mime: kind.mime }
    }

    const send = async (method: string, params: Record<string, unknown>, uploads: Map<string, Upload>) => {
      const failure = state.failures.shift()
      if (failure !== undefined && failure !== null) return failure
      const replyTo = replyOf(params)
      if (method === "sendMessage") {
        const text = stringParam(params.text)
        if (text === "") return bad("message text is empty")
        if (!PARSE_MODES.includes(stringParam(params.parse_mode).toLowerCase())) return bad("unsupported parse_mode")
        if (text.length > 4096) return bad("message is too long")
        const chat = chatOf(params)
        if ("status" in chat) return chat
        return botMessage(method, chat, replyTo, { text }, { text })
      }
      const kind = MEDIA[method]!
      const given = params[kind.field]
      if ((given === undefined || given === "") && !uploads.has(kind.field)) {
        return bad(`there is no ${kind.field} in the request`)
      }
      const caption = captionOf(params)
      if (typeof caption !== "string") return caption
      const chat = chatOf(params)
      if ("status" in chat) return chat
      const media = await mediaOf(method, given, uploads)
      if ("status" in media) return media
      const n = ++files
      const fileId = `fake-file-${n}`
      const path = `${kind.folder}/file_${n}.${extension(media.name, kind.ext)}`
      state.files.set(fileId, { bytes: media.bytes, path, size: media.bytes.length })
      const file = { file_id: fileId, file_unique_id: uniqueOf(fileId) }
      const name = media.name === "" ? path.split("/").at(-1)! : media.name
      const size = media.bytes.length
      // the fake decodes no media: photos and videos get fixed dimensions, audio a one-second duration
      const content = kind.field === "photo"
        ? { photo: [{ ...file, width: 800, height: 600, file_size: size }] }
        : kind.field === "document"
        ? { document: { ...file, file_name: name, mime_type: media.mime, file_size: size } }
        : kind.field === "video"
        ? {
          video: {
            ...file,
            width: 1280,
            height: 720,
            duration: 1,
            file_name: name,
            mime_type: media.mime,
            file_size: size
          }
        }
        : kind.field === "audio"
        ? { audio: { ...file, duration: 1, file_name: name, mime_type: media.mime, file_size: size } }
        : { voice: { ...file, duration: 1, mime_type: media.mime, file_size: size } }
      return botMessage(method, chat, replyTo, { ...content, ...(caption === "" ? {} : { caption }) }, {
        ...(caption === "" ? {} : { caption }),
        media: { url: media.url, bytes: size }
      })
    }

    const setWebhook = (params: Record<string, unknown>): Answer => {
      const previous = state.webhook
      const given = stringParam(params.url)
      // as Telegram: an empty or missing url deletes the webhook
      if (given === "") {
        state.webhook = null
        return ok(true, previous === null ? "Webhook is already deleted" : "Webhook was deleted")
      }
      let url: URL
      try {
        // Telegram reads a URL without a scheme as https
        url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(given) ? given : `https://${given}`)
      } catch {
        return bad("invalid webhook URL specified")
      }
      if (url.protocol !== "https:" && url.protocol !== "http:") return bad("invalid webhook URL specified")
      const secret = stringParam(params.secret_token)
      if (secret.length > 256) return bad("secret token is too long")
      if (!/^[A-Za-z0-9_-]*$/.test(secret)) return bad("secret token contains unallowed characters")
      // Telegram demands HTTPS on port 80, 88, 443 or 8443 (and refuses reserved IPs such as 127.0.0.1); local tests
      // cannot serve HTTPS on such a port, so the fake also takes http://127.0.0.1 and http://localhost, any port
      if (!isLocal(url.hostname)) {
        if (url.protocol === "http:") return bad("bad webhook: An HTTPS URL must be provided for webhook")
        if (!["", "80", "88", "8443"].includes(url.port)) {
          return bad("bad webhook: Webhook can be set up only on ports 80, 88, 443 or 8443")
        }
      }
      const allowed = jsonParam(params.allowed_updates)
      if (params.allowed_updates !== undefined && !Array.isArray(allowed)) {
        return bad("can't parse allowed updates JSON object")
      }
      const webhook = {
        url: given,
        secret_token: secret === "" ? undefined : secret,
        // as Telegram: without allowed_updates the previous setting stays
        allowed_updates: Array.isArray(allowed) ? allowed.map(String) : previous?.allowed_updates
      }
      state.webhook = webhook
      const same = previous !== null && previous.url === webhook.url && previous.secret_token === webhook.secret_token
      return ok(true, same ? "Webhook is already set" : "Webhook was set")
    }

    const answer = async (method: string, params: Record<string, unknown>, uploads: Map<string, Upload>) => {
      switch (method) {
        case "getMe":
          return ok({
            ...botUser(),
            can_join_groups: true,
            can_read_all_group_messages: false,
            supports_inline_queries: false
          })
        case "setWebhook":
          return setWebhook(params)
        case "deleteWebhook": {
          const had = state.webhook !== null
          state.webhook = null
          return ok(true, had ? "Webhook was deleted" : "Webhook is already deleted")
        }
        case "getWebhookInfo": {
          const webhook = state.webhook
          return ok({
            url: webhook?.url ?? "",
            has_custom_certificate: false,
            pending_update_count: 0,
            ...(webhook === null ? {} : { max_connections: 40, ip_address: "127.0.0.1" }),
            ...(webhook?.allowed_updates === undefined ? {} : { allowed_updates: webhook.allowed_updates })
          })
        }
        case "getUpdates":
          return state.webhook === null
            ? ok([])
            : fail(409, WEBHOOK_ACTIVE)
        case "sendChatAction": {
          if (!CHAT_ACTIONS.includes(stringParam(params.action).toLowerCase())) {
            return bad("wrong parameter action in request")
          }
          const chat = chatOf(params)
          return "status" in chat ? chat : ok(true)
        }
        case "answerCallbackQuery": {
          // a button press is answered once, within Telegram's time; an unknown or answered one is refused
          const id = stringParam(params.callback_query_id)
          if (!state.callbacks.delete(id)) {
            return bad("query is too old and response timeout expired or query ID is invalid")
          }
          return ok(true)
        }
        case "getFile": {
          const fileId = stringParam(params.file_id)
          const file = state.files.get(fileId)
          if (file === undefined) return bad("invalid file_id")
          if ((file.size ?? file.bytes.length) > MAX_DOWNLOAD) return bad("file is too big")
          return ok({
            file_id: fileId,
            file_unique_id: uniqueOf(fileId),
            ...(file.size === null ? {} : { file_size: file.size }),
            file_path: file.path
          })
        }
        default:
          return send(method, params, uploads)
      }
    }

    const handle = async (req: Http.IncomingMessage, raw: Buffer, res: Http.ServerResponse) => {
      const url = new URL(req.url ?? "/", "http://fake")
      const reply = ({ status, body }: Answer) => {
        const retryAfter = (body as any)?.parameters?.retry_after
        res.writeHead(status, {
          "content-type": "application/json",
          ...(typeof retryAfter === "number" ? { "retry-after": String(retryAfter) } : {})
        }).end(JSON.stringify(body))
      }
      const download = /^\/file\/bot([^/]*)\/(.+)$/.exec(url.pathname)
      if (download !== null) {
        if (decodeURIComponent(download[1]!) !== state.token) return reply(fail(401, "Unauthorized"))
        const path = decodeURIComponent(download[2]!)
        const file = [...state.files.values()].find((f) => f.path === path)
        if (file === undefined) return reply(fail(404, "Not Found"))
        return res.writeHead(200, {
          "content-type": "application/octet-stream",
          "content-length": String(file.bytes.length)
        }).end(file.bytes)
      }
      const call = /^\/bot([^/]*)\/(.+)$/.exec(url.pathname)
      if (call === null) return reply(fail(404, "Not Found"))
      const token = decodeURIComponent(call[1]!)
      const method = CANONICAL.get(call[2]!.toLowerCase()) ?? call[2]!
      const read = await readParams(req, raw, url)
      state.requests.push({
        method,
        body: "params" in read ? read.params : raw.toString("utf8"),
        token,
        at: Date.now()
      })
      if (token !== state.token) return reply(fail(401, "Unauthorized"))
      if (!METHODS.includes(method)) return reply(fail(404, "Not Found"))
      if (!("params" in read)) return reply(read)
      if (state.hang && (method === "sendMessage" || method in MEDIA)) return
      return reply(await answer(method, read.params, read.uploads))
    }

    const update = (fields: Record<string, unknown>): TelegramUpdate => {
      const query = fields.callback_query as { id?: unknown } | undefined
      if (typeof query?.id === "string") state.callbacks.add(query.id)
      return { update_id: state.nextUpdateId++, ...fields }
    }

    const message = (chat: TelegramUser, fields: Record<string, unknown>): TelegramMessageUpdate => {
      const names = {
        first_name: chat.first_name,
        ...(chat.last_name === undefined ? {} : { last_name: chat.last_name }),
        ...(chat.username === undefined ? {} : { username: chat.username })
      }
      state.chats.set(chat.id, { ...names, blocked: state.chats.get(chat.id)?.blocked ?? false })
      return {
        update_id: state.nextUpdateId++,
        message: {
          message_id: state.nextMessageId++,
          from: { id: chat.id, is_bot: false, ...names, language_code: "en" },
          chat: { id: chat.id, type: "private", ...names },
          date: Math.floor(Date.now() / 1000),
          ...fields
        }
      }
    }

    const post = async (body: object, postOptions: { readonly secret?: string | null } = {}) => {
      const webhook = state.webhook
      if (webhook === null) throw new Error("FakeTelegram.post: no webhook is set (setWebhook was not called)")
      const url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(webhook.url) ? webhook.url : `https://${webhook.url}`)
      const headers: Record<string, string> = { "content-type": "application/json" }
      // Telegram sends a URL's user:password as Basic authorization (fetch refuses credentials in the URL)
      if (url.username !== "" || url.password !== "") {
        const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`
        headers.authorization = `Basic ${Buffer.from(credentials).toString("base64")}`
        url.username = ""
        url.password = ""
      }
      const secret = postOptions.secret === undefined ? webhook.secret_token : postOptions.secret
      if (secret !== null && secret !== undefined) headers["x-telegram-bot-api-secret-token"] = secret
      return fetch(url, { method: "POST", headers, body: JSON.stringify(body) })
    }

    return Effect.acquireRelease(
      Effect.promise(() =>
        new Promise<Http.Server>((resolve) => {
          const server = Http.createServer((req, res) => {
            const chunks: Array<Buffer> = []
            req.on("data", (c: Buffer) => chunks.push(c))
            req.on("end", () => {
              handle(req, Buffer.concat(chunks), res).catch(() => {
                if (!res.headersSent) {
                  res.writeHead(500, { "content-type": "application/json" }).end(
                    JSON.stringify(telegramError(500, "Internal Server Error"))
                  )
                }
              })
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
    ).pipe(
      Effect.map((server): FakeTelegram => ({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        state,
        addFile,
        addChat,
        update,
        message,
        post
      }))
    )
  })

/** The fake Bot API: its base URL (TELEGRAM_API_URL), its state, and helpers to script it. */
export interface FakeTelegram {
  /** `http://127.0.0.1:{port}`: methods at `{url}/bot{token}/{method}`, files at `{url}/file/bot{token}/{path}`. */
  readonly url: string
  readonly state: FakeTelegramState
  /** Adds a file `getFile` serves at `path` (`size`: what Telegram states, default the bytes' length, null none). */
  readonly addFile: (bytes: Buffer, options: { readonly path: string; readonly size?: number | null }) => string
  /** Lets the bot write to `chatId` (a user who started it). */
  readonly addChat: (chatId: number) => void
  /** An update with the next update_id and `fields` (`{ callback_query: … }`, `{ edited_message: … }`). */
  readonly update: (fields: Record<string, unknown>) => TelegramUpdate
  /**
   * A message update from `chat`'s user in its private chat, with the next ids and `fields` (`{ text: "hi" }`,
   * `{ photo: [...] }`); the chat becomes one the bot can write to.
   */
  readonly message: (chat: TelegramUser, fields: Record<string, unknown>) => TelegramMessageUpdate
  /**
   * POSTs `update` to the webhook as Telegram delivers it: JSON with `X-Telegram-Bot-Api-Secret-Token` from
   * `setWebhook` (or `options.secret`; null: no header). Throws when no webhook is set.
   */
  readonly post: (update: object, options?: { readonly secret?: string | null }) => Promise<Response>
}
