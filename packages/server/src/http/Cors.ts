import { HttpLayerRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"

/**
 * CORS for what pages on other sites call: the widget's endpoints (and the demo page's state) answer any
 * origin's preflight and carry `Access-Control-Allow-Origin` for it, without credentials. That is safe
 * because nothing there rides on cookies: a session token authorises, and each endpoint checks the
 * origin against the channel's allowlist itself (a refused page still reads why: 403 `Origin not allowed`).
 */
export const corsFor = (paths: (path: string) => boolean) =>
  HttpLayerRouter.middleware((app) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const origin = request.headers["origin"]
      if (origin === undefined || !paths(request.url.split("?")[0]!)) return yield* app
      const headers = { "access-control-allow-origin": origin, vary: "Origin" }
      if (request.method === "OPTIONS") {
        return HttpServerResponse.empty({
          status: 204,
          headers: {
            ...headers,
            "access-control-allow-methods": "GET, POST",
            "access-control-allow-headers": "authorization, content-type, idempotency-key",
            "access-control-max-age": "600"
          }
        })
      }
      return HttpServerResponse.setHeaders(yield* app, headers)
    }), { global: true })
