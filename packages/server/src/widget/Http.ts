import { HttpApiBuilder, HttpLayerRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Api, CurrentVisitor, WidgetAuth } from "@parley/domain"
import { Effect, Layer, Redacted } from "effect"
import { createHash } from "node:crypto"
import * as Zlib from "node:zlib"
import { readAsset } from "../Assets.js"
import { Widget } from "./Widget.js"

export const WidgetAuthLive = Layer.effect(
  WidgetAuth,
  Effect.map(Widget, (widget) => ({
    widgetSession: (token: Redacted.Redacted<string>) =>
      Effect.flatMap(
        HttpServerRequest.HttpServerRequest,
        (request) => widget.authenticate(Redacted.value(token), request.headers["origin"])
      )
  }))
)

export const WidgetHttpLive = HttpApiBuilder.group(Api, "widget", (handlers) =>
  Effect.gen(function*() {
    const widget = yield* Widget
    return handlers
      .handle("session", ({ payload }) => widget.session(payload))
      .handle("history", ({ urlParams }) =>
        Effect.flatMap(CurrentVisitor, (visitor) => widget.history(visitor, urlParams)))
      .handle("handoff", () =>
        Effect.flatMap(CurrentVisitor, widget.requestPerson))
  }))

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

/** widget.js, read once; gzip-encoded for clients that accept it. */
const widgetScript = (() => {
  const raw = readAsset("widget.js")
  return {
    raw,
    gzip: Zlib.gzipSync(raw, { level: 9 }),
    etag: `"${createHash("sha256").update(raw).digest("base64url").slice(0, 16)}"`
  }
})()

export const widgetScriptSizes = { bytes: widgetScript.raw.length, gzipBytes: widgetScript.gzip.length }

export const WidgetScriptRoute = HttpLayerRouter.add(
  "GET",
  "/widget.js",
  Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
    const headers = {
      "content-type": "text/javascript; charset=utf-8",
      "cache-control": "public, max-age=300",
      etag: widgetScript.etag,
      vary: "Accept-Encoding",
      "access-control-allow-origin": "*"
    }
    if (request.headers["if-none-match"] === widgetScript.etag) {
      return HttpServerResponse.empty({ status: 304, headers })
    }
    const gzip = /\bgzip\b/.test(request.headers["accept-encoding"] ?? "")
    return HttpServerResponse.uint8Array(gzip ? widgetScript.gzip : widgetScript.raw, {
      headers: gzip ? { ...headers, "content-encoding": "gzip" } : headers
    })
  })
)

export const WidgetRoutes = Layer.mergeAll(
  WidgetScriptRoute,
  corsFor((path) => path.startsWith("/api/widget/") || path === "/demo/state")
)
