/** A real HTTP endpoint on 127.0.0.1 standing in for a customer's reply-webhook receiver. */
import { Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

export interface Received {
  readonly headers: Http.IncomingHttpHeaders
  readonly rawBody: string
}

export type Behaviour = "ok" | "hang" | "fail"

export const webhookReceiver = (behaviour: () => Behaviour) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ url: string; received: Array<Received>; server: Http.Server }>((resolve) => {
        const received: Array<Received> = []
        const server = Http.createServer((req, res) => {
          const chunks: Array<Buffer> = []
          req.on("data", (c: Buffer) => chunks.push(c))
          req.on("end", () => {
            received.push({ headers: req.headers, rawBody: Buffer.concat(chunks).toString("utf8") })
            const mode = behaviour()
            if (mode === "hang") return // never answers: the sender's timeout decides
            if (mode === "fail") return res.writeHead(503).end("unavailable")
            res.writeHead(200, { "content-type": "application/json" }).end(
              JSON.stringify({ message_id: `ext-${received.length}` })
            )
          })
        })
        server.listen(
          0,
          "127.0.0.1",
          () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received, server })
        )
      })
    ),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((r) => {
          server.closeAllConnections()
          server.close(() => r())
        })
      )
  )

/**
 * A receiver that drops keep-alive connections it considers idle, made deterministic: the first request on
 * a connection is answered (and the connection kept open), a second one on that connection is dropped
 * before a byte of answer, as when a receiver closes an idle socket just as the sender reuses it.
 */
export const droppingKeepAliveReceiver = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ url: string; received: Array<Received>; dropped: () => number; server: Http.Server }>((resolve) => {
      const received: Array<Received> = []
      const served = new WeakSet<object>()
      let dropped = 0
      const server = Http.createServer((req, res) => {
        if (served.has(req.socket)) {
          dropped++
          return req.socket.destroy()
        }
        served.add(req.socket)
        const chunks: Array<Buffer> = []
        req.on("data", (c: Buffer) => chunks.push(c))
        req.on("end", () => {
          received.push({ headers: req.headers, rawBody: Buffer.concat(chunks).toString("utf8") })
          res.writeHead(200, { "content-type": "application/json" }).end(
            JSON.stringify({ message_id: `ext-${received.length}` })
          )
        })
      })
      server.listen(
        0,
        "127.0.0.1",
        () =>
          resolve({
            url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
            received,
            dropped: () => dropped,
            server
          })
      )
    })
  ),
  ({ server }) =>
    Effect.promise(() =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      })
    )
)

/** Polls until `check` holds (live clock), failing after `timeoutMs`. */
export const eventually = <A, R>(check: Effect.Effect<A | undefined, never, R>, timeoutMs = 10_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      const value = yield* check
      if (value !== undefined && value !== false) return value
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.die(new Error(`condition not met within ${timeoutMs} ms`))
  })
