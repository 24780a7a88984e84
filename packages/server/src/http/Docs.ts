/**
 * `/docs`: the API reference, plain HTML rendered once at start-up from the OpenAPI document of `Api`
 * (`ApiReference.ts`), with its stylesheet and filter script as files, so it reads without JavaScript,
 * loads nothing from the internet and is ready as soon as its HTML has arrived.
 *
 * `/docs/try`: Scalar's interactive reference, as `HttpApiScalar` renders it, but with Scalar's bundle
 * (the copy @effect/platform ships) served as its own cacheable file instead of 3.4 MB of inline script,
 * so the page runs under a CSP without `unsafe-inline` scripts, and without Scalar's web fonts (system
 * fonts instead). It takes seconds to load (docs/benchmarks.md), which is why it is not `/docs`.
 */
import { HttpLayerRouter, HttpServerRequest, HttpServerResponse, OpenApi } from "@effect/platform"
import { Api } from "@parley/domain"
import { Effect, Layer } from "effect"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { promisify } from "node:util"
import * as Zlib from "node:zlib"
import { optionalAsset } from "../Assets.js"
import { escapeHtml, operationScopes, renderApiReference } from "./ApiReference.js"
import { referenceScript, referenceStylesheet } from "./ApiReferenceAssets.js"
import { htmlResponse, pageHeaders, type PagePolicy } from "./PageHeaders.js"
import { fixed, hash, immutable, serveFixed } from "./StaticBody.js"

const gzip = promisify(Zlib.gzip)

// a JSON data block may not contain `</script>`; U+2028/9 are JSON but not JavaScript
const scriptData = (value: unknown) =>
  JSON.stringify(value).replace(/</g, "\\u003c").replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`)

/**
 * The bundle `HttpApiScalar.layer` inlines: an asset in the production build (scripts/build.mjs); from
 * the sources, loaded by file, as the package exports no path to it.
 */
const scalarBundle = Effect.promise(async () => {
  const asset = optionalAsset("scalar.js")
  if (asset !== undefined) return asset
  const root = Path.dirname(createRequire(import.meta.url).resolve("@effect/platform/package.json"))
  const module = (await import(pathToFileURL(Path.join(root, "dist/esm/internal/httpApiScalar.js")).href)) as {
    readonly javascript: string
  }
  return Buffer.from(module.javascript, "utf8")
})

const referencePolicy: PagePolicy = {
  "script-src": ["'self'"],
  "style-src": ["'self'"]
}

const scalarPolicy: PagePolicy = {
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
  const spec = OpenApi.fromApi(Api)

  const stylesheet = fixed(referenceStylesheet)
  const script = fixed(referenceScript)
  const reference = fixed(renderApiReference(
    { spec, scopes: operationScopes(Api) },
    { stylesheet: `docs/reference.css?v=${stylesheet.version}`, script: `docs/reference.js?v=${script.version}` }
  ))

  const bundle = yield* scalarBundle
  const bundleVersion = hash(bundle)
  const bundleGzipped = yield* Effect.cached(Effect.promise(() => gzip(bundle)))
  const description = spec.info.description === undefined
    ? ""
    : `<meta name="description" content="${escapeHtml(spec.info.description)}">\n`
  const scalarPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(spec.info.title)}</title>
${description}</head>
<body>
<script id="api-reference" type="application/json" data-configuration="${escapeHtml(JSON.stringify(configuration))}">${
    scriptData(spec)
  }</script>
<script src="scalar.js?v=${bundleVersion}"></script>
</body>
</html>
`
  const scalarScript = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const headers = {
      "content-type": "text/javascript; charset=utf-8",
      "cache-control": immutable,
      vary: "Accept-Encoding",
      "x-content-type-options": "nosniff"
    }
    if (!/\bgzip\b/.test(request.headers["accept-encoding"] ?? "")) {
      return HttpServerResponse.uint8Array(bundle, { headers })
    }
    return HttpServerResponse.uint8Array(yield* bundleGzipped, { headers: { ...headers, "content-encoding": "gzip" } })
  })

  return Layer.mergeAll(
    HttpLayerRouter.add(
      "GET",
      "/docs",
      serveFixed(reference, {
        "content-type": "text/html; charset=utf-8",
        // revalidated on each visit: a reload is a 304
        "cache-control": "no-cache",
        ...pageHeaders(referencePolicy)
      })
    ),
    HttpLayerRouter.add(
      "GET",
      "/docs/reference.css",
      serveFixed(stylesheet, {
        "content-type": "text/css; charset=utf-8",
        "cache-control": immutable,
        "x-content-type-options": "nosniff"
      })
    ),
    HttpLayerRouter.add(
      "GET",
      "/docs/reference.js",
      serveFixed(script, {
        "content-type": "text/javascript; charset=utf-8",
        "cache-control": immutable,
        "x-content-type-options": "nosniff"
      })
    ),
    HttpLayerRouter.add("GET", "/docs/try", Effect.succeed(htmlResponse(scalarPage, scalarPolicy))),
    HttpLayerRouter.add("GET", "/docs/scalar.js", scalarScript)
  )
}))
