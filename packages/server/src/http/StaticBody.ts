/**
 * Bodies fixed at start-up (the API reference, the console's bundle): gzipped once, served with an ETag
 * per encoding, and answered 304 when the browser holds them.
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import * as Zlib from "node:zlib"

// named by their hash in the page, so a browser keeps them until the page names others
export const immutable = "public, max-age=31536000, immutable"

export const hash = (body: Uint8Array) => Crypto.createHash("sha256").update(body).digest("base64url").slice(0, 16)

/** A body fixed at start-up, gzipped once, with one ETag per encoding. */
export interface Fixed {
  readonly raw: Uint8Array
  readonly gzip: Uint8Array
  readonly version: string
}

export const fixed = (body: string): Fixed => {
  const raw = Buffer.from(body, "utf8")
  return { raw, gzip: Zlib.gzipSync(raw, { level: 9 }), version: hash(raw) }
}

const matches = (ifNoneMatch: string | undefined, etag: string) =>
  ifNoneMatch !== undefined &&
  ifNoneMatch.split(",").map((t) => t.trim().replace(/^W\//, "")).some((t) => t === etag || t === "*")

/** Serves `body`: gzip when accepted, 304 when the client holds this encoding's ETag. */
export const serveFixed = (body: Fixed, headers: Readonly<Record<string, string>>) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
    const gzipped = /\bgzip\b/.test(request.headers["accept-encoding"] ?? "")
    const etag = `"${body.version}${gzipped ? "-gz" : ""}"`
    const all = { ...headers, etag, vary: "Accept-Encoding" }
    if (matches(request.headers["if-none-match"], etag)) return HttpServerResponse.empty({ status: 304, headers: all })
    return HttpServerResponse.uint8Array(gzipped ? body.gzip : body.raw, {
      headers: gzipped ? { ...all, "content-encoding": "gzip" } : all
    })
  })
