import { HttpLayerRouter, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { type ListenerPolicy, requestGuard } from "./RequestGuard.js"

export interface BoundListener {
  readonly server: Http.Server
  readonly host: string
  readonly port: number
  /** `http://host:port` as bound; public URLs may differ behind a proxy (PUBLIC_URL, RECEIVER_URL). */
  readonly url: string
}

/** The API listener (REST, docs, later MCP and socket.io). Socket.io attaches to its `server`. */
export class ApiListener extends Context.Tag("@parley/server/ApiListener")<ApiListener, BoundListener>() {}
/** The receiver listener: `POST /web-chat/message` on its own port. */
export class ReceiverListener
  extends Context.Tag("@parley/server/ReceiverListener")<ReceiverListener, BoundListener>()
{}
/** Loopback-only listener for the CLI's commands while this process holds the embedded database. */
export class AdminListener extends Context.Tag("@parley/server/AdminListener")<AdminListener, BoundListener>() {}

/**
 * Serves `routes` on its own node `http.Server` bound to host:port (0 picks a free port), and exposes
 * the bound address under `tag`. Each listener gets its own router, so their routes never mix.
 */
export const listen = <I, E, R>(
  tag: Context.Tag<I, BoundListener>,
  routes: Layer.Layer<never, E, R>,
  options: {
    readonly host: string
    readonly port: number
    readonly policy: ListenerPolicy
    /** How long a closing listener lets the requests it is answering finish (default 10 s). */
    readonly closeGraceMs?: number
  }
) => {
  const server = Http.createServer()
  answerUntilServed(server, options.policy)
  // Node would answer "100 Continue" at once; the guard does, once the body's size is known to be allowed
  server.on("checkContinue", (request, response) => server.emit("request", request, response))
  const bound = Layer.scoped(
    tag,
    Effect.gen(function*() {
      yield* HttpServer.HttpServer
      // runs before the server's own close, which waits for every open connection to end
      yield* Effect.addFinalizer(() => Effect.sync(() => closeWithin(server, options.closeGraceMs ?? CLOSE_GRACE_MS)))
      const address = server.address() as AddressInfo
      const host = address.family === "IPv6" ? `[${address.address}]` : address.address
      return { server, host: address.address, port: address.port, url: `http://${host}:${address.port}` }
    })
  )
  // `serve` provides the shared router layer, which one build memoises: fresh gives each listener its own
  // the guard is built first, so it is the outermost middleware: it sees every answer, defects included
  const guarded = Layer.provide(routes, requestGuard(options.policy))
  const serve = Layer.fresh(HttpLayerRouter.serve(guarded, { disableListenLog: true, disableLogger: true }))
  return Layer.merge(serve, bound).pipe(
    Layer.provide(NodeHttpServer.layer(() => server, { host: options.host, port: options.port }))
  )
}

/** How long a closing listener lets the requests it is answering finish before it cuts their connections. */
const CLOSE_GRACE_MS = 10_000

/**
 * On shutdown: idle keep-alive connections are closed at once; a connection still busy after `graceMs`
 * (a client that never reads its answer, a stream left open) is cut, so that a shutdown never waits on a
 * client.
 */
const closeWithin = (server: Http.Server, graceMs: number) => {
  server.closeIdleConnections()
  const timer = setTimeout(() => server.closeAllConnections(), graceMs)
  timer.unref()
  server.once("close", () => clearTimeout(timer))
}

/**
 * The port is bound before the routes are served (NodeHttpServer listens as its layer builds, `serve`
 * attaches its handler once the routes are built): a request in between would get no answer at all, so
 * until the first other `request` handler is attached, each is answered 503 in the listener's envelope
 * with `Retry-After`, as `/ready` answers while the process starts. Once another handler is attached it
 * never answers again, even where a wrapper that kept it calls it (socket.io's `attach` does so).
 */
const answerUntilServed = (server: Http.Server, policy: ListenerPolicy) => {
  let served = false
  const starting = (request: Http.IncomingMessage, response: Http.ServerResponse) => {
    if (served) return
    const path = (request.url ?? "/").split("?")[0]!
    const refusal = policy.refuse(path, 503, "Parley is starting; try again in a moment")
    const body = refusal.body._tag === "Uint8Array" ? refusal.body.body : new Uint8Array()
    request.resume()
    response.writeHead(503, { "content-type": "application/json", "retry-after": "1", connection: "close" })
    response.end(body)
  }
  const onNewListener = (event: string | symbol, listener: unknown) => {
    if (event !== "request" || listener === starting) return
    served = true
    server.off("request", starting)
    server.off("newListener", onNewListener)
  }
  server.on("request", starting)
  server.on("newListener", onNewListener)
}

/**
 * Where this process's listeners actually bound (port 0 picks one at start), for URLs handed to clients
 * when PUBLIC_URL / RECEIVER_URL are not configured.
 */
export class BoundAddresses extends Effect.Service<BoundAddresses>()("@parley/server/BoundAddresses", {
  sync: () => {
    let receiver: string | undefined
    let api: string | undefined
    return {
      setReceiver: (url: string) => Effect.sync(() => void (receiver = url)),
      receiver: Effect.sync(() => receiver),
      setApi: (url: string) => Effect.sync(() => void (api = url)),
      /** This process's API listener, once bound (read while a request is made, hence not an Effect). */
      apiNow: () => api
    }
  }
}) {}
