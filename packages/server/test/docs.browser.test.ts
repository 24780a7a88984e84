/**
 * The API reference in a real browser under its Content-Security-Policy: `/docs` (server-rendered HTML)
 * shows every operation of `/openapi.json` with no request to any host but this one, no CSP violation
 * and no script needed to read it; `/docs/try` (Scalar) still renders and sends a test request. Load
 * times go to test-results as information for docs/benchmarks.md, never as an assertion.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"
import { chromiumPath, launch } from "./support/Browser.js"
import { TestServer, TestServerLive } from "./support/TestServer.js"

const loopback = new Set(["127.0.0.1", "localhost", "[::1]"])
const methods = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"])

const run = <A>(f: () => Promise<A>) => Effect.promise(f)

/**
 * A browser that cannot reach past this machine: everything but loopback goes to a proxy on a closed
 * port and fails at once. Unlike refusing by `context.route`, it leaves the HTTP cache on (Playwright
 * turns the cache off for a context with routes), so a reload measures what a second visit costs.
 */
const offlineBrowser = Effect.acquireRelease(
  Effect.promise(() =>
    chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox", "--proxy-server=http://127.0.0.1:9"] })
  ),
  (browser: Browser) => Effect.promise(() => browser.close())
)

/**
 * A page whose requests outside this machine are recorded (and, with `refuse`, aborted by a route), and
 * whose CSP violations and errors are recorded.
 */
const watchedPage = (context: BrowserContext, options: { readonly refuse: boolean }) =>
  Effect.gen(function*() {
    const outside: Array<string> = []
    const violations: Array<string> = []
    // refused, so a regression fails here rather than hanging on a network
    if (options.refuse) {
      yield* run(() =>
        context.route(
          (url) =>
            (url.protocol === "http:" || url.protocol === "https:" || url.protocol === "ws:") &&
            !loopback.has(url.hostname),
          (route) => route.abort()
        )
      )
    }
    const page = yield* run(() => context.newPage())
    page.on("request", (r) => {
      const url = new URL(r.url())
      if (url.protocol !== "data:" && url.protocol !== "blob:" && !loopback.has(url.hostname)) outside.push(r.url())
    })
    page.on("console", (m) => m.text().includes("Content Security Policy") && violations.push(m.text()))
    page.on("pageerror", (e) => violations.push(String(e)))
    return { page, outside, violations }
  })

/**
 * Navigation timing of the page's current document, from navigation start (the first paint may come after the load
 * event).
 */
const timing = (page: Page) =>
  run(() =>
    page.evaluate(async () => {
      const [entry] = performance.getEntriesByType("navigation") as Array<PerformanceNavigationTiming>
      const paint = await new Promise<PerformanceEntry | undefined>((resolve) => {
        new PerformanceObserver((list) => resolve(list.getEntriesByName("first-contentful-paint")[0])).observe({
          type: "paint",
          buffered: true
        })
        setTimeout(() => resolve(undefined), 5_000)
      })
      return {
        response_end_ms: Math.round(entry!.responseEnd),
        dom_content_loaded_ms: Math.round(entry!.domContentLoadedEventEnd),
        load_event_ms: Math.round(entry!.loadEventEnd),
        first_contentful_paint_ms: paint === undefined ? null : Math.round(paint.startTime),
        transfer_bytes: entry!.transferSize
      }
    })
  )

const record = (file: string, figures: unknown) =>
  Effect.sync(() => {
    Fs.mkdirSync("test-results", { recursive: true })
    Fs.writeFileSync(Path.join("test-results", file), JSON.stringify(figures, null, 2))
  })

layer(TestServerLive(), { excludeTestServices: true })("the API reference in a browser", (it) => {
  it.scoped("/docs renders every operation of /openapi.json, offline and without a CSP violation", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const spec = (yield* run(() => fetch(`${baseUrl}/openapi.json`).then((r) => r.json()))) as {
        readonly paths: Record<string, Record<string, { readonly operationId: string }>>
      }
      const operationIds = Object.values(spec.paths).flatMap((item) =>
        Object.entries(item).filter(([method]) => methods.has(method)).map(([, op]) => op.operationId)
      )
      expect(operationIds.length).toBeGreaterThan(40)

      const browser = yield* offlineBrowser
      // first visits in fresh contexts (empty cache), each followed by a reload (304s and cached files)
      const loads: Array<{ readonly first: unknown; readonly reload: unknown }> = []
      for (let i = 0; i < 5; i++) {
        const context = yield* run(() => browser.newContext())
        const { outside, page, violations } = yield* watchedPage(context, { refuse: false })
        const response = yield* run(() => page.goto(`${baseUrl}/docs`, { waitUntil: "load" }))
        expect(response?.status()).toBe(200)
        const first = yield* timing(page)
        expect(first.load_event_ms).toBeGreaterThan(0)
        yield* run(() => page.reload({ waitUntil: "load" }))
        loads.push({ first, reload: yield* timing(page) })
        expect(violations).toEqual([])
        expect(outside).toEqual([])
        yield* run(() => context.close())
      }

      const context = yield* run(() => browser.newContext({ viewport: { width: 390, height: 844 } }))
      const { outside, page, violations } = yield* watchedPage(context, { refuse: false })
      const requested: Array<string> = []
      page.on("request", (r) => requested.push(new URL(r.url()).pathname))
      yield* run(() => page.goto(`${baseUrl}/docs`, { waitUntil: "load" }))

      const rendered = yield* run(() =>
        page.locator("section.operation").evaluateAll((sections) => sections.map((s) => s.id))
      )
      expect(rendered.length).toBe(operationIds.length)
      expect(new Set(rendered)).toEqual(new Set(operationIds))
      // the table of contents links each of them
      const linked = yield* run(() =>
        page.locator("nav a[href^='#']").evaluateAll((as) => as.map((a) => a.getAttribute("href")!.slice(1)))
      )
      expect(operationIds.filter((id) => !linked.includes(id))).toEqual([])
      // only the page, its stylesheet and its filter script: Scalar is not loaded here
      expect(requested.sort()).toEqual(["/docs", "/docs/reference.css", "/docs/reference.js"])

      // a request body: $refs resolved, nested rows, constraints and enum values; the bearer scope
      const text = (selector: string) => run(() => page.locator(selector).first().textContent().then((t) => t ?? ""))
      const create = "section[id='pipelines.create']"
      expect(yield* text(`${create} .security`)).toContain("pipelines:write")
      const row = (section: string, field: string) =>
        run(() =>
          page.locator(`${section} tr`, {
            has: page.locator("code.field", { hasText: new RegExp(`^${field.replace(/[[\].]/g, "\\$&")}$`) })
          }).textContent().then((t) => t ?? "")
        )
      const tier = yield* row(create, "is_model_routing[].tier")
      expect(tier).toContain("router")
      expect(tier).toContain("required")
      expect(yield* row(create, "model_temperature")).toContain("0.1 to 1")
      const responses = yield* text(`${create} table.responses`)
      expect(responses).toContain("PipelineWithStagesResponse")
      expect(responses).toContain("422")
      // the other schemes, and the response data's schema it links
      expect(yield* text("section[id='webChat.initiate'] .security")).toContain("HTTP Basic")
      expect(yield* text("section[id='widget.history'] .security")).toContain("widgetSession")
      yield* run(() => page.locator(`${create} a[href='#schema-PipelineWithStages']`).first().click())
      expect(yield* run(() => page.evaluate(() => location.hash))).toBe("#schema-PipelineWithStages")
      const top = yield* run(() =>
        page.locator("#schema-PipelineWithStages").evaluate((e) => e.getBoundingClientRect().top)
      )
      expect(Math.abs(top)).toBeLessThan(50)

      // landmarks and headings; readable at 390 px without scrolling sideways
      expect(yield* run(() => page.getByRole("main").count())).toBe(1)
      expect(yield* run(() => page.getByRole("navigation", { name: "Contents" }).count())).toBe(1)
      expect(yield* run(() => page.getByRole("heading", { level: 1 }).count())).toBe(1)
      expect(yield* run(() => page.getByRole("heading", { level: 2, name: "Pipelines and stages" }).count())).toBe(1)
      expect(yield* run(() => page.evaluate(() => document.documentElement.scrollWidth))).toBeLessThanOrEqual(390)

      // the optional filter (the script is a file under the CSP)
      yield* run(() => page.getByLabel("Filter operations").fill("knowledge points"))
      const shown = yield* run(() => page.locator("section.operation:visible").count())
      expect(shown).toBeGreaterThan(0)
      expect(shown).toBeLessThan(operationIds.length)
      expect(yield* run(() => page.getByRole("status").innerText())).toBe(
        `${shown} of ${operationIds.length} operations`
      )

      // the interactive page is one link away
      expect(yield* run(() => page.getByRole("link", { name: /Try requests/ }).getAttribute("href"))).toBe("docs/try")
      expect(violations).toEqual([])
      expect(outside).toEqual([])

      // information for docs/benchmarks.md, not an assertion: a busy machine must not fail the suite
      const figures = {
        operations: operationIds.length,
        load_average: (yield* Effect.sync(() => Fs.readFileSync("/proc/loadavg", "utf8"))).split(" ").slice(0, 3).join(
          " "
        ),
        loads
      }
      yield* record("docs-load.json", figures)
      yield* Effect.logInfo("/docs load").pipe(Effect.annotateLogs({ loads: JSON.stringify(loads) }))
    }))

  it.scoped("/docs works without JavaScript", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const browser = yield* offlineBrowser
      const context = yield* run(() => browser.newContext({ javaScriptEnabled: false }))
      const { outside, page, violations } = yield* watchedPage(context, { refuse: false })
      yield* run(() => page.goto(`${baseUrl}/docs`, { waitUntil: "load" }))
      expect(yield* run(() => page.locator("section.operation h3").count())).toBeGreaterThan(40)
      expect(yield* run(() => page.locator("section[id='knowledge.search'] h3").isVisible())).toBe(true)
      // the filter needs the script, so without it there is no box that does nothing
      expect(yield* run(() => page.getByLabel("Filter operations").isHidden())).toBe(true)
      expect(violations).toEqual([])
      expect(outside).toEqual([])
    }))

  it.scoped("/docs/try (Scalar) loads offline, renders every group and sends a test request without a CSP violation", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const browser = yield* launch
      const context = yield* run(() => browser.newContext())
      const { outside, page, violations } = yield* watchedPage(context, { refuse: true })

      const started = Date.now()
      const response = yield* run(() => page.goto(`${baseUrl}/docs/try`, { waitUntil: "load" }))
      expect(response?.status()).toBe(200)
      yield* run(() => page.getByText("Pipelines and stages").first().waitFor({ timeout: 20_000 }))
      const rendered = Date.now() - started
      const first = yield* timing(page)
      expect(first.load_event_ms).toBeGreaterThan(0)
      yield* record("docs-try-load.json", { ...first, first_group_rendered_ms: rendered })

      const sent = page.waitForRequest((r) => r.url().startsWith(`${baseUrl}/api/user/`), { timeout: 20_000 })
      yield* run(() => page.getByRole("button", { name: "Test Request" }).first().click())
      yield* run(() => page.getByRole("button", { name: /^Send/ }).first().click())
      const request = yield* run(() => sent)
      expect(yield* run(async () => (await request.response())?.status())).toBe(401)
      expect(violations).toEqual([])
      expect(outside).toEqual([])
    }))

  it.effect("/docs and its files are gzipped, carry an ETag and answer 304 to it; the CSP allows no inline script or style", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const get = (path: string, headers: Record<string, string>) =>
        run(() =>
          fetch(`${baseUrl}${path}`, { headers }).then(async (r) => ({
            status: r.status,
            headers: r.headers,
            body: await r.text()
          }))
        )

      const page = yield* get("/docs", { "accept-encoding": "gzip" })
      expect(page.status).toBe(200)
      expect(page.headers.get("content-encoding")).toBe("gzip")
      expect(page.headers.get("cache-control")).toBe("no-cache")
      const csp = page.headers.get("content-security-policy")!
      expect(csp).toContain("script-src 'self'")
      expect(csp).toContain("style-src 'self'")
      expect(csp).not.toContain("unsafe-inline")
      expect(page.body).not.toMatch(/<script>|<style|style="/)
      const etag = page.headers.get("etag")!
      expect((yield* get("/docs", { "accept-encoding": "gzip", "if-none-match": etag })).status).toBe(304)

      const plain = yield* get("/docs", { "accept-encoding": "identity" })
      expect(plain.headers.get("content-encoding")).toBeNull()
      expect(plain.body).toBe(page.body)
      // each encoding has its own ETag
      expect(plain.headers.get("etag")).not.toBe(etag)
      expect((yield* get("/docs", { "accept-encoding": "identity", "if-none-match": etag })).status).toBe(200)

      for (const [, asset] of page.body.matchAll(/(?:href|src)="docs\/(reference\.(?:css|js)\?v=[\w-]+)"/g)) {
        const file = yield* get(`/docs/${asset}`, { "accept-encoding": "gzip" })
        expect(file.status).toBe(200)
        expect(file.headers.get("content-encoding")).toBe("gzip")
        expect(file.headers.get("cache-control")).toContain("immutable")
        expect(
          (yield* get(`/docs/${asset}`, { "accept-encoding": "gzip", "if-none-match": file.headers.get("etag")! }))
            .status
        ).toBe(304)
      }
      expect([...page.body.matchAll(/docs\/reference\.(css|js)\?v=/g)].length).toBe(2)

      const scalar = yield* get("/docs/try", {})
      expect(scalar.status).toBe(200)
      expect(scalar.body).toContain(`<script src="scalar.js?v=`)
    }))
})
