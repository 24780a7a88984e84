/**
 * The first and last thing every request on a listener meets: a request id, bounded bodies (413 before
 * reading what is too large), refusal of text Postgres cannot store (NUL, unpaired surrogates) naming
 * the field, and a logged 500 in the listener's envelope for any defect that remains.
 * docs/api.md "Limits and bad input" lists the limits.
 */
import { HttpIncomingMessage, HttpLayerRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import {
  findUnstorableText,
  jsonNestsDeeperThan,
  mayHoldUnstorableText,
  tooDeepMessage,
  ulid,
  unstorableMessage,
  type UnstorableText
} from "@parley/domain"
import { Cause, Effect, Option, Stream } from "effect"
import type * as Http from "node:http"
import { type BodyLimit, describeLimit } from "./BodyLimits.js"

/** How one listener answers: its envelope, and what limits a request's body. */
export interface ListenerPolicy {
  readonly name: string
  readonly bodyLimit: (method: string, path: string, contentType: string) => BodyLimit
  /** A refusal in this listener's envelope (`validation` names the bad fields). */
  readonly refuse: (
    path: string,
    status: number,
    message: string,
    validation?: ReadonlyArray<{ readonly field: string; readonly message: string }>
  ) => HttpServerResponse.HttpServerResponse
  /** The status for a field that holds text we cannot store: 422 on the REST API, 400 elsewhere. */
  readonly invalidTextStatus: (path: string) => number
  /** Whether body text is checked here, or by the route (MCP answers bad tool arguments as tool errors). */
  readonly checksBodyText: (path: string) => boolean
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

const requestIdOf = (request: HttpServerRequest.HttpServerRequest) => {
  const given = request.headers["x-request-id"]
  return given !== undefined && REQUEST_ID.test(given) ? given : ulid()
}

type BodyRead = { readonly _tag: "Body"; readonly bytes: Buffer } | { readonly _tag: "TooLarge" }

/**
 * Reads the body up to `limit` bytes. Past it nothing more is kept: the stream is left flowing (Node
 * discards the rest once the 413 is sent), so a client still sending reads the answer instead of a reset.
 */
const readBody = (incoming: Http.IncomingMessage, limit: number) =>
  Effect.async<BodyRead, HttpServerError.RequestError>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const cleanup = () => {
      incoming.off("data", onData)
      incoming.off("end", onEnd)
      incoming.off("error", onError)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= limit) return void chunks.push(chunk)
      cleanup()
      incoming.resume()
      resume(Effect.succeed({ _tag: "TooLarge" }))
    }
    const onEnd = () => {
      cleanup()
      resume(Effect.succeed({ _tag: "Body", bytes: Buffer.concat(chunks, size) }))
    }
    const onError = (cause: Error) => {
      cleanup()
      resume(Effect.fail(new HttpServerError.RequestError({ request: undefined as never, reason: "Decode", cause })))
    }
    incoming.on("data", onData)
    incoming.once("end", onEnd)
    incoming.once("error", onError)
    return Effect.sync(cleanup)
  })

/** The request as routes see it, its body already read: they never touch the socket again. */
const withBody = (request: HttpServerRequest.HttpServerRequest, bytes: Buffer): HttpServerRequest.HttpServerRequest => {
  const text = Effect.succeed(bytes.toString("utf8"))
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
  return Object.create(request, {
    text: { value: text },
    arrayBuffer: { value: Effect.succeed(buffer) },
    stream: { value: bytes.length === 0 ? Stream.empty : Stream.succeed(new Uint8Array(buffer)) }
  }) as HttpServerRequest.HttpServerRequest
}

const parsedBody = (contentType: string, text: string): unknown => {
  if (contentType.includes("application/x-www-form-urlencoded")) return Object.fromEntries(new URLSearchParams(text))
  if (!mayHoldUnstorableText(text)) return undefined
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined // malformed JSON: the route answers that
  }
}

const isJsonLike = (contentType: string) =>
  contentType === "" || contentType.includes("json") || contentType.includes("application/x-www-form-urlencoded")

const queryOf = (url: string) => {
  const q = url.indexOf("?")
  return q < 0 ? undefined : url.slice(q + 1)
}

type Admission =
  | { readonly _tag: "Refused"; readonly response: HttpServerResponse.HttpServerResponse }
  | { readonly _tag: "Admitted"; readonly request: HttpServerRequest.HttpServerRequest; readonly maxBody: number }

const refused = (response: HttpServerResponse.HttpServerResponse): Admission => ({ _tag: "Refused", response })

/** URL, query and body checks; an admitted request carries its body already read (multipart excepted). */
const admit = (policy: ListenerPolicy, request: HttpServerRequest.HttpServerRequest, path: string) =>
  Effect.gen(function*() {
    let decodedPath: string
    try {
      decodedPath = decodeURIComponent(path)
    } catch {
      return refused(policy.refuse(path, 400, "The request URL is not valid percent-encoded UTF-8."))
    }
    if (decodedPath.includes("\u0000")) return refused(policy.refuse(path, 404, "Not found."))
    const query = queryOf(request.url)
    if (query !== undefined) {
      const bad = findUnstorableText(Object.fromEntries(new URLSearchParams(query)))
      if (bad) return refused(invalidText(policy, path, bad))
    }

    const contentType = (request.headers["content-type"] ?? "").toLowerCase()
    const limit = policy.bodyLimit(request.method, path, contentType)
    const admitted = (r: HttpServerRequest.HttpServerRequest): Admission => ({ _tag: "Admitted", request: r, maxBody: limit.bytes })
    const length = request.headers["content-length"]
    if (request.headers["transfer-encoding"] === undefined && (length === undefined || length === "0")) return admitted(request)
    const tooLarge = () => refused(policy.refuse(path, 413, `The request body may not be larger than ${describeLimit(limit)}.`))
    if (length !== undefined && Number(length) > limit.bytes) return tooLarge()
    if (contentType.includes("multipart/form-data")) {
      if (!/;\s*boundary=/.test(contentType)) {
        return refused(policy.refuse(path, 400, "A multipart/form-data body needs a boundary parameter in its Content-Type."))
      }
      // streamed by the route's own parser, which stops at the limit (MaxBodySize)
      return admitted(request)
    }
    const read = yield* readBody(NodeHttpServerRequest.toIncomingMessage(request), limit.bytes)
    if (read._tag === "TooLarge") return tooLarge()
    if (isJsonLike(contentType)) {
      const text = read.bytes.toString("utf8")
      if (jsonNestsDeeperThan(text)) return refused(policy.refuse(path, policy.invalidTextStatus(path), tooDeepMessage))
      const bad = policy.checksBodyText(path) ? findUnstorableText(parsedBody(contentType, text)) : undefined
      if (bad) return refused(invalidText(policy, path, bad))
    }
    return admitted(withBody(request, read.bytes))
  })

const invalidText = (policy: ListenerPolicy, path: string, bad: UnstorableText) => {
  const subject = bad.field === "" ? "The request body" : `The ${bad.field} field`
  const message = `${subject} ${unstorableMessage(bad.reason)}.`
  return policy.refuse(path, policy.invalidTextStatus(path), message, [{ field: bad.field, message }])
}

/**
 * A defect (or a failure no route turned into an answer) becomes a 500 in the listener's envelope with
 * the request id, logged at Error with its cause; a client that went away is not an error.
 */
const answerDefects = (policy: ListenerPolicy, path: string, requestId: string) =>
  <E, R>(effect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.catchAllCause(effect, (cause) =>
      Effect.flatMap(HttpServerError.causeResponse(cause), ([response]) => {
        if (Cause.isInterruptedOnly(cause)) return Effect.succeed(response)
        if (response.status >= 500) {
          return Effect.logError("Request failed", cause).pipe(
            Effect.as(policy.refuse(path, 500, `Internal server error (request id ${requestId}). The error was logged.`))
          )
        }
        // the framework's own refusals (no route, an unreadable request) have empty bodies: give them the envelope
        return Effect.succeed(
          response.body._tag === "Empty" ? policy.refuse(path, response.status, FRAMEWORK_MESSAGES[response.status] ?? "The request was refused.") : response
        )
      }))

const FRAMEWORK_MESSAGES: Record<number, string> = {
  400: "The request could not be read.",
  404: "Not found.",
  405: "Method not allowed."
}

export const requestGuard = (policy: ListenerPolicy) =>
  HttpLayerRouter.middleware((app): Effect.Effect<
    HttpServerResponse.HttpServerResponse,
    // every failure is answered here; the type keeps the router's marker for what is not
    HttpLayerRouter.unhandled,
    HttpServerRequest.HttpServerRequest
  > =>
    Effect.gen(function*() {
      const original = yield* HttpServerRequest.HttpServerRequest
      const requestId = requestIdOf(original)
      const path = original.url.split("?")[0]!
      const response = yield* Effect.gen(function*() {
        const admission = yield* admit(policy, original, path)
        if (admission._tag === "Refused") return admission.response
        return yield* app.pipe(
          Effect.provideService(HttpServerRequest.HttpServerRequest, admission.request),
          HttpIncomingMessage.withMaxBodySize(Option.some(admission.maxBody))
        )
      }).pipe(
        answerDefects(policy, path, requestId),
        Effect.annotateLogs({ request_id: requestId, http_method: original.method, http_path: path, listener: policy.name })
      )
      return HttpServerResponse.setHeader(response, "x-request-id", requestId)
    }), { global: true })
