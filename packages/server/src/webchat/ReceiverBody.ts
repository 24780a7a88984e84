/**
 * The receiver's body as it arrives: JSON, or multipart with each `files`/`files[]` part streamed to a temp file
 * of its own (removed with the request's scope). Only transport is decided here; what the fields must hold is the
 * web chat's rule (Inbound.ts).
 */
import { HttpServerRequest, Multipart } from "@effect/platform"
import { NodeHttpServerRequest, NodeMultipart } from "@effect/platform-node"
import { jsonNestsDeeperThan, storableName } from "@parley/domain"
import { Effect, Option, Stream } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as NodeStreamP from "node:stream/promises"
import { MAX_FILE_BYTES, MAX_FILES, type ReceivedBody, Refused, type Upload } from "./Inbound.js"

const MB = 1024 * 1024
/**
 * The parser counts a part's headers into its size: it stops a little later, and each file's size is then checked
 * exactly.
 */
const PART_HEADERS_ALLOWANCE = 16 * 1024

const isTooLarge = (error: Multipart.MultipartError) => {
  const cause = error.cause as { _tag?: string } | undefined
  return error.reason === "FileTooLarge" || error.reason === "BodyTooLarge" || error.reason === "TooManyParts" ||
    (error.reason === "InternalError" && cause?._tag === "ReachedLimit")
}

/**
 * Fields, and each file part in its own temp file. Not `request.multipart`: it names temp files after the client's
 * file name, so two parts both named `image.jpg` would end up as one file. File parts under other field names are
 * read and dropped (SPEC.md 4.4).
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

const multipartBody = (request: HttpServerRequest.HttpServerRequest) =>
  Multipart.withLimits(readParts(request), {
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
        return { body: fields, uploads: parts.uploads } satisfies ReceivedBody
      })
    )
  )

/** The request's body; needs a scope, which removes the temp files. */
export const receivedBody = (request: HttpServerRequest.HttpServerRequest) => {
  const type = (request.headers["content-type"] ?? "").toLowerCase()
  if (type.includes("multipart/form-data")) return multipartBody(request)
  return request.json.pipe(
    Effect.mapError(() => new Refused({ status: 400, message: "The request body is not valid JSON." })),
    Effect.map((body): ReceivedBody => ({ body, uploads: [] }))
  )
}
