/**
 * The first and last thing every request on a listener meets: a request id, bounded bodies (413 before
 * reading what is too large), refusal of text Postgres cannot store (NUL, unpaired surrogates) naming
 * the field (both in RequestAdmission.ts), and a logged 500 in the listener's envelope for any defect
 * that remains.
 * docs/api.md "Limits and bad input" lists the limits.
 */
import {
  HttpIncomingMessage,
  HttpLayerRouter,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { clientAddress } from "@parley/domain"
import { Cause, Effect, Metric, MetricBoundaries, MetricLabel, Option } from "effect"
import { randomUUID } from "node:crypto"
import { AppConfig } from "../config/AppConfig.js"
import { DATABASE_UNAVAILABLE_MESSAGE, isDatabaseUnavailable } from "../db/DatabaseUnavailable.js"
import type { BodyLimit } from "./BodyLimits.js"
import { admit, discardBody, readAndCheck } from "./RequestAdmission.js"

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

/**
 * A defect (or a failure no route turned into an answer) becomes a 500 in the listener's envelope with
 * the request id, logged at Error with its cause; a client that went away is not an error; the database
 * being away (DatabaseUnavailable.ts) is a 503 with Retry-After, logged at Warning.
 */
const answerDefects =
  (policy: ListenerPolicy, request: HttpServerRequest.HttpServerRequest, path: string, requestId: string) =>
  <E, R>(effect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.catchAllCause(effect, (cause) =>
      Effect.flatMap(HttpServerError.causeResponse(cause), ([response]) => {
        if (Cause.isInterruptedOnly(cause)) return Effect.succeed(response)
        if (isDatabaseUnavailable(cause)) {
          return Effect.logWarning("Request refused: the database is unavailable", String(Cause.squash(cause))).pipe(
            Effect.annotateLogs({ http_method: request.method, http_path: path, listener: policy.name }),
            Effect.as(
              HttpServerResponse.setHeader(policy.refuse(path, 503, DATABASE_UNAVAILABLE_MESSAGE), "retry-after", "1")
            )
          )
        }
        if (response.status >= 500) {
          return Effect.flatMap(matchedRoute, (route) =>
            Effect.logError("Request failed", cause).pipe(
              Effect.annotateLogs({
                http_method: request.method,
                http_path: path,
                http_route: route,
                listener: policy.name
              })
            )).pipe(
              Effect.as(
                logged(
                  policy.refuse(path, 500, `Internal server error (request id ${requestId}). The error was logged.`)
                )
              )
            )
        }
        // the framework's own refusals (no route, an unreadable request) have empty bodies: give them the envelope
        return Effect.succeed(
          response.body._tag === "Empty"
            ? policy.refuse(path, response.status, FRAMEWORK_MESSAGES[response.status] ?? "The request was refused.")
            : response
        )
      }))

/** 5xx answers already logged with their cause (a defect above); any other is logged when it is counted. */
const loggedAnswers = new WeakSet<HttpServerResponse.HttpServerResponse>()
const logged = (response: HttpServerResponse.HttpServerResponse) => {
  loggedAnswers.add(response)
  return response
}

/** The route the router matched (the server span's `http.route`), or "unmatched". */
const matchedRoute = Effect.map(Effect.option(Effect.currentSpan), (span) => {
  const route = Option.match(span, { onNone: () => undefined, onSome: (s) => s.attributes.get("http.route") })
  return typeof route === "string" ? route : "unmatched"
})

/** What a 5xx answer said, for the log (its body, when the route wrote one as text). */
const answerText = (response: HttpServerResponse.HttpServerResponse) => {
  const body = response.body
  if (body._tag === "Uint8Array") return new TextDecoder().decode(body.body.subarray(0, 1000))
  return `(a ${body._tag} body)`
}

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
const taggedMetrics = new Map<
  string,
  { readonly requests: typeof httpRequests; readonly duration: typeof httpDuration }
>()

const metricsFor = (listener: string, method: string, route: string, status: number) => {
  const key = `${listener} ${method} ${route} ${status}`
  let tagged = taggedMetrics.get(key)
  if (tagged === undefined) {
    const labels = [
      MetricLabel.make("listener", listener),
      MetricLabel.make("method", method),
      MetricLabel.make("route", route)
    ]
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
const measure =
  (policy: ListenerPolicy, method: string, started: number) => (response: HttpServerResponse.HttpServerResponse) =>
    Effect.flatMap(matchedRoute, (route) => {
      const seconds = (performance.now() - started) / 1000
      const tagged = metricsFor(policy.name, method, route, response.status)
      // a 5xx a route answered itself (a typed error with that status, an SDK's own answer) is an error too
      const serverError = response.status >= 500 && response.status !== 503 && !loggedAnswers.has(response)
        ? Effect.logError(`Request answered ${response.status}`, answerText(response)).pipe(
          Effect.annotateLogs({
            http_method: method,
            http_route: route,
            http_status: response.status,
            listener: policy.name
          })
        )
        : Effect.void
      return Effect.zipRight(
        serverError,
        Effect.zipRight(
          Effect.zipRight(Metric.increment(tagged.requests), Metric.update(tagged.duration, seconds)),
          // the access log: at Debug, so a busy listener costs nothing until someone asks for it
          Effect.logDebug(`${method} ${route === "unmatched" ? "(unmatched)" : route} ${response.status}`).pipe(
            Effect.annotateLogs({
              http_status: response.status,
              duration_ms: Math.round(seconds * 1000),
              listener: policy.name
            }),
            Effect.whenLogLevel("Debug")
          )
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
export const guard =
  (policy: ListenerPolicy, trustedProxies: ReadonlyArray<string> = []) =>
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
      const routed = request === received
        ? app
        : Effect.provideService(app, HttpServerRequest.HttpServerRequest, request)
      const answer: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> = admission._tag === "Refused"
        ? Effect.as(discardBody(request), admission.response)
        : admission._tag === "ReadBody"
        ? Effect.flatMap(readAndCheck(policy, request, path, admission), (read) =>
          read._tag === "Read"
            ? Effect.provideService(app, HttpServerRequest.HttpServerRequest, read.request)
            : Effect.as(discardBody(request), read.response))
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
