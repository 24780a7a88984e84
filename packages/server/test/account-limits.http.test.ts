/**
 * Issue 35: the sign-in limit holds under concurrency (each attempt is counted in Postgres before its
 * password is checked, so the 11th of a burst is refused whatever the others' outcome), the count is one
 * for every api process on the database, the OAuth registration and widget-session limits are counted the
 * same way, and `return_to` leads only to a path of this origin as a browser parses it. Addresses come from
 * `X-Forwarded-For` (the test's loopback connection is a trusted proxy), so each test has its own.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { Sessions } from "../src/account/Sessions.js"
import { funnel, ok, post } from "./support/Opportunities.js"
import { hiddenFields } from "./support/ScriptedBrowser.js"
import { giveCredits, seedUser, TestServer, TestServerLive } from "./support/TestServer.js"

const PASSWORD = "correct horse battery"

/** The sign-in form's login cookie and CSRF token, then a function posting one attempt from `address`. */
const signInForm = (address: string) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestServer
    const page = yield* Effect.promise(() =>
      fetch(`${baseUrl}/account/sign-in`, { headers: { "x-forwarded-for": address } })
    )
    const cookie = page.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ")
    const fields = hiddenFields(yield* Effect.promise(() => page.text()), "/account/sign-in")
    return (email: string, password: string, returnTo = "/account") =>
      Effect.promise(async () => {
        const response = await fetch(`${baseUrl}/account/sign-in`, {
          method: "POST",
          redirect: "manual",
          headers: { cookie, "x-forwarded-for": address, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ ...fields, return_to: returnTo, email, password })
        })
        await response.arrayBuffer()
        return { status: response.status, location: response.headers.get("location") }
      })
  })

/** `count` identical JSON POSTs sent at once: their statuses. */
const burst = (count: number, url: string, headers: Record<string, string>, body: unknown) =>
  Effect.all(
    Array.from({ length: count }, () =>
      Effect.promise(async () => {
        const response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify(body)
        })
        await response.arrayBuffer()
        return response.status
      })),
    { concurrency: "unbounded" }
  )

layer(TestServerLive({ TRUST_PROXY: "loopback", OAUTH_REGISTRATIONS_PER_HOUR: "5", WIDGET_SESSIONS_PER_HOUR: "5" }), {
  excludeTestServices: true
})("limits that hold under concurrency", (it) => {
  describe("sign-in", () => {
    it.effect("a burst of 200 concurrent attempts has exactly 10 checked; the right password past them is refused", () =>
      Effect.gen(function*() {
        const user = yield* seedUser()
        const attempt = yield* signInForm("198.51.100.11")
        const burst = yield* Effect.all(
          Array.from({ length: 200 }, (_, i) => attempt(user.email, i === 120 ? PASSWORD : `wrong-${i}`)),
          { concurrency: "unbounded" }
        )
        const statuses = burst.map((r) => r.status)
        const checked = statuses.filter((s) => s === 401 || s === 303)
        expect(checked).toHaveLength(10)
        expect(statuses.filter((s) => s === 429)).toHaveLength(190)
        // whatever came of the burst, the address is now blocked: the right password too
        expect((yield* attempt(user.email, PASSWORD)).status).toBe(429)
        // another address is not
        const elsewhere = yield* signInForm("198.51.100.12")
        expect((yield* elsewhere(user.email, PASSWORD)).status).toBe(303)
      }))

    it.effect("a success gives its own attempt back but clears no failure", () =>
      Effect.gen(function*() {
        const user = yield* seedUser()
        const attempt = yield* signInForm("198.51.100.21")
        for (let i = 0; i < 9; i++) expect((yield* attempt(user.email, "wrong")).status).toBe(401)
        for (let i = 0; i < 3; i++) expect((yield* attempt(user.email, PASSWORD)).status).toBe(303)
        expect((yield* attempt(user.email, "wrong")).status).toBe(401)
        expect((yield* attempt(user.email, PASSWORD)).status).toBe(429)
      }))

    it.effect("the count is one for every api process on the database", () =>
      Effect.gen(function*() {
        const user = yield* seedUser()
        const attempt = yield* signInForm("198.51.100.31")
        for (let i = 0; i < 10; i++) expect((yield* attempt(user.email, "wrong")).status).toBe(401)
        // a second Sessions service, as another api process builds it, over the same database
        const other = Context.get(yield* Layer.build(Layer.fresh(Sessions.Default)), Sessions)
        const refused = yield* Effect.flip(other.signIn(user.email, PASSWORD, "198.51.100.31"))
        expect(refused._tag).toBe("TooManyAttempts")
        expect(refused.retryAfter).toBeGreaterThan(0)
      }).pipe(Effect.scoped))
  })

  describe("return_to", () => {
    const offSite = [
      "//evil.example/x",
      "/\\evil.example",
      "/\t/evil.example",
      "/\n/evil.example",
      "/\\\t\\evil.example",
      "https://evil.example/"
    ]
    it.effect("leads only to a path of this origin, as a browser parses it", () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestServer
        const user = yield* seedUser()
        const attempt = yield* signInForm("198.51.100.41")
        for (const returnTo of offSite) {
          const signedIn = yield* attempt(user.email, PASSWORD, returnTo)
          expect(signedIn.status, JSON.stringify(returnTo)).toBe(303)
          expect(new URL(signedIn.location!, baseUrl).origin, JSON.stringify(returnTo)).toBe(baseUrl)
          expect(signedIn.location).toBe("/account")
        }
        const inside = yield* attempt(user.email, PASSWORD, "/authorize?client_id=x&scope=a%20b")
        expect(inside.location).toBe("/authorize?client_id=x&scope=a%20b")
      }))
  })

  describe("OAuth registration and widget sessions", () => {
    it.effect("concurrent registrations from one address get exactly the limit", () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestServer
        const statuses = yield* burst(30, `${baseUrl}/register`, { "x-forwarded-for": "198.51.100.51" }, {
          redirect_uris: ["http://127.0.0.1:9/cb"],
          token_endpoint_auth_method: "none"
        })
        expect(statuses.filter((s) => s === 201)).toHaveLength(5)
        expect(statuses.filter((s) => s === 429)).toHaveLength(25)
      }))

    it.effect("concurrent new widget sessions from one address get exactly the limit", () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestServer
        const owner = yield* seedUser()
        yield* giveCredits(owner.workspace_id)
        const { pipeline } = yield* funnel(owner)
        const widget = ok(
          yield* post(owner, "/api/user/channels", {
            kind: "widget",
            pipeline_id: pipeline.id,
            allowed_origins: ["https://shop.example"]
          }),
          "channels.create"
        )
        const statuses = yield* burst(20, `${baseUrl}/api/widget/session`, {
          origin: "https://shop.example",
          "x-forwarded-for": "198.51.100.61"
        }, {
          client_id: widget.client_id
        })
        expect(statuses.filter((s) => s === 200)).toHaveLength(5)
        expect(statuses.filter((s) => s === 429)).toHaveLength(15)
      }))
  })
})
