/**
 * `POST {receiver_url}/web-chat/message` (SPEC.md 4.4): one inbound message, multipart or JSON, with the
 * receiver's own envelope `{status, message, data}`. The message row is committed before the 200.
 */
import { HttpLayerRouter, HttpServerRequest, HttpServerResponse, Multipart } from "@effect/platform"
import { NodeHttpServerRequest, NodeMultipart } from "@effect/platform-node"
import {
  Attachment,
  classifyFile,
  type FileEntry,
  findUnstorableText,
  InboundMessage,
  ipAllowed,
  issuesToValidation,
  jsonNestsDeeperThan,
  originAllowed,
  storableName,
  ulid,
  unstorableMessage,
  type WebChannel
} from "@parley/domain"
import { Data, Effect, Layer, Option, ParseResult, Redacted, Schema, Stream } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as NodeStreamP from "node:stream/promises"
import { FileStorage } from "../files/FileStorage.js"
import { corsFor } from "../http/Cors.js"
import { VisitorSessions } from "./VisitorSessions.js"
import { WebChat } from "./WebChat.js"

const MB = 1024 * 1024
export const MAX_FILES = 10
export const MAX_FILE_BYTES = 5 * MB
/**
 * The parser counts a part's headers into its size: it stops a little later, and each file's size is then checked
 * exactly.
 */
const PART_HEADERS_ALLOWANCE = 16 * 1024

class Refused
  extends Data.TaggedError("Refused")<{ readonly status: number; readonly message: string; readonly data?: unknown }>
{}

const reply = (status: number, message: string, data: unknown = null) =>
  HttpServerResponse.unsafeJson({ status: status < 300, message, data }, { status })

const basicCredentials = (header: string | undefined) => {
  if (header === undefined || !/^basic /i.test(header)) return Option.none()
  const decoded = Buffer.from(header.slice(6).trim(), "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  return colon < 0
    ? Option.none()
    : Option.some({ clientId: decoded.slice(0, colon), secret: Redacted.make(decoded.slice(colon + 1)) })
}

const validationFailed = (error: ParseResult.ParseError) => {
  const validation = issuesToValidation(ParseResult.ArrayFormatter.formatErrorSync(error))
  return new Refused({
    status: 400,
    message: validation[0]?.message ?? "The given data was invalid.",
    data: { validation }
  })
}

/** `name.pdf` stays readable in the key; anything else in it becomes `_`. */
const safeName = (name: string) => name.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^\.+/, "_").slice(-100) || "file"

const isTooLarge = (error: Multipart.MultipartError) => {
  const cause = error.cause as { _tag?: string } | undefined
  return error.reason === "FileTooLarge" || error.reason === "BodyTooLarge" || error.reason === "TooManyParts" ||
    (error.reason === "InternalError" && cause?._tag === "ReachedLimit")
}

interface Upload {
  readonly name: string
  readonly contentType: string
  readonly path: string
}

interface Parsed {
  readonly body: unknown
  readonly uploads: ReadonlyArray<Upload>
}

/**
 * Fields, and each `files`/`files[]` part in its own temp file (removed with the request's scope).
 * Not `request.multipart`: it names temp files after the client's file name, so two parts both named
 * `image.jpg` would end up as one file. File parts under other field names are read and dropped (SPEC.md 4.4).
 */
const readParts = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const dir = yield* Effect.acquireRelease(
      Effect.promise(() => Fs.promises.mkdtemp(Path.join(Os.tmpdir(), "parley-upload-"))),
      (dir) => Effect.promise(() => Fs.promises.rm(dir, { recursive: true, force: true }))
    )
    const fields: Record<string, string | Array<string>> = {}
    const uploads: Array<Upload> = []
    yield* Stream.runForEach(request.multipartStream, (part) => {
      if (part._tag === "Field") {
        const before = fields[part.key]
        fields[part.key] = before === undefined
          ? part.value
          : [...(typeof before === "string" ? [before] : before), part.value]
        return Effect.void
      }
      if ((part.key !== "files" && part.key !== "files[]") || part.name === "") return Stream.runDrain(part.content)
      const upload: Upload = {
        name: storableName(part.name),
        contentType: storableName(part.contentType),
        path: Path.join(dir, String(uploads.length))
      }
      uploads.push(upload)
      return Effect.tryPromise({
        try: async (signal) => {
          await NodeStreamP.pipeline(NodeMultipart.fileToReadable(part), Fs.createWriteStream(upload.path), { signal })
          return (await Fs.promises.stat(upload.path)).size
        },
        catch: (cause) => new Multipart.MultipartError({ reason: "InternalError", cause })
      }).pipe(Effect.filterOrFail(
        (size) => size <= MAX_FILE_BYTES,
        (size) => new Multipart.MultipartError({ reason: "FileTooLarge", cause: `${size} bytes` })
      ))
    })
    return { fields, uploads }
  })

const parseBody = (request: HttpServerRequest.HttpServerRequest) => {
  const type = (request.headers["content-type"] ?? "").toLowerCase()
  if (type.includes("multipart/form-data")) {
    return Multipart.withLimits(readParts(request), {
      maxFileSize: Option.some(MAX_FILE_BYTES + PART_HEADERS_ALLOWANCE),
      maxParts: Option.some(64),
      maxFieldSize: MB
    }).pipe(
      // the parser stopped reading mid-body: drain the rest, or the client sees a reset instead of the answer
      Effect.tapError(() => Effect.sync(() => NodeHttpServerRequest.toIncomingMessage(request).resume())),
      Effect.mapError((e) =>
        e._tag === "MultipartError" && isTooLarge(e)
          ? new Refused({
            status: 413,
            message: `Each file may be at most 5 MB, and at most ${MAX_FILES} files per message.`
          })
          : new Refused({ status: 400, message: "The multipart body could not be read." })
      ),
      Effect.flatMap((parts) =>
        Effect.gen(function*() {
          const uploads = parts.uploads
          const fields: Record<string, unknown> = {}
          // a repeated field is no single value: left out, so validation names it
          for (const [key, value] of Object.entries(parts.fields)) if (typeof value === "string") fields[key] = value
          if (typeof fields.attachments === "string") {
            if (jsonNestsDeeperThan(fields.attachments)) {
              return yield* new Refused({ status: 400, message: "The attachments field nests too deeply." })
            }
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

  // a web channel's server: Basic client_id:client_secret; a website visitor: the widget session (Bearer)
  const authorization = request.headers["authorization"] ?? ""
  const origin = request.headers["origin"]
  let channel: Pick<WebChannel, "id" | "workspace_id" | "pipeline_id" | "client_id" | "allowed_ips">
  let visitorKey: string | undefined
  const bearer = /^bearer (.+)$/i.exec(authorization)?.[1]
  if (bearer !== undefined) {
    const visitor = yield* Effect.flatMap(VisitorSessions, (v) => v.authenticate(bearer.trim(), origin)).pipe(
      Effect.mapError((e) => new Refused({ status: e._tag === "Unauthorized" ? 401 : 403, message: e.message }))
    )
    channel = visitor.channel
    visitorKey = visitor.contactKey
  } else {
    const credentials = basicCredentials(authorization)
    if (Option.isNone(credentials)) return yield* new Refused({ status: 401, message: "Invalid client credentials" })
    const web = yield* webChat.authenticate(credentials.value.clientId, credentials.value.secret).pipe(
      Effect.mapError((e) => new Refused({ status: e._tag === "Unauthorized" ? 401 : 422, message: e.message }))
    )
    if (!originAllowed(origin, web.allowed_origins)) {
      return yield* new Refused({ status: 403, message: "Origin not allowed" })
    }
    channel = web
  }
  if (!ipAllowed(Option.getOrElse(request.remoteAddress, () => ""), channel.allowed_ips)) {
    return yield* new Refused({ status: 403, message: "IP address not allowed" })
  }

  const idempotencyKey = request.headers["idempotency-key"]
  if (idempotencyKey !== undefined && (idempotencyKey.length === 0 || idempotencyKey.length > 255)) {
    return yield* new Refused({ status: 400, message: "The Idempotency-Key header must be 1 to 255 characters." })
  }
  const parsed = yield* parseBody(request)
  if (parsed.uploads.length > MAX_FILES) {
    return yield* new Refused({ status: 413, message: `At most ${MAX_FILES} files per message.` })
  }
  // JSON bodies were checked by the listener's guard; multipart fields arrive here first
  const unstorable = findUnstorableText(parsed.body)
  if (unstorable) {
    const message = `The ${unstorable.field} field ${unstorableMessage(unstorable.reason)}.`
    return yield* new Refused({ status: 400, message, data: { validation: [{ field: unstorable.field, message }] } })
  }
  const input = yield* Schema.decodeUnknown(InboundMessage)(parsed.body).pipe(Effect.mapError(validationFailed))
  if (visitorKey !== undefined && input.contact_id !== visitorKey) {
    return yield* new Refused({ status: 403, message: "The contact_id does not belong to this widget session." })
  }
  const attachments: ReadonlyArray<Attachment> = input.attachments ?? []

  // JSON carries files uploaded before: their keys must be this channel's and exist
  const prefix = `uploads/${channel.client_id}/`
  const referenced: Array<FileEntry> = []
  for (const file of parsed.uploads.length === 0 ? input.files ?? [] : []) {
    const stored = file.path.startsWith(prefix) ? yield* webChat.storedFile(channel, file.path) : Option.none()
    if (Option.isNone(stored)) return yield* new Refused({ status: 400, message: "Invalid file path" })
    referenced.push(stored.value)
  }
  if (
    input.message.trim() === "" && parsed.uploads.length === 0 && referenced.length === 0 && attachments.length === 0
  ) {
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
    ...uploads.map((u) => ({
      path: u.key,
      mimetype: u.mimetype,
      type: classifyFile(u.mimetype),
      size: u.size,
      name: u.name
    })),
    ...referenced
  ]
  const messageId = yield* webChat.receive(
    channel,
    { contactKey: input.contact_id, message: input.message, files: entries, attachments },
    idempotencyKey,
    uploads
  ).pipe(Effect.onError(() => Effect.forEach(uploads, (u) => storage.remove(u.key))))
  return reply(200, "Message received.", { message_id: messageId })
}).pipe(
  Effect.scoped,
  Effect.catchTag("Refused", (e) => Effect.succeed(reply(e.status, e.message, e.data ?? null))),
  Effect.withSpan("Receiver.message")
)

/** Browsers post here from widget pages on other origins (CORS: see http/Cors.ts). */
export const ReceiverRoutes = Layer.mergeAll(
  HttpLayerRouter.add("POST", "/web-chat/message", receive),
  corsFor((path) => path === "/web-chat/message")
)
