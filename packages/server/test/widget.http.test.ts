/**
 * The website widget's browser-safe flow over real HTTP: a widget channel's public client id plus the
 * page's Origin open a visitor session; the session token then authorises that visitor's messages (at the
 * receiver), history and live stream, and nothing else. CORS, refusals, tenant isolation, rotation,
 * the new-session limit, the typing indicator and the signed reply webhook.
 */
import { expect, layer } from "@effect/vitest"
import { ReceiverAnswer, verifyServiceSignature } from "@parley/domain"
import { Effect, Schema } from "effect"
import { io } from "socket.io-client"
import { bodyAs, failure } from "./support/Contract.js"
import { expect422, expectStatus, funnel, ok, post, sqlRows } from "./support/Opportunities.js"
import { call, fetchJson, giveCredits, seedUser, TestServer, TestServerLive } from "./support/TestServer.js"
import { webCredentials } from "./support/WebChat.js"
import { eventually, webhookReceiver } from "./support/WebhookReceiver.js"

const SHOP = "https://shop.example"

/** An owner with credits, a pipeline and a widget channel allowed on SHOP. */
const shop = (extra: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const owner = yield* seedUser()
    yield* giveCredits(owner.workspace_id)
    const { pipeline, inbound } = yield* funnel(owner)
    const widget = ok(
      yield* post(owner, "/api/user/channels", {
        kind: "widget",
        pipeline_id: pipeline.id,
        allowed_origins: [SHOP],
        ...extra
      }),
      "channels.create"
    )
    return { owner, pipeline, inbound, widget: webCredentials(widget) }
  })

/** `origin` null: a request without an Origin header (not from a page). */
const session = (body: Record<string, unknown>, origin: string | null = SHOP) =>
  call("/api/widget/session", { method: "POST", body, headers: origin === null ? {} : { origin } })

const open = (clientId: string, previous?: string) =>
  Effect.map(
    session(previous === undefined ? { client_id: clientId } : { client_id: clientId, session: previous }),
    (r) => ok(r, "widget.session")
  )

/** The messages a visitor socket's `new_message` event carries first, as far as these tests read them. */
const SocketMessages = Schema.Array(
  Schema.Struct({ role: Schema.String, is_manual: Schema.Boolean, message_id: Schema.String })
)
/** What `agent_typing` carries. */
const TypingFlag = Schema.Struct({ typing: Schema.Boolean })

const history = (token: string | undefined, query = "", origin?: string) =>
  call(`/api/widget/messages${query}`, {
    headers: {
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(origin === undefined ? {} : { origin })
    }
  })

/** What widget.js sends: multipart, the session as Bearer, the page's Origin. */
const send = (
  visitor: { session: string; contact_id: string; messages_url: string },
  message: string,
  options: {
    origin?: string
    contactId?: string
    auth?: string
    files?: Array<{ name: string; type: string; body: string }>
  } = {}
) => {
  const form = new FormData()
  form.set("contact_id", options.contactId ?? visitor.contact_id)
  form.set("message", message)
  for (const f of options.files ?? []) form.append("files[]", new Blob([f.body], { type: f.type }), f.name)
  return fetchJson(visitor.messages_url, {
    method: "POST",
    headers: { authorization: options.auth ?? `Bearer ${visitor.session}`, origin: options.origin ?? SHOP },
    body: form
  })
}

layer(TestServerLive({ OUTBOUND_ALLOW_PRIVATE: "true", WIDGET_SESSIONS_PER_HOUR: "6" }), { excludeTestServices: true })(
  "website widget",
  (it) => {
    it.effect("a page of an allowed origin opens a session with a server-chosen contact; the session resumes it", () =>
      Effect.gen(function*() {
        const { receiverUrl } = yield* TestServer
        const { widget } = yield* shop()
        const first = yield* open(widget.client_id)
        expect(first.contact_id).toMatch(/^wg_[0-9A-Z]{26}$/)
        expect(first.session).toMatch(/^wgs1\./)
        expect(first.channel).toBe(`conversation.${first.conversation_id}`)
        expect(first.messages_url).toBe(`${receiverUrl}/web-chat/message`)
        expect(first.event).toBe("new_message")

        const again = yield* open(widget.client_id, first.session)
        expect(again.contact_id).toBe(first.contact_id)
        expect(again.conversation_id).toBe(first.conversation_id)

        // a session that is not ours (tampered) starts a new visitor instead of failing the page
        const tampered = first.session.replace(/.$/, (c: string) => (c === "0" ? "1" : "0"))
        const stranger = yield* open(widget.client_id, tampered)
        expect(stranger.contact_id).not.toBe(first.contact_id)
        expect(stranger.conversation_id).not.toBe(first.conversation_id)
      }))

    it.effect("refuses other sites, unknown and non-widget client ids, inactive or unlinked channels, and bad bodies", () =>
      Effect.gen(function*() {
        const { owner, widget } = yield* shop()
        // no Origin (not a page) and another site: 403, which the refused page can still read (CORS)
        expectStatus(yield* session({ client_id: widget.client_id }, null), 403, "Origin not allowed")
        const other = yield* session({ client_id: widget.client_id }, "https://evil.example")
        expectStatus(other, 403, "Origin not allowed")
        expect(other.headers.get("access-control-allow-origin")).toBe("https://evil.example")

        expectStatus(yield* session({ client_id: "wc_unknown" }), 401, "Invalid client credentials")
        const web = ok(
          yield* post(owner, "/api/user/channels", { kind: "web", pipeline_id: widget.pipeline_id }),
          "channels.create"
        )
        const notWidget = yield* session({ client_id: web.client_id })
        expect422(notWidget, ["client_id"])
        expect(failure(notWidget).message).toBe("This endpoint is only available for widget channels.")

        // an empty allowlist allows no site at all
        const nowhere = ok(
          yield* post(owner, "/api/user/channels", { kind: "widget", pipeline_id: widget.pipeline_id }),
          "channels.create"
        )
        expectStatus(yield* session({ client_id: nowhere.client_id }), 403, "Origin not allowed")

        const unlinked = ok(
          yield* post(owner, "/api/user/channels", { kind: "widget", allowed_origins: [SHOP] }),
          "channels.create"
        )
        const noPipeline = yield* session({ client_id: unlinked.client_id })
        expect422(noPipeline, ["client_id"])
        expect(failure(noPipeline).message).toBe("Channel is not linked to any pipeline")

        const live = yield* open(widget.client_id)
        ok(
          yield* call(`/api/user/channels/${widget.id}`, {
            method: "PUT",
            token: owner.token,
            body: { is_active: false }
          }),
          "channels.update"
        )
        expectStatus(yield* session({ client_id: widget.client_id }), 401, "Invalid client credentials")
        expectStatus(yield* history(live.session), 401, "Invalid or expired widget session")

        expect422(yield* session({}), ["client_id"])
        expect422(yield* session({ client_id: "" }), ["client_id"])
        expect422(yield* session({ client_id: widget.client_id, session: 5 }), ["session"])
      }))

    it.effect("answers CORS preflights for the widget's endpoints and the receiver", () =>
      Effect.gen(function*() {
        const { baseUrl, receiverUrl } = yield* TestServer
        for (
          const url of [
            `${baseUrl}/api/widget/session`,
            `${baseUrl}/api/widget/messages`,
            `${receiverUrl}/web-chat/message`
          ]
        ) {
          const r = yield* Effect.promise(() =>
            fetch(url, {
              method: "OPTIONS",
              headers: {
                origin: SHOP,
                "access-control-request-method": "POST",
                "access-control-request-headers": "authorization,idempotency-key"
              }
            })
          )
          expect(r.status).toBe(204)
          expect(r.headers.get("access-control-allow-origin")).toBe(SHOP)
          expect(r.headers.get("access-control-allow-headers")).toContain("idempotency-key")
          expect(r.headers.get("access-control-allow-credentials")).toBeNull()
        }
        // the rest of the API is not opened to other sites
        const rest = yield* Effect.promise(() =>
          fetch(`${baseUrl}/api/user/me`, {
            method: "OPTIONS",
            headers: { origin: SHOP, "access-control-request-method": "GET" }
          })
        )
        expect(rest.headers.get("access-control-allow-origin")).toBeNull()
      }))

    it.effect("the session sends the visitor's messages and files to the receiver, for that contact only", () =>
      Effect.gen(function*() {
        const { widget } = yield* shop()
        const visitor = yield* open(widget.client_id)
        const sent = yield* send(visitor, "Do you ship to Vienna?", {
          files: [{ name: "list.txt", type: "text/plain", body: "two chairs" }]
        })
        expect(sent.status).toBe(200)
        expect(sent.headers.get("access-control-allow-origin")).toBe(SHOP)
        const [stored] = yield* sqlRows<
          {
            channel_id: number
            external_chat_id: string
            conversation_id: number
            files: ReadonlyArray<{ path: string }>
          }
        >`select channel_id, external_chat_id, conversation_id, files from messages where id = ${
          bodyAs(sent, ReceiverAnswer).data!.message_id
        }`
        expect(stored).toMatchObject({
          channel_id: widget.id,
          external_chat_id: visitor.contact_id,
          conversation_id: visitor.conversation_id
        })
        expect(stored!.files[0]!.path).toMatch(new RegExp(`^uploads/${widget.client_id}/`))

        const other = yield* open(widget.client_id)
        const wrongContact = yield* send(visitor, "hi", { contactId: other.contact_id })
        expect(wrongContact.status).toBe(403)
        expect(bodyAs(wrongContact, ReceiverAnswer).message).toBe(
          "The contact_id does not belong to this widget session."
        )
        expect((yield* send(visitor, "hi", { origin: "https://evil.example" })).status).toBe(403)
        // a hex digit of the signature changed to another value ("a" to "A" would be the same byte: hex is
        // read case-insensitively, so one run in sixteen saw its "forgery" accepted)
        const at = visitor.session.length - 10
        const tampered = visitor.session.slice(0, at) + (visitor.session[at] === "0" ? "1" : "0") +
          visitor.session.slice(at + 1)
        const forged = yield* send(visitor, "hi", { auth: `Bearer ${tampered}` })
        expect(forged.status).toBe(401)
        expect(bodyAs(forged, ReceiverAnswer).message).toBe("Invalid or expired widget session")
        expect((yield* send(visitor, "hi", { auth: "Bearer" })).status).toBe(401)
        // none of the refused ones was stored
        const [counted] = yield* sqlRows<
          { n: number }
        >`select count(*)::int as n from messages where conversation_id in (${visitor.conversation_id}, ${other.conversation_id}) and role = 'user'`
        expect(counted!.n).toBe(1)
      }))

    it.effect("history shows the visitor's own conversation only, with signed file URLs", () =>
      Effect.gen(function*() {
        const { widget } = yield* shop()
        const ann = yield* open(widget.client_id)
        const bob = yield* open(widget.client_id)
        expect((yield* send(ann, "Ann here", { files: [{ name: "a.txt", type: "text/plain", body: "x" }] })).status)
          .toBe(200)
        expect((yield* send(bob, "Bob here")).status).toBe(200)
        const annPage = ok(yield* history(ann.session, "?per_page=50", SHOP), "widget.history")
        const texts = annPage.data.filter((m) => m.role === "user").map((m) => m.message)
        expect(texts).toEqual(["Ann here"])
        expect(annPage.data.every((m) => m.conversation_id === ann.conversation_id)).toBe(true)
        const file = annPage.data.find((m) => m.files.length > 0)!.files[0]!
        const { baseUrl } = yield* TestServer
        expect(file.url.startsWith(baseUrl)).toBe(true)
        expect((yield* Effect.promise(() => fetch(file.url))).status).toBe(200)

        expectStatus(yield* history(undefined), 401)
        expectStatus(yield* history("wgs1.e30.00"), 401, "Invalid or expired widget session")
        expectStatus(yield* history(ann.session, "", "https://evil.example"), 403, "Origin not allowed")
        expect422(yield* history(ann.session, "?per_page=0"), ["per_page"])
        expect422(yield* history(ann.session, "?page=x"), ["page"])
      }))

    it.effect("another workspace's widget cannot resume or read this workspace's visitor", () =>
      Effect.gen(function*() {
        const { widget } = yield* shop()
        const { widget: theirs } = yield* shop()
        const visitor = yield* open(widget.client_id)
        expect((yield* send(visitor, "private question")).status).toBe(200)
        const elsewhere = yield* open(theirs.client_id, visitor.session)
        expect(elsewhere.contact_id).not.toBe(visitor.contact_id)
        expect(elsewhere.conversation_id).not.toBe(visitor.conversation_id)
        const theirHistory = ok(yield* history(elsewhere.session, "?per_page=50"), "widget.history")
        expect(theirHistory.data.some((m) => m.message === "private question")).toBe(false)
        // the other channel's session does not post into this conversation either
        const cross = yield* send({ ...elsewhere, contact_id: visitor.contact_id }, "hijack")
        expect(cross.status).toBe(403)
      }))

    it.effect("rotating the channel's client id ends its visitors' sessions", () =>
      Effect.gen(function*() {
        const { owner, widget } = yield* shop()
        const visitor = yield* open(widget.client_id)
        const rotated = ok(yield* post(owner, `/api/user/channels/${widget.id}/rotate`, {}), "channels.rotate")
        expect(rotated.client_id).not.toBe(widget.client_id)
        expectStatus(yield* history(visitor.session), 401)
        expect((yield* send(visitor, "still there?")).status).toBe(401)
        expect(rotated.client_id).not.toBeNull()
        const fresh = yield* open(rotated.client_id!, visitor.session)
        expect(fresh.contact_id).not.toBe(visitor.contact_id)
      }))

    it.effect("one address opens a limited number of new sessions an hour; resuming is not limited", () =>
      Effect.gen(function*() {
        const { widget } = yield* shop()
        const first = yield* open(widget.client_id)
        // WIDGET_SESSIONS_PER_HOUR is 6 in this file: five more new visitors, then 429
        for (let i = 0; i < 5; i++) yield* open(widget.client_id)
        expectStatus(yield* session({ client_id: widget.client_id }), 429)
        const resumed = yield* open(widget.client_id, first.session)
        expect(resumed.contact_id).toBe(first.contact_id)
      }))

    it.scoped("the reply arrives on the socket after a typing indicator, and the webhook is signed with the widget's secret", () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestServer
        const hook = yield* webhookReceiver(() => "ok")
        const { widget } = yield* shop({ callback_url: hook.url })
        expect(widget.client_secret).toMatch(/^wcs_/)
        const visitor = yield* open(widget.client_id)
        const events: Array<{ name: string; args: ReadonlyArray<unknown> }> = []
        const firstMessage = (e: { args: ReadonlyArray<unknown> }) =>
          Schema.decodeUnknownSync(SocketMessages)(e.args[0])[0]!
        const socket = yield* Effect.acquireRelease(
          Effect.sync(() =>
            io(visitor.socket_url, {
              forceNew: true,
              reconnection: false,
              transports: ["websocket"],
              extraHeaders: { origin: SHOP }
            })
          ),
          (s) => Effect.sync(() => s.close())
        )
        socket.onAny((name: string, ...args: Array<unknown>) => events.push({ name, args }))
        const ack = yield* Effect.promise(() =>
          socket.timeout(5_000).emitWithAck("join-channel", {
            channel: visitor.channel,
            app_key: visitor.app_key,
            token: visitor.token
          })
        )
        expect(ack).toMatchObject({ status: true, channel: visitor.channel })
        expect(baseUrl).toBe(visitor.socket_url)

        const sent = yield* send(visitor, "Hello, what do you offer?")
        expect(sent.status).toBe(200)
        const reply = yield* eventually(
          Effect.sync(() =>
            events.find((e) =>
              e.name === "new_message" && firstMessage(e).role === "assistant" && firstMessage(e).is_manual === false
            )
          )
        )
        const typing = events.findIndex((e) =>
          e.name === "agent_typing" && Schema.decodeUnknownSync(TypingFlag)(e.args[0]).typing === true
        )
        expect(typing).toBeGreaterThanOrEqual(0)
        expect(typing).toBeLessThan(events.indexOf(reply))

        const delivered = yield* eventually(
          Effect.sync(() =>
            hook.received.find((r) => JSON.parse(r.rawBody).message_id === firstMessage(reply).message_id)
          )
        )
        const body = JSON.parse(delivered.rawBody)
        expect(body).toMatchObject({ event: "message", client_id: widget.client_id, contact_id: visitor.contact_id })
        expect(verifyServiceSignature(widget.client_secret, {
          signature: delivered.headers["x-service-signature"] as string,
          timestamp: delivered.headers["x-service-timestamp"] as string
        }, delivered.rawBody)).toBe(true)
      }))

    it.effect("serves widget.js (gzip when accepted, revalidated by ETag) and a landing page at / without the demo", () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestServer
        const raw = yield* Effect.promise(() =>
          fetch(`${baseUrl}/widget.js`, { headers: { "accept-encoding": "identity" } })
        )
        expect(raw.status).toBe(200)
        expect(raw.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
        const text = yield* Effect.promise(() => raw.text())
        expect(text).toContain("/api/widget/session")
        const etag = raw.headers.get("etag")!
        const zipped = yield* Effect.promise(() =>
          fetch(`${baseUrl}/widget.js`, { headers: { "accept-encoding": "gzip" } })
        )
        expect(zipped.headers.get("content-encoding")).toBe("gzip")
        expect(yield* Effect.promise(() => zipped.text())).toBe(text)
        const again = yield* Effect.promise(() => fetch(`${baseUrl}/widget.js`, { headers: { "if-none-match": etag } }))
        expect(again.status).toBe(304)

        const landing = yield* Effect.promise(() => fetch(`${baseUrl}/`))
        expect(landing.status).toBe(200)
        expect(landing.headers.get("content-type")).toContain("text/html")
        expect(yield* Effect.promise(() => landing.text())).toContain("Parley is running")
        expect((yield* Effect.promise(() => fetch(`${baseUrl}/demo/state`))).status).toBe(404)
      }))
  }
)
