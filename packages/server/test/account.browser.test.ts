/**
 * The account pages in a real browser (headless Chromium from the system package, driven by
 * playwright-core): sign in, create a personal access token with two scopes, see it exactly once, use
 * it, revoke it, sign out.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { sha256Hex } from "../src/identity/Secrets.js"
import { launch } from "./support/Browser.js"
import { sqlRows } from "./support/Opportunities.js"
import { fetchJson, seedUser, TestServer, TestServerLive } from "./support/TestServer.js"

const restStatus = (baseUrl: string, token: string, path: string) =>
  Effect.map(fetchJson(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` } }), (r) => r.status)

layer(TestServerLive(), { excludeTestServices: true })("account pages in a browser", (it) => {
  it.scoped("signs in, creates a token with two scopes shown only once, revokes it, and signs out", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const user = yield* seedUser()
      const browser = yield* launch
      const context = yield* Effect.promise(() => browser.newContext())
      const page = yield* Effect.promise(() => context.newPage())
      const run = <A>(f: () => Promise<A>) => Effect.promise(f)

      // not signed in: the account page sends us to sign in, and back afterwards
      yield* run(() => page.goto(`${baseUrl}/account`))
      expect(new URL(page.url()).pathname).toBe("/account/sign-in")
      yield* run(() => page.getByLabel("Email").fill(user.email))
      yield* run(() => page.getByLabel("Password").fill("wrong password"))
      yield* run(() => page.getByRole("button", { name: "Sign in" }).click())
      expect(yield* run(() => page.getByRole("alert").textContent())).toContain("The email or password is incorrect.")
      yield* run(() => page.getByLabel("Password").fill("correct horse battery"))
      yield* run(() => page.getByRole("button", { name: "Sign in" }).click())
      yield* run(() => page.waitForURL(`${baseUrl}/account`))
      expect(yield* run(() => page.getByRole("heading", { level: 1 }).textContent())).toBe("Your account")
      expect(yield* run(() => page.textContent("header"))).toContain(user.email)

      const cookies = yield* run(() => context.cookies())
      const session = cookies.find((c) => c.name === "parley_session")
      expect(session).toMatchObject({ httpOnly: true, sameSite: "Lax" })

      // create a token with two scopes
      yield* run(() => page.getByLabel("Name").fill("browser token"))
      yield* run(() => page.getByRole("checkbox", { name: /opportunities:read/ }).check())
      yield* run(() => page.getByRole("checkbox", { name: /knowledge:read/ }).check())
      yield* run(() => page.getByRole("button", { name: "Create token" }).click())
      yield* run(() => page.waitForSelector("#new-token-value"))
      const token = (yield* run(() => page.textContent("#new-token-value")))!.trim()
      expect(token).toMatch(/^pat_[0-9A-Za-z]{43}$/)
      const row = page.getByRole("row", { name: /browser token/ })
      expect(yield* run(() => row.textContent())).toContain("opportunities:read")
      expect(yield* run(() => row.textContent())).toContain("knowledge:read")
      expect(yield* run(() => row.textContent())).toContain(token.slice(-4))

      // stored only as its hash, with exactly the chosen scopes; it works for those scopes only
      const stored = yield* sqlRows`select scopes from access_tokens where token_hash = ${sha256Hex(token)}`
      expect(stored[0]?.scopes).toEqual(["opportunities:read", "knowledge:read"])
      expect(yield* restStatus(baseUrl, token, "/api/user/opportunities")).toBe(200)
      expect(yield* restStatus(baseUrl, token, "/api/user/knowledge-tables")).toBe(200)
      expect(yield* restStatus(baseUrl, token, "/api/user/pipelines")).toBe(403)

      // shown once: a reload lists the token but no longer shows it
      yield* run(() => page.reload())
      expect(yield* run(() => page.locator("#new-token-value").count())).toBe(0)
      expect(yield* run(() => page.content())).not.toContain(token)
      expect(yield* run(() => page.getByRole("row", { name: /browser token/ }).count())).toBe(1)

      // revoke it
      yield* run(() => page.getByRole("button", { name: "Revoke token browser token" }).click())
      yield* run(() => page.waitForURL(`${baseUrl}/account`))
      expect(yield* run(() => page.getByRole("row", { name: /browser token/ }).count())).toBe(0)
      expect(yield* restStatus(baseUrl, token, "/api/user/opportunities")).toBe(401)

      // sign out: the session ends
      yield* run(() => page.getByRole("button", { name: "Sign out" }).click())
      yield* run(() => page.waitForURL(/\/account\/sign-in$/))
      yield* run(() => page.goto(`${baseUrl}/account`))
      expect(new URL(page.url()).pathname).toBe("/account/sign-in")
    }))
})
