/**
 * `POST {receiver_url}/web-chat/message` (SPEC.md 4.4): one inbound message, multipart or JSON, with the
 * receiver's own envelope `{status, message, data}`. The message row is committed before the 200.
 */
import { HttpLayerRouter, HttpServerRequest, HttpServerResponse, Multipart } from "@effect/platform"
import {
  Attachment,
  classifyFile,
  type FileEntry,
  InboundMessage,
  ipAllowed,
  issuesToValidation,
  originAllowed,
  ulid,
  type WebChannel
} from "@parley/domain"
import { Data, Effect, Option, ParseResult, Redacted, Schema } from "effect"
import * as Fs from "node:fs"
import { FileStorage } from "../files/FileStorage.js"
import { WebChat } from "./WebChat.js"

const MB = 1024 * 1024
export const MAX_FILES = 10
export const MAX_FILE_BYTES = 5 * MB

class Refused extends Data.TaggedError("Refused")<{ readonly status: number; readonly message: string; readonly data?: unknown }> {}

const reply = (status: number, message: string, data: unknown = null) =>
  HttpServerResponse.unsafeJson({ status: status < 300, message, data }, { status })

const basicCredentials = (header: string | undefined) => {
  if (header === undefined || !/^basic /i.test(header)) return Option.none()
  const decoded = Buffer.from(header.slice(6).trim(), "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  return colon < 0 ? Option.none() : Option.some({ clientId: decoded.slice(0, colon), secret: Redacted.make(decoded.slice(colon + 1)) })
}

const validationFailed = (error: ParseResult.ParseError) => {
  const validation = issuesToValidation(ParseResult.ArrayFormatter.formatErrorSync(error))
  return new Refused({ status: 400, message: validation[0]?.message ?? "The given data was invalid.", data: { validation } })
}

/** `name.pdf` stays readable in the key; anything else in it becomes `_`. */
const safeName = (name: string) => name.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^\.+/, "_").slice(-100) || "file"

const isTooLarge = (error: Multipart.MultipartError) => {
  const cause = error.cause as { _tag?: string } | undefined
  return error.reason === "FileTooLarge" || error.reason === "BodyTooLarge" || error.reason === "TooManyParts" ||
    (error.reason === "InternalError" && cause?._tag === "ReachedLimit")
}

interface Parsed {
  readonly body: unknown
  readonly uploads: ReadonlyArray<Multipart.PersistedFile>
}

const parseBody = (request: HttpServerRequest.HttpServerRequest) => {
  const type = (request.headers["content-type"] ?? "").toLowerCase()
  if (type.includes("multipart/form-data")) {
    return Multipart.withLimits(request.multipart, {
      maxFileSize: Option.some(MAX_FILE_BYTES),
      maxParts: Option.some(64),
      maxFieldSize: MB
    }).pipe(
      Effect.mapError((e) =>
        e._tag === "MultipartError" && isTooLarge(e)
          ? new Refused({ status: 413, message: `Each file may be at most 5 MB, and at most ${MAX_FILES} files per message.` })
          : new Refused({ status: 400, message: "The multipart body could not be read." })
      ),
      Effect.flatMap((persisted) =>
        Effect.gen(function*() {
          const uploads: Array<Multipart.PersistedFile> = []
          const fields: Record<string, unknown> = {}
          for (const [key, value] of Object.entries(persisted)) {
            if (key === "files" || key === "files[]") {
              if (typeof value !== "string") uploads.push(...(value as ReadonlyArray<Multipart.PersistedFile>))
            } else if (typeof value === "string") {
              fields[key] = value
            }
            // file parts under other field names are ignored (SPEC.md 4.4)
          }
          if (typeof fields.attachments === "string") {
            fields.attachments = yield* Effect.try({
              try: () => JSON.parse(fields.attachments as string) as unknown,
              catch: () => new Refused({ status: 400, message: "The attachments field must be a JSON array." })
            })
          }
          return { body: fields, uploads } satisfies Parsed
        })
      )
    )
  }
  return request.json.pipe(
    Effect.mapError(() => new Refused({ status: 400, message: "The request body is not valid JSON." })),
    Effect.map((body): Parsed => ({ body, uploads: [] }))
  )
}

export const receive = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const webChat = yield* WebChat
  const storage = yield* FileStorage

  const credentials = basicCredentials(request.headers["authorization"])
  if (Option.isNone(credentials)) return yield* new Refused({ status: 401, message: "Invalid client credentials" })
  const channel: WebChannel = yield* webChat.authenticate(credentials.value.clientId, credentials.value.secret).pipe(
    Effect.mapError((e) => new Refused({ status: e._tag === "Unauthorized" ? 401 : 422, message: e.message }))
  )
  if (!originAllowed(request.headers["origin"], channel.allowed_origins)) {
    return yield* new Refused({ status: 403, message: "Origin not allowed" })
  }
  if (!ipAllowed(Option.getOrElse(request.remoteAddress, () => ""), channel.allowed_ips)) {
    return yield* new Refused({ status: 403, message: "IP address not allowed" })
  }

  const parsed = yield* parseBody(request)
  if (parsed.uploads.length > MAX_FILES) {
    return yield* new Refused({ status: 413, message: `At most ${MAX_FILES} files per message.` })
  }
  const input = yield* Schema.decodeUnknown(InboundMessage)(parsed.body).pipe(Effect.mapError(validationFailed))
  const attachments: ReadonlyArray<Attachment> = input.attachments ?? []

  // JSON carries files uploaded before: their keys must be this channel's and exist
  const prefix = `uploads/${channel.client_id}/`
  const referenced: Array<FileEntry> = []
  for (const file of parsed.uploads.length === 0 ? input.files ?? [] : []) {
    const stored = file.path.startsWith(prefix) ? yield* webChat.storedFile(channel, file.path) : Option.none()
    if (Option.isNone(stored)) return yield* new Refused({ status: 400, message: "Invalid file path" })
    referenced.push(stored.value)
  }
  if (input.message.trim() === "" && parsed.uploads.length === 0 && referenced.length === 0 && attachments.length === 0) {
    return yield* new Refused({
      status: 400,
      message: "The message field is required.",
      data: { validation: [{ field: "message", message: "The message field is required." }] }
    })
  }

  const now = new Date()
  const month = `${now.getUTCFullYear()}/${String(now.getUTCMonth() + 1).padStart(2, "0")}`
  const uploads = yield* Effect.forEach(parsed.uploads, (upload) =>
    Effect.gen(function*() {
      const key = `${prefix}${month}/${ulid()}/${safeName(upload.name)}`
      const size = (yield* Effect.promise(() => Fs.promises.stat(upload.path))).size
      yield* storage.putFromPath(key, upload.path)
      return { key, name: upload.name, mimetype: upload.contentType || "application/octet-stream", size }
    }))
  const entries: Array<FileEntry> = [
    ...uploads.map((u) => ({ path: u.key, mimetype: u.mimetype, type: classifyFile(u.mimetype), size: u.size, name: u.name })),
    ...referenced
  ]
  const messageId = yield* webChat.receive(
    channel,
    { contactKey: input.contact_id, message: input.message, files: entries, attachments },
    request.headers["idempotency-key"]?.slice(0, 255),
    uploads
  ).pipe(Effect.onError(() => Effect.forEach(uploads, (u) => storage.remove(u.key))))
  return reply(200, "Message received.", { message_id: messageId })
}).pipe(
  Effect.scoped,
  Effect.catchTag("Refused", (e) => Effect.succeed(reply(e.status, e.message, e.data ?? null))),
  Effect.withSpan("Receiver.message")
)

export const ReceiverRoutes = HttpLayerRouter.add("POST", "/web-chat/message", receive)
