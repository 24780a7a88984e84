/**
 * The first and last thing every request on a listener meets: a request id, bounded bodies (413 before
 * reading what is too large), refusal of text Postgres cannot store (NUL, unpaired surrogates) naming
 * the field, and a logged 500 in the listener's envelope for any defect that remains.
 * docs/api.md "Limits and bad input" lists the limits.
 */
import { HttpIncomingMessage, HttpLayerRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import {
  clientAddress,
  findUnstorableText,
  jsonNestsDeeperThan,
  mayHoldUnstorableText,
  tooDeepMessage,
  unstorableMessage,
  type UnstorableText
} from "@parley/domain"
import { Cause, Effect, Metric, MetricBoundaries, MetricLabel, Option, Stream } from "effect"
import { randomUUID } from "node:crypto"
import type * as Http from "node:http"
import { AppConfig } from "../config/AppConfig.js"
import { DATABASE_UNAVAILABLE_MESSAGE, isDatabaseUnavailable } from "../db/DatabaseUnavailable.js"
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
  return given !== undefined && REQUEST_ID.test(given) ? given : randomUUID()
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
  /** Nothing to read here: no body, or a multipart body the route streams up to `maxBody`. */
  | { readonly _tag: "Admitted"; readonly maxBody: number | undefined }
  | { readonly _tag: "ReadBody"; readonly limit: BodyLimit; readonly contentType: string }

const refused = (response: HttpServerResponse.HttpServerResponse) => ({ _tag: "Refused" as const, response })
const noBody: Admission = { _tag: "Admitted", maxBody: undefined }

const tooLarge = (policy: ListenerPolicy, path: string, limit: BodyLimit) =>
  policy.refuse(path, 413, `The request body may not be larger than ${describeLimit(limit)}.`)

/** What the URL, the query and the body's headers allow, decided before a byte of the body is read. */
const admit = (policy: ListenerPolicy, request: HttpServerRequest.HttpServerRequest, path: string): Admission => {
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
    return refused(policy.refuse(path, 400, "A multipart/form-data body needs a boundary parameter in its Content-Type."))
  }
  // a client that asked first (Expect: 100-continue) sends its body only now (see Listener.ts)
  if (/100-continue/i.test(request.headers["expect"] ?? "")) NodeHttpServerRequest.toServerResponse(request).writeContinue()
  // a multipart body is streamed by the route's own parser, which stops at the limit (MaxBodySize)
  return multipart ? { _tag: "Admitted", maxBody: limit.bytes } : { _tag: "ReadBody", limit, contentType }
}

/** Reads the body within its limit and checks its text; the route gets a request whose body is this. */
const readAndCheck = (
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

/**
 * A defect (or a failure no route turned into an answer) becomes a 500 in the listener's envelope with
 * the request id, logged at Error with its cause; a client that went away is not an error; the database
 * being away (DatabaseUnavailable.ts) is a 503 with Retry-After, logged at Warning.
 */
const answerDefects = (policy: ListenerPolicy, request: HttpServerRequest.HttpServerRequest, path: string, requestId: string) =>
  <E, R>(effect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.catchAllCause(effect, (cause) =>
      Effect.flatMap(HttpServerError.causeResponse(cause), ([response]) => {
        if (Cause.isInterruptedOnly(cause)) return Effect.succeed(response)
        if (isDatabaseUnavailable(cause)) {
          return Effect.logWarning("Request refused: the database is unavailable", String(Cause.squash(cause))).pipe(
            Effect.annotateLogs({ http_method: request.method, http_path: path, listener: policy.name }),
            Effect.as(HttpServerResponse.setHeader(policy.refuse(path, 503, DATABASE_UNAVAILABLE_MESSAGE), "retry-after", "1"))
          )
        }
        if (response.status >= 500) {
          return Effect.logError("Request failed", cause).pipe(
            Effect.annotateLogs({ http_method: request.method, http_path: path, listener: policy.name }),
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

const httpRequests = Metric.counter("parley_http_requests_total", {
  description: "HTTP requests answered, by listener, method, route and status",
  incremental: true
})
const httpDuration = Metric.histogram(
  "parley_http_request_duration_seconds",
  MetricBoundaries.fromIterable([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]),
  "Time from a request's arrival at the guard to its answer, by listener, method and route"
)

/** The two metrics of one listener, method, route and status, tagged once (tagging builds new metric keys to hash). */
const taggedMetrics = new Map<string, { readonly requests: typeof httpRequests; readonly duration: typeof httpDuration }>()

const metricsFor = (listener: string, method: string, route: string, status: number) => {
  const key = `${listener} ${method} ${route} ${status}`
  let tagged = taggedMetrics.get(key)
  if (tagged === undefined) {
    const labels = [MetricLabel.make("listener", listener), MetricLabel.make("method", method), MetricLabel.make("route", route)]
    tagged = {
      requests: Metric.taggedWithLabels(httpRequests, [...labels, MetricLabel.make("status", String(status))]),
      duration: Metric.taggedWithLabels(httpDuration, labels)
    }
    taggedMetrics.set(key, tagged)
  }
  return tagged
}

/**
 * Counts the answer under the route the router matched (the server span's `http.route`), so an id in a
 * path does not make a series of its own (the routes, methods and statuses are bounded sets).
 */
const measure = (policy: ListenerPolicy, method: string, started: number) => (response: HttpServerResponse.HttpServerResponse) =>
  Effect.flatMap(Effect.currentSpan.pipe(Effect.option), (span) => {
    const matched = Option.match(span, { onNone: () => undefined, onSome: (s) => s.attributes.get("http.route") })
    const route = typeof matched === "string" ? matched : "unmatched"
    const seconds = (performance.now() - started) / 1000
    const tagged = metricsFor(policy.name, method, route, response.status)
    return Effect.zipRight(
      Effect.zipRight(Metric.increment(tagged.requests), Metric.update(tagged.duration, seconds)),
      // the access log: at Debug, so a busy listener costs nothing until someone asks for it
      Effect.logDebug(`${method} ${typeof matched === "string" ? matched : "(unmatched)"} ${response.status}`).pipe(
        Effect.annotateLogs({ http_status: response.status, duration_ms: Math.round(seconds * 1000), listener: policy.name }),
        Effect.whenLogLevel("Debug")
      )
    )
  })

/**
 * The request as routes see it: with the client's address in place of a trusted proxy's (TRUST_PROXY),
 * so per-address limits and allowlists see clients, not the proxy.
 */
const fromClient = (request: HttpServerRequest.HttpServerRequest, trusted: ReadonlyArray<string>) => {
  if (trusted.length === 0 || Option.isNone(request.remoteAddress)) return request
  const peer = request.remoteAddress.value
  const client = clientAddress(peer, request.headers["x-forwarded-for"], trusted)
  return client === peer ? request : request.modify({ remoteAddress: client })
}

/** The guard around one request: `app` is what the listener's router answers. */
export const guard = (policy: ListenerPolicy, trustedProxies: ReadonlyArray<string> = []) =>
  (app: Effect.Effect<HttpServerResponse.HttpServerResponse, HttpLayerRouter.unhandled>): Effect.Effect<
    HttpServerResponse.HttpServerResponse,
    // every failure is answered here; the type keeps the router's marker for what is not
    HttpLayerRouter.unhandled,
    HttpServerRequest.HttpServerRequest
  > =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (received) => {
      const started = performance.now()
      const request = fromClient(received, trustedProxies)
      const requestId = requestIdOf(request)
      const path = request.url.split("?")[0]!
      const admission = admit(policy, request, path)
      const routed = request === received ? app : Effect.provideService(app, HttpServerRequest.HttpServerRequest, request)
      const answer: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> = admission._tag === "Refused"
        ? Effect.succeed(admission.response)
        : admission._tag === "ReadBody"
        ? Effect.flatMap(readAndCheck(policy, request, path, admission), (read) =>
          read._tag === "Read" ? Effect.provideService(app, HttpServerRequest.HttpServerRequest, read.request) : Effect.succeed(read.response))
        : admission.maxBody === undefined
        ? routed
        : HttpIncomingMessage.withMaxBodySize(routed, Option.some(admission.maxBody))
      return answer.pipe(
        answerDefects(policy, request, path, requestId),
        Effect.tap(measure(policy, request.method, started)),
        Effect.annotateLogs("request_id", requestId),
        Effect.map((response) => HttpServerResponse.setHeader(response, "x-request-id", requestId))
      )
    })

/** The guard as the listener's outermost middleware, with TRUST_PROXY when the process has a config. */
export const requestGuard = (policy: ListenerPolicy) =>
  HttpLayerRouter.middleware(
    Effect.map(Effect.serviceOption(AppConfig), (config) =>
      guard(policy, Option.match(config, { onNone: () => [], onSome: (c) => c.trustProxy }))),
    { global: true }
  )
