/**
 * The web chat's rules for one message posted to its receiver (SPEC.md 4.4): who may post (a web channel's server
 * with Basic `client_id:client_secret`, or a website visitor with its widget session), from where, what the fields
 * must hold, which stored files a JSON body may name; then the uploads are stored and the message received. The
 * route (Receiver.ts) reads the transport and answers in the receiver's envelope.
 */
import {
  type Attachment,
  classifyFile,
  type FileEntry,
  findUnstorableText,
  InboundMessage,
  ipAllowed,
  issuesToValidation,
  originAllowed,
  ulid,
  unstorableMessage,
  type WebChannel
} from "@parley/domain"
import { Data, Effect, Option, ParseResult, Redacted, Schema, type Scope } from "effect"
import * as Fs from "node:fs"
import { FileStorage } from "../files/FileStorage.js"
import { VisitorSessions } from "./VisitorSessions.js"
import { WebChat } from "./WebChat.js"
import { basicCredentials } from "./WebChatProvider.js"

export const MAX_FILES = 10
export const MAX_FILE_BYTES = 5 * 1024 * 1024

/** A refusal in the receiver's envelope: its status, message and `data`. */
export class Refused
  extends Data.TaggedError("Refused")<{ readonly status: number; readonly message: string; readonly data?: unknown }>
{}

/** A file part the transport saved to a temp file. */
export interface Upload {
  readonly name: string
  readonly contentType: string
  readonly path: string
}

/** The body as the transport read it: its fields, and the file parts saved to temp files. */
export interface ReceivedBody {
  readonly body: unknown
  readonly uploads: ReadonlyArray<Upload>
}

/** What the route read off one request; the body is read only once the sender is allowed. */
export interface ReceivedRequest {
  readonly authorization: string
  readonly origin: string | undefined
  readonly address: string
  readonly idempotencyKey: string | undefined
  readonly readBody: Effect.Effect<ReceivedBody, Refused, Scope.Scope>
}

type Poster = Pick<WebChannel, "id" | "workspace_id" | "pipeline_id" | "client_id" | "allowed_ips">

const validationFailed = (error: ParseResult.ParseError) => {
  const validation = issuesToValidation(ParseResult.ArrayFormatter.formatErrorSync(error))
  return new Refused({
    status: 400,
    message: validation[0]?.message ?? "The given data was invalid.",
    data: { validation }
  })
}

const messageRequired = new Refused({
  status: 400,
  message: "The message field is required.",
  data: { validation: [{ field: "message", message: "The message field is required." }] }
})

/** `name.pdf` stays readable in the key; anything else in it becomes `_`. */
const safeName = (name: string) => name.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^\.+/, "_").slice(-100) || "file"

export class WebChatInbound extends Effect.Service<WebChatInbound>()("@parley/server/WebChatInbound", {
  dependencies: [WebChat.Default, FileStorage.Default],
  effect: Effect.gen(function*() {
    const webChat = yield* WebChat
    const storage = yield* FileStorage
    const visitors = yield* VisitorSessions

    /** The channel posting, and the visitor's own contact id when a widget session posts. */
    const poster = Effect.fn("WebChatInbound.poster")(function*(request: ReceivedRequest) {
      const bearer = /^bearer (.+)$/i.exec(request.authorization)?.[1]
      let channel: Poster
      let visitorKey: string | undefined
      if (bearer !== undefined) {
        const visitor = yield* visitors.authenticate(bearer.trim(), request.origin).pipe(
          Effect.mapError((e) => new Refused({ status: e._tag === "Unauthorized" ? 401 : 403, message: e.message }))
        )
        channel = visitor.channel
        visitorKey = visitor.contactKey
      } else {
        const credentials = basicCredentials(request.authorization)
        if (Option.isNone(credentials)) {
          return yield* new Refused({ status: 401, message: "Invalid client credentials" })
        }
        const web = yield* webChat.authenticate(credentials.value.clientId, Redacted.make(credentials.value.secret))
          .pipe(
            Effect.mapError((e) => new Refused({ status: e._tag === "Unauthorized" ? 401 : 422, message: e.message }))
          )
        if (!originAllowed(request.origin, web.allowed_origins)) {
          return yield* new Refused({ status: 403, message: "Origin not allowed" })
        }
        channel = web
      }
      if (!ipAllowed(request.address, channel.allowed_ips)) {
        return yield* new Refused({ status: 403, message: "IP address not allowed" })
      }
      return { channel, visitorKey }
    })

    /** The message the body holds, checked. */
    const message = Effect.fn("WebChatInbound.message")(function*(request: ReceivedBody) {
      if (request.uploads.length > MAX_FILES) {
        return yield* new Refused({ status: 413, message: `At most ${MAX_FILES} files per message.` })
      }
      // JSON bodies were checked by the listener's guard; multipart fields arrive here first
      const unstorable = findUnstorableText(request.body)
      if (unstorable) {
        const message = `The ${unstorable.field} field ${unstorableMessage(unstorable.reason)}.`
        return yield* new Refused({
          status: 400,
          message,
          data: { validation: [{ field: unstorable.field, message }] }
        })
      }
      return yield* Schema.decodeUnknown(InboundMessage)(request.body).pipe(Effect.mapError(validationFailed))
    })

    /** JSON carries files uploaded before: their keys must be this channel's and exist. */
    const referencedFiles = Effect.fn("WebChatInbound.referencedFiles")(
      function*(channel: Poster, files: ReadonlyArray<{ readonly path: string }>) {
        const prefix = `uploads/${channel.client_id}/`
        const referenced: Array<FileEntry> = []
        for (const file of files) {
          const stored = file.path.startsWith(prefix) ? yield* webChat.storedFile(channel, file.path) : Option.none()
          if (Option.isNone(stored)) return yield* new Refused({ status: 400, message: "Invalid file path" })
          referenced.push(stored.value)
        }
        return referenced
      }
    )

    /** Each upload moved into storage under the channel's prefix. */
    const storeUploads = (channel: Poster, uploads: ReadonlyArray<Upload>) => {
      const now = new Date()
      const month = `${now.getUTCFullYear()}/${String(now.getUTCMonth() + 1).padStart(2, "0")}`
      return Effect.forEach(uploads, (upload) =>
        Effect.gen(function*() {
          const key = `uploads/${channel.client_id}/${month}/${ulid()}/${safeName(upload.name)}`
          const size = (yield* Effect.promise(() => Fs.promises.stat(upload.path))).size
          yield* storage.putFromPath(key, upload.path)
          return { key, name: upload.name, mimetype: upload.contentType || "application/octet-stream", size }
        }))
    }

    /** The message's id once it is committed; a refusal otherwise, with nothing stored. */
    const accept = Effect.fn("WebChatInbound.accept")(function*(request: ReceivedRequest) {
      const { channel, visitorKey } = yield* poster(request)
      const key = request.idempotencyKey
      if (key !== undefined && (key.length === 0 || key.length > 255)) {
        return yield* new Refused({ status: 400, message: "The Idempotency-Key header must be 1 to 255 characters." })
      }
      const received = yield* request.readBody
      const input = yield* message(received)
      if (visitorKey !== undefined && input.contact_id !== visitorKey) {
        return yield* new Refused({ status: 403, message: "The contact_id does not belong to this widget session." })
      }
      const attachments: ReadonlyArray<Attachment> = input.attachments ?? []
      const referenced = yield* referencedFiles(channel, received.uploads.length === 0 ? input.files ?? [] : [])
      const empty = input.message.trim() === "" && referenced.length === 0 && attachments.length === 0
      if (empty && received.uploads.length === 0) return yield* messageRequired

      const uploads = yield* storeUploads(channel, received.uploads)
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
      return yield* webChat.receive(
        channel,
        { contactKey: input.contact_id, message: input.message, files: entries, attachments },
        request.idempotencyKey,
        uploads
      ).pipe(Effect.onError(() => Effect.forEach(uploads, (u) => storage.remove(u.key))))
    })

    return { accept }
  })
}) {}
