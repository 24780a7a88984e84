/**
 * Client addresses behind a reverse proxy (TRUST_PROXY, docs/deploy.md): the receiver's IP allowlist and
 * the widget's per-address session limit see the address `X-Forwarded-For` names when the connection
 * comes from a trusted proxy (here the test's own loopback connection), and the header is ignored when no
 * proxy is trusted, so a client cannot name an address of its choosing.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { funnel, ok, post } from "./support/Opportunities.js"
import { fetchJson, giveCredits, seedUser, TestServer, TestServerLive } from "./support/TestServer.js"
import { basic, type WebCredentials, webCredentials } from "./support/WebChat.js"

const SHOP = "https://shop.example.com"

/** A web channel with an IP allowlist of 203.0.113.0/24, and a widget channel. */
const channels = Effect.gen(function*() {
  const owner = yield* seedUser()
  yield* giveCredits(owner.workspace_id)
  const { pipeline } = yield* funnel(owner)
  const web = ok(
    yield* post(owner, "/api/user/channels", {
      kind: "web",
      pipeline_id: pipeline.id,
      allowed_ips: ["203.0.113.0/24"]
    }),
    "channels.create"
  )
  const widget = ok(
    yield* post(owner, "/api/user/channels", { kind: "widget", pipeline_id: pipeline.id, allowed_origins: [SHOP] }),
    "channels.create"
  )
  return { web: webCredentials(web), widget: { client_id: widget.client_id! } }
})

/** The receiver's answer to one message sent with `forwardedFor` (none: no header). */
const sendFrom = (channel: WebCredentials, forwardedFor?: string) =>
  Effect.flatMap(TestServer, ({ receiverUrl }) =>
    fetchJson(`${receiverUrl}/web-chat/message`, {
      method: "POST",
      headers: {
        authorization: basic(channel),
        "content-type": "application/json",
        ...(forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor })
      },
      body: JSON.stringify({ contact_id: "proxied-visitor", message: "hello" })
    })).pipe(Effect.map((r) => r.status))

/** The status of a new widget session opened with `forwardedFor`. */
const sessionFrom = (widget: { client_id: string }, forwardedFor: string) =>
  Effect.flatMap(TestServer, ({ baseUrl }) =>
    fetchJson(`${baseUrl}/api/widget/session`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: SHOP, "x-forwarded-for": forwardedFor },
      body: JSON.stringify({ client_id: widget.client_id })
    })).pipe(Effect.map((r) => r.status))

layer(TestServerLive({ TRUST_PROXY: "loopback", WIDGET_SESSIONS_PER_HOUR: "2" }))("behind a trusted proxy", (it) => {
  describe("X-Forwarded-For names the client", () => {
    it.effect("the IP allowlist checks the forwarded address, skipping trusted hops, never an address left of an untrusted one", () =>
      Effect.gen(function*() {
        const { web } = yield* channels
        expect(yield* sendFrom(web, "203.0.113.9")).toBe(200)
        expect(yield* sendFrom(web, "198.51.100.1")).toBe(403)
        // a second proxy on loopback in front of this one: skipped
        expect(yield* sendFrom(web, "203.0.113.9, 127.0.0.1")).toBe(200)
        // the client wrote the first entry itself; the proxy appended what it saw
        expect(yield* sendFrom(web, "203.0.113.9, 198.51.100.1")).toBe(403)
        // not an address: the walk stops at the proxy, which is not in the allowlist
        expect(yield* sendFrom(web, "203.0.113.9, not-an-ip")).toBe(403)
        // no header: the proxy's own address
        expect(yield* sendFrom(web)).toBe(403)
      }))

    it.effect("the widget's session limit counts each forwarded address apart", () =>
      Effect.gen(function*() {
        const { widget } = yield* channels
        expect(yield* sessionFrom(widget, "203.0.113.20")).toBe(200)
        expect(yield* sessionFrom(widget, "203.0.113.20")).toBe(200)
        expect(yield* sessionFrom(widget, "203.0.113.20")).toBe(429)
        expect(yield* sessionFrom(widget, "203.0.113.21")).toBe(200)
      }))
  })
})

layer(TestServerLive({ WIDGET_SESSIONS_PER_HOUR: "2" }))("with no trusted proxy", (it) => {
  it.effect("X-Forwarded-For is ignored: the allowlist and the session limit see the connection's address", () =>
    Effect.gen(function*() {
      const { web, widget } = yield* channels
      expect(yield* sendFrom(web, "203.0.113.9")).toBe(403)
      expect(yield* sessionFrom(widget, "203.0.113.30")).toBe(200)
      expect(yield* sessionFrom(widget, "203.0.113.31")).toBe(200)
      expect(yield* sessionFrom(widget, "203.0.113.32")).toBe(429)
    }))
})
