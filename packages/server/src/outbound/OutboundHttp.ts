/**
 * Outbound HTTP for webhooks and actions. Every address a host name resolves to is checked when the
 * connection is made (so DNS rebinding cannot slip a private address past an earlier check): loopback,
 * private and link-local targets are refused unless OUTBOUND_ALLOW_PRIVATE=true.
 */
import { isPrivateAddress } from "@parley/domain"
import { Data, Effect, Either } from "effect"
import * as Dns from "node:dns"
import * as Http from "node:http"
import * as Https from "node:https"
import { isIP } from "node:net"
import { AppConfig } from "../config/AppConfig.js"
import { BoundAddresses } from "../http/Listener.js"

export class OutboundError extends Data.TaggedError("OutboundError")<{
  readonly reason: "Refused" | "Timeout" | "Network" | "InvalidUrl"
  readonly message: string
}> {}

/** A reused keep-alive connection failed before any response byte: the request is sent again on a fresh one. */
class StaleConnection extends Data.TaggedError("StaleConnection")<{ readonly message: string }> {}

export interface OutboundResponse {
  readonly status: number
  readonly body: string
}

/**
 * What one webhook attempt came to (reply webhooks and actions alike): the status, whether it
 * succeeded (2xx), whether another attempt may succeed (a timeout, a network error, a 5xx or a 429), the
 * error to record and the answer's body.
 */
export const attemptOutcome = (result: Either.Either<OutboundResponse, OutboundError>) => {
  const status = Either.isRight(result) ? result.right.status : null
  const ok = status !== null && status >= 200 && status < 300
  const retryable = !ok && (Either.isLeft(result)
    ? result.left.reason === "Timeout" || result.left.reason === "Network"
    : status! >= 500 || status === 429)
  const error = Either.isLeft(result) ? result.left.message : ok ? null : `HTTP ${status}`
  const body = Either.isRight(result) ? result.right.body : null
  return { status, ok, retryable, error, body }
}

const MAX_BODY = 64 * 1024

export class OutboundHttp extends Effect.Service<OutboundHttp>()("@parley/server/OutboundHttp", {
  dependencies: [AppConfig.Default, BoundAddresses.Default],
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const allowPrivate = config.outboundAllowPrivate
    const bound = yield* BoundAddresses
    /**
     * The one private target always allowed: the demo's webhook sink on this process's own API listener
     * (so the first-run demo shows a real signed delivery without OUTBOUND_ALLOW_PRIVATE).
     */
    const isOwnDemoSink = (target: URL) => {
      const api = bound.apiNow()
      return api !== undefined && target.protocol === "http:" && target.host === new URL(api).host &&
        target.pathname === "/demo/webhook"
    }

    const guardedLookup: typeof Dns.lookup = ((hostname: string, options: Dns.LookupOptions, callback: any) =>
      Dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
        if (error) {
          return callback(error)
        }
        const list = addresses as Array<Dns.LookupAddress>
        const usable = allowPrivate ? list : list.filter((a) =>
          !isPrivateAddress(a.address)
        )
        if (usable.length === 0) {
          return callback(
            Object.assign(new Error(`${hostname} resolves only to private addresses`), { code: "EPRIVATE" })
          )
        }
        return options.all ? callback(null, usable) : callback(null, usable[0]!.address, usable[0]!.family)
      })) as typeof Dns.lookup

    /**
     * One exchange. `agent: false` forces a fresh connection; otherwise the global keep-alive pool may
     * lend a socket the receiver already closed, which fails before any response byte: `StaleConnection`.
     */
    const exchange = (
      target: URL,
      method: string,
      headers: Record<string, string>,
      body: string | undefined,
      timeoutMs: number,
      fresh: boolean
    ) =>
      Effect.async<OutboundResponse, OutboundError | StaleConnection>((resume) => {
        const client = target.protocol === "https:" ? Https : Http
        let answered = false
        const req = client.request(target, {
          method,
          headers,
          lookup: guardedLookup,
          timeout: timeoutMs,
          ...(fresh ? { agent: false } : {})
        }, (res) => {
          answered = true
          const chunks: Array<Buffer> = []
          let size = 0
          res.on("data", (chunk: Buffer) => {
            if (size < MAX_BODY) chunks.push(chunk)
            size += chunk.length
          })
          res.on("end", () => {
            clearTimeout(deadline)
            resume(
              Effect.succeed({
                status: res.statusCode ?? 0,
                body: Buffer.concat(chunks).toString("utf8").slice(0, MAX_BODY)
              })
            )
          })
          res.on("error", (e) => resume(Effect.fail(new OutboundError({ reason: "Network", message: e.message }))))
        })
        // the whole exchange, not only idle time, is bounded
        const deadline = setTimeout(
          () => req.destroy(Object.assign(new Error("timeout"), { code: "ETIMEDOUT" })),
          timeoutMs
        )
        req.on("timeout", () => req.destroy(Object.assign(new Error("timeout"), { code: "ETIMEDOUT" })))
        req.on("error", (e: NodeJS.ErrnoException) => {
          clearTimeout(deadline)
          resume(Effect.fail(
            e.code === "ETIMEDOUT"
              ? new OutboundError({ reason: "Timeout", message: `No answer within ${timeoutMs} ms` })
              : e.code === "EPRIVATE"
              ? new OutboundError({ reason: "Refused", message: e.message })
              : req.reusedSocket && !answered
              ? new StaleConnection({ message: e.message })
              : new OutboundError({ reason: "Network", message: e.message })
          ))
        })
        if (body !== undefined) req.write(body)
        req.end()
        return Effect.sync(() => {
          clearTimeout(deadline)
          req.destroy()
        })
      })

    const request = (
      method: string,
      url: string,
      headers: Record<string, string>,
      body: string | undefined,
      timeoutMs: number
    ) =>
      Effect.gen(function*() {
        const target = yield* Effect.try({
          try: () => new URL(url),
          catch: () => new OutboundError({ reason: "InvalidUrl", message: `Not a URL: ${url}` })
        })
        if (target.protocol !== "http:" && target.protocol !== "https:") {
          return yield* new OutboundError({ reason: "InvalidUrl", message: "Only http and https URLs are allowed" })
        }
        const host = target.hostname.replace(/^\[|\]$/g, "")
        if (!allowPrivate && isIP(host) !== 0 && isPrivateAddress(host) && !isOwnDemoSink(target)) {
          return yield* new OutboundError({
            reason: "Refused",
            message: `Refusing to call a private address (${host})`
          })
        }
        const started = Date.now()
        return yield* exchange(target, method, headers, body, timeoutMs, false).pipe(
          // SPEC.md 6.2's transport-level retry: once, on a fresh connection, within the same time budget,
          // and no attempt of the caller's is spent on it
          Effect.catchTag("StaleConnection", () =>
            exchange(target, method, headers, body, Math.max(1, timeoutMs - (Date.now() - started)), true).pipe(
              Effect.catchTag("StaleConnection", (e) => new OutboundError({ reason: "Network", message: e.message }))
            ))
        )
      })

    return { request }
  })
}) {}
