/**
 * A listener between binding its port and serving its routes (NodeHttpServer listens as its layer builds;
 * the routes are served once they are built): a request in that window is answered 503 in the
 * listener's envelope, never left without an answer, and once the routes are served they answer alone.
 * Real node servers on free ports, called with fetch; the routes' build is held open by a gate.
 */
import { HttpLayerRouter, HttpServerResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { type Context, Deferred, Effect, Exit, Fiber, Layer, Scope } from "effect"
import { ApiPolicy, ReceiverPolicy } from "../src/http/BodyLimits.js"
import { ApiListener, type BoundListener, listen, ReceiverListener } from "../src/http/Listener.js"
import type { ListenerPolicy } from "../src/http/RequestGuard.js"
import { freePort } from "./support/Ports.js"

/** The first answer from `url` (a refused connection means the port is not bound yet: ask again). */
const firstAnswer = (url: string) =>
  Effect.promise(async () => {
    for (;;) {
      const answer = await fetch(url).then(
        async (r) => ({ status: r.status, retryAfter: r.headers.get("retry-after"), body: await r.json() }),
        () => undefined
      )
      if (answer !== undefined) return answer
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  })

/** Starts `tag`'s listener with its routes held back, and checks what a request gets before and after. */
const holdsBack = <I>(
  tag: Context.Tag<I, BoundListener>,
  policy: ListenerPolicy,
  path: `/${string}`,
  starting: unknown
) =>
  Effect.gen(function*() {
    const port = yield* Effect.promise(freePort)
    const gate = yield* Deferred.make<void>()
    const routes = Layer.mergeAll(
      HttpLayerRouter.add("GET", path, HttpServerResponse.unsafeJson({ served: true })),
      Layer.effectDiscard(Deferred.await(gate))
    )
    const scope = yield* Scope.make()
    const building = yield* Layer.buildWithScope(listen(tag, routes, { host: "127.0.0.1", port, policy }), scope).pipe(
      Effect.fork
    )

    const early = yield* firstAnswer(`http://127.0.0.1:${port}${path}`)
    expect(early).toEqual({ status: 503, retryAfter: "1", body: starting })

    yield* Deferred.succeed(gate, undefined)
    yield* Fiber.join(building)
    const served = yield* firstAnswer(`http://127.0.0.1:${port}${path}`)
    expect(served).toEqual({ status: 200, retryAfter: null, body: { served: true } })
    yield* Scope.close(scope, Exit.void)
  })

const STARTING = "Parley is starting; try again in a moment"

describe("a listener that is bound but not yet serving", () => {
  it.effect("api: answers 503 with Retry-After in the REST envelope until its routes are served, then only the routes answer", () =>
    holdsBack(ApiListener, ApiPolicy, "/api/user/pipelines", {
      status: false,
      code: 503,
      message: STARTING,
      data: null,
      validation: []
    }))

  it.effect("receiver: answers 503 with Retry-After in the receiver's envelope until its routes are served, then only the routes answer", () =>
    holdsBack(ReceiverListener, ReceiverPolicy, "/web-chat/message", { status: false, message: STARTING, data: null }))
})

describe("a listener that is closing", () => {
  it.effect("cuts a connection whose request is still unanswered after the grace, so that closing never waits on it", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(freePort)
      const asked = yield* Deferred.make<void>()
      const routes = HttpLayerRouter.add(
        "GET",
        "/forever",
        Effect.zipRight(Deferred.succeed(asked, undefined), Effect.never)
      )
      const scope = yield* Scope.make()
      yield* Layer.buildWithScope(
        listen(ApiListener, routes, { host: "127.0.0.1", port, policy: ApiPolicy, closeGraceMs: 200 }),
        scope
      )
      const pending = fetch(`http://127.0.0.1:${port}/forever`).then(() => "answered", () => "cut")
      yield* Deferred.await(asked)
      // without the grace, node's close waits for this connection, which never ends
      yield* Scope.close(scope, Exit.void)
      expect(yield* Effect.promise(() => pending)).toBe("cut")
    }))
})
