/**
 * What a request may bring, decided by the guard (RequestGuard.ts) before a route runs: a URL and query
 * that decode to storable text, and a body within its limit (413 before reading what is too large) whose
 * text Postgres can store, the bad field named in the listener's envelope.
 */
import { HttpServerError, type HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import {
  findUnstorableText,
  jsonNestsDeeperThan,
  mayHoldUnstorableText,
  tooDeepMessage,
  unstorableMessage,
  type UnstorableText
} from "@parley/domain"
import { Effect, Stream } from "effect"
import type * as Http from "node:http"
import { type BodyLimit, describeLimit } from "./BodyLimits.js"
import type { ListenerPolicy } from "./RequestGuard.js"

type BodyRead = { readonly _tag: "Body"; readonly bytes: Buffer } | { readonly _tag: "TooLarge" }

/** Reads the body up to `limit` bytes. Past it nothing more is kept: the guard discards the rest (discardBody). */
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

/** What a refused request's body may still cost before its answer goes out anyway. */
const DISCARD_MAX_BYTES = 64 * 1024 * 1024
const DISCARD_MAX_MS = 10_000

/**
 * Before a refusal is answered, the rest of the body is read and dropped (bounded in bytes and time): a
 * client that writes its whole body before it reads (and one that sent `Connection: close`, whose socket
 * Node closes as soon as the answer is out) then reads the answer instead of a reset. A client that asked
 * first (`Expect: 100-continue`) sends no body, and one past the bounds is answered at once.
 */
export const discardBody = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.async<void>((resume) => {
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    const announced = Number(request.headers["content-length"] ?? 0)
    const pending = !incoming.complete && !incoming.destroyed &&
      (request.headers["transfer-encoding"] !== undefined || announced > 0) &&
      !/100-continue/i.test(request.headers["expect"] ?? "") && announced <= DISCARD_MAX_BYTES
    if (!pending) return resume(Effect.void)
    let size = 0
    const done = () => {
      clearTimeout(timer)
      incoming.off("data", onData)
      incoming.off("end", done)
      incoming.off("close", done)
      incoming.off("error", done)
      resume(Effect.void)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > DISCARD_MAX_BYTES) done()
    }
    const timer = setTimeout(done, DISCARD_MAX_MS)
    incoming.on("data", onData)
    incoming.once("end", done)
    incoming.once("close", done)
    incoming.once("error", done)
    incoming.resume()
    return Effect.sync(done)
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

export type Admission =
  | { readonly _tag: "Refused"; readonly response: HttpServerResponse.HttpServerResponse }
  /** Nothing to read here: no body, or a multipart body the route streams up to `maxBody`. */
  | { readonly _tag: "Admitted"; readonly maxBody: number | undefined }
  | { readonly _tag: "ReadBody"; readonly limit: BodyLimit; readonly contentType: string }

const refused = (response: HttpServerResponse.HttpServerResponse) => ({ _tag: "Refused" as const, response })
const noBody: Admission = { _tag: "Admitted", maxBody: undefined }

const tooLarge = (policy: ListenerPolicy, path: string, limit: BodyLimit) =>
  policy.refuse(path, 413, `The request body may not be larger than ${describeLimit(limit)}.`)

/** What the URL, the query and the body's headers allow, decided before a byte of the body is read. */
export const admit = (
  policy: ListenerPolicy,
  request: HttpServerRequest.HttpServerRequest,
  path: string
): Admission => {
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

  const length = request.headers["content-length"]
  if (request.headers["transfer-encoding"] === undefined && (length === undefined || length === "0")) return noBody
  const contentType = (request.headers["content-type"] ?? "").toLowerCase()
  const limit = policy.bodyLimit(request.method, path, contentType)
  if (length !== undefined && Number(length) > limit.bytes) return refused(tooLarge(policy, path, limit))
  const multipart = contentType.includes("multipart/form-data")
  if (multipart && !/;\s*boundary=/.test(contentType)) {
    return refused(
      policy.refuse(path, 400, "A multipart/form-data body needs a boundary parameter in its Content-Type.")
    )
  }
  // a client that asked first (Expect: 100-continue) sends its body only now (see Listener.ts)
  if (/100-continue/i.test(request.headers["expect"] ?? "")) {
    NodeHttpServerRequest.toServerResponse(request).writeContinue()
  }
  // a multipart body is streamed by the route's own parser, which stops at the limit (MaxBodySize)
  return multipart ? { _tag: "Admitted", maxBody: limit.bytes } : { _tag: "ReadBody", limit, contentType }
}

/** Reads the body within its limit and checks its text; the route gets a request whose body is this. */
export const readAndCheck = (
  policy: ListenerPolicy,
  request: HttpServerRequest.HttpServerRequest,
  path: string,
  { contentType, limit }: { readonly limit: BodyLimit; readonly contentType: string }
) =>
  Effect.map(readBody(NodeHttpServerRequest.toIncomingMessage(request), limit.bytes), (read) => {
    if (read._tag === "TooLarge") return refused(tooLarge(policy, path, limit))
    if (isJsonLike(contentType)) {
      const text = read.bytes.toString("utf8")
      if (jsonNestsDeeperThan(text)) return refused(policy.refuse(path, policy.invalidTextStatus(path), tooDeepMessage))
      const bad = policy.checksBodyText(path) ? findUnstorableText(parsedBody(contentType, text)) : undefined
      if (bad) return refused(invalidText(policy, path, bad))
    }
    return { _tag: "Read" as const, request: withBody(request, read.bytes) }
  })

const invalidText = (policy: ListenerPolicy, path: string, bad: UnstorableText) => {
  const subject = bad.field === "" ? "The request body" : `The ${bad.field} field`
  const message = `${subject} ${unstorableMessage(bad.reason)}.`
  return policy.refuse(path, policy.invalidTextStatus(path), message, [{ field: bad.field, message }])
}
