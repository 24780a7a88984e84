/**
 * `/docs`: the Scalar API reference of `Api`, as `HttpApiScalar` renders it, but with Scalar's bundle
 * (the copy @effect/platform ships) served as its own cacheable file instead of 3.4 MB of inline script,
 * so the page runs under a CSP without `unsafe-inline` scripts, and without Scalar's web fonts, so it
 * loads nothing from the internet (system fonts instead).
 */
import { HttpLayerRouter, HttpServerRequest, HttpServerResponse, OpenApi } from "@effect/platform"
import { Api } from "@parley/domain"
import { Effect, Layer } from "effect"
import * as Crypto from "node:crypto"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { promisify } from "node:util"
import * as Zlib from "node:zlib"
import { htmlResponse, type PagePolicy } from "./PageHeaders.js"

const gzip = promisify(Zlib.gzip)

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
// a JSON data block may not contain `</script>`; U+2028/9 are JSON but not JavaScript
const scriptData = (value: unknown) =>
  JSON.stringify(value).replace(/</g, "\\u003c").replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`)

/** The bundle `HttpApiScalar.layer` inlines; the package exports no path to it, so it is loaded by file. */
const scalarBundle = Effect.promise(async () => {
  const root = Path.dirname(createRequire(import.meta.url).resolve("@effect/platform/package.json"))
  const module = (await import(pathToFileURL(Path.join(root, "dist/esm/internal/httpApiScalar.js")).href)) as { readonly javascript: string }
  return Buffer.from(module.javascript, "utf8")
})

const policy: PagePolicy = {
  // Scalar compiles a WebAssembly module (no JavaScript eval)
  "script-src": ["'self'", "'wasm-unsafe-eval'"],
  "style-src": ["'self'", "'unsafe-inline'"],
  "font-src": ["'self'", "data:"],
  "img-src": ["'self'", "data:", "blob:"],
  // the "Test Request" client calls this API
  "connect-src": ["'self'"]
}

// `withDefaultFonts: false`: no Inter and JetBrains Mono from fonts.scalar.com
const configuration = { _integration: "html", withDefaultFonts: false }

export const DocsRoutes = Layer.unwrapEffect(Effect.gen(function*() {
  const bundle = yield* scalarBundle
  const version = Crypto.createHash("sha256").update(bundle).digest("base64url").slice(0, 16)
  const gzipped = yield* Effect.cached(Effect.promise(() => gzip(bundle)))
  const spec = OpenApi.fromApi(Api)
  const description = spec.info.description === undefined
    ? ""
    : `<meta name="description" content="${escapeHtml(spec.info.description)}">\n`
  const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(spec.info.title)}</title>
${description}</head>
<body>
<script id="api-reference" type="application/json" data-configuration="${escapeHtml(JSON.stringify(configuration))}">${scriptData(spec)}</script>
<script src="docs/scalar.js?v=${version}"></script>
</body>
</html>
`
  const script = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const headers = {
      "content-type": "text/javascript; charset=utf-8",
      // the page names the bundle by its hash
      "cache-control": "public, max-age=31536000, immutable",
      vary: "Accept-Encoding",
      "x-content-type-options": "nosniff"
    }
    if (!/\bgzip\b/.test(request.headers["accept-encoding"] ?? "")) return HttpServerResponse.uint8Array(bundle, { headers })
    return HttpServerResponse.uint8Array(yield* gzipped, { headers: { ...headers, "content-encoding": "gzip" } })
  })
  return Layer.mergeAll(
    HttpLayerRouter.add("GET", "/docs", Effect.succeed(htmlResponse(page, policy))),
    HttpLayerRouter.add("GET", "/docs/scalar.js", script)
  )
}))
