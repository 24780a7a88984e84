import { HttpApiBuilder, HttpLayerRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Api, CurrentVisitor, WidgetAuth } from "@parley/domain"
import { Effect, Layer, Redacted } from "effect"
import { createHash } from "node:crypto"
import * as Zlib from "node:zlib"
import { readAsset } from "../Assets.js"
import { corsFor } from "../http/Cors.js"
import { remoteAddress } from "../http/Forms.js"
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
      .handle("session", ({ payload, request }) =>
        widget.session(payload, { origin: request.headers["origin"], address: remoteAddress(request) }))
      .handle("history", ({ urlParams }) =>
        Effect.flatMap(CurrentVisitor, (visitor) =>
          widget.history(visitor, urlParams)))
      .handle("handoff", () =>
        Effect.flatMap(CurrentVisitor, widget.requestPerson))
  }))

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
