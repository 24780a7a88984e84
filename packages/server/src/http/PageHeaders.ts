/**
 * The headers of every HTML page (the demo page or links at `/`, `/docs`, the account and consent pages):
 * a Content-Security-Policy that starts from nothing and names what the page loads, no framing by other
 * sites, no MIME sniffing, no referrer; and the escaper of the text they interpolate.
 */
import { HttpServerResponse } from "@effect/platform"
import * as Crypto from "node:crypto"

const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" }
/** Text into HTML, in an element or a quoted attribute: the one escaper of every page the server renders. */
export const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (c) => ENTITIES[c]!)

/**
 * CSP directives beyond the defaults (`default-src`, `base-uri`, `form-action`, `frame-ancestors`), which they may
 * override.
 */
export type PagePolicy = Readonly<Record<string, ReadonlyArray<string>>>

const defaults: PagePolicy = {
  "default-src": ["'none'"],
  "base-uri": ["'none'"],
  "form-action": ["'self'"],
  "frame-ancestors": ["'none'"]
}

export const contentSecurityPolicy = (policy: PagePolicy) =>
  Object.entries({ ...defaults, ...policy }).map(([directive, sources]) => [directive, ...sources].join(" ")).join("; ")

export const pageHeaders = (policy: PagePolicy) => ({
  "content-security-policy": contentSecurityPolicy(policy),
  // for browsers without CSP frame-ancestors
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer"
})

export const htmlResponse = (
  body: string,
  policy: PagePolicy,
  options: { readonly status?: number; readonly cache?: string } = {}
) =>
  HttpServerResponse.text(body, {
    status: options.status ?? 200,
    contentType: "text/html; charset=utf-8",
    headers: { ...(options.cache === undefined ? {} : { "cache-control": options.cache }), ...pageHeaders(policy) }
  })

/** A fresh `script-src` nonce, for pages whose inline script differs per answer. */
export const scriptNonce = () => Crypto.randomBytes(16).toString("base64")
