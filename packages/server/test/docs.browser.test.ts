/**
 * `/docs` in a real browser under its Content-Security-Policy: Scalar's bundle renders the reference and
 * its API client sends a request to this server, with no CSP violation on the way.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { launch } from "./support/Browser.js"
import { TestServer, TestServerLive } from "./support/TestServer.js"

layer(TestServerLive(), { excludeTestServices: true })("the API reference in a browser", (it) => {
  it.scoped("renders every group and sends a test request without a CSP violation", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const browser = yield* launch
      const context = yield* Effect.promise(() => browser.newContext())
      // Scalar's web fonts are the page's one outside resource; the suite stays offline
      yield* Effect.promise(() => context.route("https://fonts.scalar.com/**", (route) => route.abort()))
      const page = yield* Effect.promise(() => context.newPage())
      const run = <A>(f: () => Promise<A>) => Effect.promise(f)
      const violations: Array<string> = []
      page.on("console", (m) => m.text().includes("Content Security Policy") && violations.push(m.text()))
      page.on("pageerror", (e) => violations.push(String(e)))

      yield* run(() => page.goto(`${baseUrl}/docs`))
      yield* run(() => page.getByText("Pipelines and stages").first().waitFor({ timeout: 20_000 }))
      const sent = page.waitForRequest((r) => r.url().startsWith(`${baseUrl}/api/user/`), { timeout: 20_000 })
      yield* run(() => page.getByRole("button", { name: "Test Request" }).first().click())
      yield* run(() => page.getByRole("button", { name: /^Send/ }).first().click())
      const request = yield* run(() => sent)
      expect((yield* run(async () => (await request.response())?.status()))).toBe(401)
      expect(violations).toEqual([])
    }))
})
