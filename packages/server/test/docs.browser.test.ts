/**
 * `/docs` in a real browser under its Content-Security-Policy: Scalar's bundle renders the reference and
 * its API client sends a request to this server, with no CSP violation on the way and no request to any
 * host but this one (no web fonts, no CDN script), so the page works offline.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { launch } from "./support/Browser.js"
import { TestServer, TestServerLive } from "./support/TestServer.js"

const loopback = new Set(["127.0.0.1", "localhost", "[::1]"])

layer(TestServerLive(), { excludeTestServices: true })("the API reference in a browser", (it) => {
  it.scoped("loads offline, renders every group and sends a test request without a CSP violation", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const browser = yield* launch
      const context = yield* Effect.promise(() => browser.newContext())
      const run = <A>(f: () => Promise<A>) => Effect.promise(f)
      // anything bound elsewhere is recorded and refused, so a regression fails here rather than hanging on a network
      const outside: Array<string> = []
      yield* run(() =>
        context.route(
          (url) => (url.protocol === "http:" || url.protocol === "https:" || url.protocol === "ws:") && !loopback.has(url.hostname),
          (route) => route.abort()
        )
      )
      const page = yield* run(() => context.newPage())
      page.on("request", (r) => {
        const url = new URL(r.url())
        if (url.protocol !== "data:" && url.protocol !== "blob:" && !loopback.has(url.hostname)) outside.push(r.url())
      })
      const violations: Array<string> = []
      page.on("console", (m) => m.text().includes("Content Security Policy") && violations.push(m.text()))
      page.on("pageerror", (e) => violations.push(String(e)))

      const started = Date.now()
      const response = yield* run(() => page.goto(`${baseUrl}/docs`, { waitUntil: "load" }))
      const loaded = Date.now() - started
      expect(response?.status()).toBe(200)
      yield* run(() => page.getByText("Pipelines and stages").first().waitFor({ timeout: 20_000 }))
      const rendered = Date.now() - started
      const navigation = yield* run(() =>
        page.evaluate(() => {
          const [entry] = performance.getEntriesByType("navigation") as Array<PerformanceNavigationTiming>
          return { domContentLoaded: entry!.domContentLoadedEventEnd, load: entry!.loadEventEnd }
        })
      )
      expect(navigation.load).toBeGreaterThan(0)
      // a second visit: the bundle from the browser's cache (it is immutable), so what is left is running it
      yield* run(() => page.reload({ waitUntil: "load" }))
      yield* run(() => page.getByText("Pipelines and stages").first().waitFor({ timeout: 20_000 }))
      const reloaded = yield* run(() =>
        page.evaluate(() => (performance.getEntriesByType("navigation") as Array<PerformanceNavigationTiming>)[0]!.loadEventEnd)
      )
      // information for docs/benchmarks.md, not an assertion: a busy machine must not fail the suite
      const timing = {
        load_event_ms: Math.round(navigation.load),
        goto_load_ms: loaded,
        first_group_rendered_ms: rendered,
        reload_load_event_ms: Math.round(reloaded)
      }
      Fs.mkdirSync("test-results", { recursive: true })
      Fs.writeFileSync(Path.join("test-results", "docs-load.json"), JSON.stringify(timing, null, 2))
      yield* Effect.logInfo("/docs load").pipe(Effect.annotateLogs(timing))

      const sent = page.waitForRequest((r) => r.url().startsWith(`${baseUrl}/api/user/`), { timeout: 20_000 })
      yield* run(() => page.getByRole("button", { name: "Test Request" }).first().click())
      yield* run(() => page.getByRole("button", { name: /^Send/ }).first().click())
      const request = yield* run(() => sent)
      expect((yield* run(async () => (await request.response())?.status()))).toBe(401)
      expect(violations).toEqual([])
      expect(outside).toEqual([])
    }))
})
