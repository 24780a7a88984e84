/**
 * Issue 38, WhatsApp Cloud API end to end: through the real server against a local fake Graph API that checks the
 * bearer token and Meta's request shapes and answers with Meta's bodies. Connecting a channel, the verify
 * handshake, signed webhooks (and unsigned or wrongly signed ones, which store nothing), batches and retries, every
 * inbound type, media, the AI's and an operator's messages reaching the fake, receipts that never move backwards,
 * the 24-hour window by the provider's clock, and the error families of Meta's codes.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { connectChannel } from "./support/Channels.js"
import {
  API_VERSION,
  expiredToken,
  fakeGraph,
  graphError,
  graphState,
  inbound,
  postWebhook,
  receipt,
  sends,
  webhookFor
} from "./support/FakeGraph.js"
import { mcpClient } from "./support/McpClient.js"
import { expect422, freshPhone, get, ok, post, put, sqlRows } from "./support/Opportunities.js"
import { seedUser, TestServer, TestServerLive } from "./support/TestServer.js"
import { eventually } from "./support/WebhookReceiver.js"

const APP_SECRET = "meta-app-secret-for-tests"
const graph = graphState("106540352242922", "EAAG-test-token")

const FakeMeta = Layer.unwrapScoped(
  Effect.map(
    fakeGraph(graph),
    (url) =>
      TestServerLive({ META_GRAPH_API_URL: url, ENGINE_SWEEP_INTERVAL_MS: "1000", WEBHOOK_RETRY_DELAY_MS: "200" })
  )
)

interface WhatsAppChannel {
  readonly id: number
  readonly webhook_url: string
  readonly verify_token: string
}

const credentials = (extra: Record<string, unknown> = {}) => ({
  phone_number_id: graph.phoneNumberId,
  access_token: graph.token,
  app_secret: APP_SECRET,
  api_version: API_VERSION,
  ...extra
})

/** A workspace with a pipeline answering at once on the local model, and a WhatsApp channel linked to it. */
const connect = Effect.suspend(() =>
  connectChannel<WhatsAppChannel>({ kind: "whatsapp", name: "Support line", credentials: credentials() })
)

const deliver = (channel: WhatsAppChannel, changes: Parameters<typeof webhookFor>[1]) =>
  postWebhook(channel.webhook_url, APP_SECRET, webhookFor(graph, changes))

interface Row {
  readonly id: string
  readonly role: string
  readonly message: string | null
  readonly status: string
  readonly files: ReadonlyArray<{ path: string; mimetype: string; type: string; size: number; name: string }>
  readonly attachments: ReadonlyArray<Record<string, unknown>>
  readonly external_message_id: string | null
  readonly external_chat_id: string | null
  readonly delivery_status: string | null
  readonly handled_reason: string | null
  readonly error: string | null
  readonly conversation_id: number
  readonly contact_id: number
}

const messagesOf = (waId: string) =>
  sqlRows<Row>`
    select id, role, message, status, files, attachments, external_message_id, external_chat_id, delivery_status,
           handled_reason, error, conversation_id::int, contact_id::int
    from messages where external_chat_id = ${waId} order by created_at, id`

/** Waits for the AI's reply (sent or failed) to the contact's message with the provider id `wamid`. */
const replyTo = (wamid: string) =>
  eventually(
    Effect.map(
      sqlRows<Row>`
        select r.id, r.role, r.message, r.status, r.external_message_id, r.delivery_status, r.error, r.conversation_id::int
        from messages u join messages r on r.in_reply_to = u.id
        where u.external_message_id = ${wamid} and u.role = 'user'`,
      (rows) =>
        rows[0] !== undefined && rows[0].status !== "ai_generated" && rows[0].status !== "sending"
          ? rows[0]
          : undefined
    ),
    20_000
  )

layer(FakeMeta, { excludeTestServices: true })("WhatsApp Cloud API channel", (it) => {
  it.effect("connects with credentials never returned again, a webhook URL on the receiver and a verify token", () =>
    Effect.gen(function*() {
      const { channel, owner } = yield* connect
      const { receiverUrl } = yield* TestServer
      expect(channel.webhook_url).toMatch(new RegExp(`^${receiverUrl}/channels/wh_[A-Za-z0-9]+/webhook$`))
      expect(channel.verify_token).toMatch(/^pvt_/)
      const shown = ok(yield* get(owner, `/api/user/channels/${channel.id}`), "channels.get")
      expect(shown).toMatchObject({ kind: "whatsapp", status: "connected", webhook_url: channel.webhook_url })
      expect(JSON.stringify(shown)).not.toContain(graph.token)
      expect(JSON.stringify(shown)).not.toContain(APP_SECRET)
      expect("verify_token" in shown).toBe(false)
      // stored encrypted
      const [row] = yield* sqlRows<
        { c: string }
      >`select credentials_ciphertext as c from channels where id = ${channel.id}`
      expect(row!.c).not.toContain(graph.token)

      // the check call asks the Graph API for the phone number
      const checked = ok(yield* post(owner, `/api/user/channels/${channel.id}/check`, {}), "channels.check")
      expect(checked).toMatchObject({ ok: true, account: { verified_name: "Acme Support" } })

      // bad credentials: 422 naming each field; another workspace's channel is not found
      expect422(
        yield* post(owner, "/api/user/channels", { kind: "whatsapp", credentials: { phone_number_id: "abc" } }),
        ["credentials.access_token", "credentials.app_secret", "credentials.phone_number_id"]
      )
      expect422(yield* post(owner, "/api/user/channels", { kind: "whatsapp" }), ["credentials"])
      const stranger = yield* seedUser()
      expect((yield* get(stranger, `/api/user/channels/${channel.id}`)).status).toBe(404)
      expect((yield* post(stranger, `/api/user/channels/${channel.id}/check`, {})).status).toBe(404)
    }))

  it.effect("answers Meta's verify handshake with the challenge only for the right token", () =>
    Effect.gen(function*() {
      const { channel } = yield* connect
      const url = (token: string) =>
        `${channel.webhook_url}?hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=1158201444`
      const good = yield* Effect.promise(() => fetch(url(channel.verify_token)))
      expect(good.status).toBe(200)
      expect(yield* Effect.promise(() => good.text())).toBe("1158201444")
      expect((yield* Effect.promise(() => fetch(url("wrong-token-123")))).status).toBe(403)
      const unknown = channel.webhook_url.replace(/wh_[A-Za-z0-9]+/, "wh_nothing")
      expect((yield* Effect.promise(() => fetch(`${unknown}?hub.mode=subscribe`))).status).toBe(404)
    }))

  it.effect("refuses unsigned and wrongly signed posts with 401 and stores nothing", () =>
    Effect.gen(function*() {
      const { channel } = yield* connect
      const waId = freshPhone()
      const body = webhookFor(graph, [{
        messages: [inbound(waId, `wamid.${waId}.1`, Date.now(), { type: "text", text: { body: "hi" } })]
      }])
      expect((yield* postWebhook(channel.webhook_url, APP_SECRET, body, { signature: null })).status).toBe(401)
      expect((yield* postWebhook(channel.webhook_url, "another-secret", body)).status).toBe(401)
      expect((yield* postWebhook(channel.webhook_url, APP_SECRET, body, { signature: "sha256=00" })).status).toBe(401)
      expect(yield* messagesOf(waId)).toEqual([])
      // signed but not Meta's JSON: 200 (so Meta does not retry for a week) and recorded
      expect((yield* postWebhook(channel.webhook_url, APP_SECRET, "{not json")).status).toBe(200)
      const [event] = yield* sqlRows<{ reason: string }>`
        select reason from channel_events where channel_id = ${channel.id} order by id desc limit 1`
      expect(event!.reason).toBe("The body is not JSON.")
    }))

  it.effect("stores a batch once however often Meta retries it, answers each message once, through the Graph API", () =>
    Effect.gen(function*() {
      const { channel, owner } = yield* connect
      const [ana, bob] = [freshPhone(), freshPhone()]
      const now = Date.now()
      const changes = [
        {
          messages: [inbound(ana, `wamid.${ana}.1`, now, { type: "text", text: { body: "Hello, do you ship?" } })],
          names: { [ana]: "Ana" }
        },
        { messages: [inbound(bob, `wamid.${bob}.1`, now, { type: "text", text: { body: "Price?" } })] }
      ]
      const first = yield* deliver(channel, changes)
      expect(first.status).toBe(200)
      const again = yield* deliver(channel, changes)
      expect(again.status).toBe(200)
      const reply = yield* replyTo(`wamid.${ana}.1`)
      expect(reply).toMatchObject({
        status: "sent_to_user",
        external_message_id: expect.stringMatching(/^wamid\.fake/)
      })
      yield* replyTo(`wamid.${bob}.1`)
      const anaRows = yield* messagesOf(ana)
      expect(anaRows.map((r) => r.role)).toEqual(["user", "assistant"])
      expect(anaRows[0]).toMatchObject({ message: "Hello, do you ship?", external_chat_id: ana, status: "received" })
      // the Graph API got the reply with the channel's token, as Meta documents the send
      const sent = sends(graph).find((r) => r.body.to === ana)!
      expect(sent).toMatchObject({
        path: `/${API_VERSION}/${graph.phoneNumberId}/messages`,
        token: graph.token,
        body: { messaging_product: "whatsapp", to: ana, type: "text", text: { body: anaRows[1]!.message } }
      })
      // and the contact's message marked read with the typing indicator
      expect(graph.requests.some((r) => r.body?.status === "read" && r.body.message_id === `wamid.${ana}.1`)).toBe(true)
      // the contact: its phone and profile name; the opportunity's source is the channel kind and the thread
      const [contact] = yield* sqlRows<{ name: string; phone: string; source: string; source_id: string }>`
        select c.name, c.phone, o.source, o.source_id from contacts c join opportunities o on o.contact_id = c.id
        where c.id = ${anaRows[0]!.contact_id}`
      expect(contact).toEqual({ name: "Ana", phone: ana, source: "whatsapp", source_id: ana })
      // statistics by provider count the WhatsApp messages (REST and MCP)
      const byKind = (provider: string) =>
        Effect.map(
          get(owner, `/api/user/analytics/messaging-stats?provider=${provider}`),
          (r) => ok(r, "analytics.messagingStats").totals
        )
      expect(yield* byKind("whatsapp")).toMatchObject({ user_messages: 2, assistant_messages: 2 })
      expect(yield* byKind("web")).toMatchObject({ messages: 0 })
      const stats = yield* Effect.scoped(Effect.flatMap(
        mcpClient(owner.token),
        (mcp) =>
          Effect.promise(() => mcp.callTool({ name: "get_messaging_stats", arguments: { provider: "whatsapp" } }))
      ))
      expect(stats.structuredContent).toMatchObject({ totals: { user_messages: 2, assistant_messages: 2 } })
      // every attempt logged
      const deliveries = ok(yield* get(owner, `/api/user/channels/${channel.id}/deliveries`), "channels.deliveries")
      expect(deliveries.some((d: any) => d.message_id === anaRows[1]!.id && d.status_code === 200)).toBe(true)
    }))

  it.effect("keeps receipts on the message, never moving backwards", () =>
    Effect.gen(function*() {
      const { channel } = yield* connect
      const waId = freshPhone()
      yield* deliver(channel, [{
        messages: [inbound(waId, `wamid.${waId}.1`, Date.now(), { type: "text", text: { body: "Hi" } })]
      }])
      const reply = yield* replyTo(`wamid.${waId}.1`)
      const id = reply.external_message_id!
      const t = Date.now()
      // out of order: read before delivered, and sent last
      yield* deliver(channel, [{ statuses: [receipt(id, "read", t + 2000, waId)] }])
      yield* deliver(channel, [{ statuses: [receipt(id, "delivered", t + 1000, waId), receipt(id, "sent", t, waId)] }])
      const [row] = yield* sqlRows<{ delivery_status: string; sent: boolean; delivered: boolean; read: boolean }>`
        select delivery_status, sent_at is not null as sent, delivered_at is not null as delivered, read_at is not null as read
        from messages where id = ${reply.id}`
      expect(row).toEqual({ delivery_status: "read", sent: true, delivered: true, read: true })
      // a failure after it was read does not undo it
      yield* deliver(channel, [{
        statuses: [receipt(id, "failed", t + 3000, waId, [{ code: 131026, title: "Message undeliverable" }])]
      }])
      const [after] = yield* sqlRows<{ delivery_status: string; status: string }>`
        select delivery_status, status from messages where id = ${reply.id}`
      expect(after).toEqual({ delivery_status: "read", status: "sent_to_user" })
    }))

  it.effect("reads every inbound type: media into storage, location, contacts, interactive replies, reactions, unsupported", () =>
    Effect.gen(function*() {
      const { channel } = yield* connect
      const waId = freshPhone()
      const png = Buffer.from("\x89PNG fake image bytes")
      graph.media.set("media-1", { bytes: png, mimetype: "image/png" })
      // over WhatsApp's 25 MB, with no size in Meta's record: the download stops at the limit
      graph.media.set("media-huge", {
        bytes: Buffer.alloc(25 * 1024 * 1024 + 1),
        mimetype: "video/mp4",
        file_size: null
      })
      const t = Date.now()
      yield* deliver(channel, [{
        messages: [
          inbound(waId, `wamid.${waId}.img`, t, {
            type: "image",
            image: { id: "media-1", mime_type: "image/png", caption: "My receipt" }
          }),
          inbound(waId, `wamid.${waId}.loc`, t, {
            type: "location",
            location: { latitude: 52.52, longitude: 13.405, name: "Office" }
          }),
          inbound(waId, `wamid.${waId}.card`, t, {
            type: "contacts",
            contacts: [{ name: { formatted_name: "Bea Lee" }, phones: [{ phone: "+49 151 000" }] }]
          }),
          inbound(waId, `wamid.${waId}.btn`, t, {
            type: "interactive",
            interactive: { type: "button_reply", button_reply: { id: "yes", title: "Yes please" } }
          }),
          inbound(waId, `wamid.${waId}.react`, t, {
            type: "reaction",
            reaction: { message_id: `wamid.${waId}.img`, emoji: "👍" }
          }),
          inbound(waId, `wamid.${waId}.odd`, t, {
            type: "unsupported",
            errors: [{ code: 131051, title: "Message type unknown" }]
          }),
          inbound(waId, `wamid.${waId}.lost`, t, {
            type: "document",
            document: { id: "media-missing", filename: "a.pdf" }
          }),
          inbound(waId, `wamid.${waId}.huge`, t, { type: "video", video: { id: "media-huge", mime_type: "video/mp4" } })
        ]
      }])
      const rows = (yield* messagesOf(waId)).filter((r) => r.role === "user")
      const byId = new Map(rows.map((r) => [r.external_message_id, r]))
      const image = byId.get(`wamid.${waId}.img`)!
      expect(image.message).toBe("My receipt")
      expect(image.files).toEqual([expect.objectContaining({ mimetype: "image/png", type: "image", size: png.length })])
      expect(image.files[0]!.path).toMatch(new RegExp(`^channels/${channel.id}/`))
      expect(byId.get(`wamid.${waId}.loc`)!.message).toBe("[location] 52.52, 13.405 (Office)")
      expect(byId.get(`wamid.${waId}.card`)!.message).toBe("[contact] Bea Lee +49 151 000")
      expect(byId.get(`wamid.${waId}.btn`)!).toMatchObject({
        message: "Yes please",
        attachments: [expect.objectContaining({ type: "button_reply", id: "yes" })]
      })
      expect(byId.get(`wamid.${waId}.react`)!.message).toBe("[reaction] 👍")
      expect(byId.get(`wamid.${waId}.odd`)!.message).toBe(
        "[unsupported WhatsApp message: unsupported: Message type unknown]"
      )
      // a media download that fails is said on the message, not lost
      expect(byId.get(`wamid.${waId}.lost`)!.message).toMatch(/^\[document could not be downloaded: /)
      expect(byId.get(`wamid.${waId}.huge`)!).toMatchObject({
        message: "[video could not be downloaded: The file is over the channel's limit of 26214400 bytes.]",
        files: []
      })
    }))

  it.effect("an operator's message reaches the Graph API; outside the window it is refused with 422 naming message", () =>
    Effect.gen(function*() {
      const { channel, owner } = yield* connect
      const waId = freshPhone()
      yield* deliver(channel, [{
        messages: [inbound(waId, `wamid.${waId}.1`, Date.now(), { type: "text", text: { body: "Hi" } })]
      }])
      const reply = yield* replyTo(`wamid.${waId}.1`)
      const sent = ok(
        yield* post(owner, `/api/user/${reply.conversation_id}/messages`, { message: "Ana from support here." }),
        "messages.send"
      )
      expect(sent).toMatchObject({ status: "sent_to_user", external_message_id: expect.stringMatching(/^wamid\.fake/) })
      expect(sends(graph).some((r) => r.body.to === waId && r.body.text?.body === "Ana from support here.")).toBe(true)

      // a file with a short text: one document message by signed link, the text its caption
      const { baseUrl } = yield* TestServer
      const form = new FormData()
      form.append("message", "The quote, as promised")
      form.append("files[]", new Blob(["%PDF-1.4 quote"], { type: "application/pdf" }), "quote.pdf")
      const withFile = yield* Effect.promise(() =>
        fetch(`${baseUrl}/api/user/${reply.conversation_id}/messages`, {
          method: "POST",
          headers: { authorization: `Bearer ${owner.token}` },
          body: form
        }).then((r) => r.status)
      )
      expect(withFile).toBe(200)
      const document = sends(graph).filter((r) => r.body.to === waId && r.body.type === "document").at(-1)!
      expect(document.body.document).toMatchObject({ filename: "quote.pdf", caption: "The quote, as promised" })
      expect(sends(graph).some((r) => r.body.to === waId && r.body.text?.body === "The quote, as promised")).toBe(false)
      const fetched = yield* Effect.promise(() =>
        fetch(document.body.document.link).then(async (r) => ({ status: r.status, text: await r.text() }))
      )
      expect(fetched).toEqual({ status: 200, text: "%PDF-1.4 quote" })

      // a contact whose latest message was sent 25 hours ago (a webhook Meta delivered late)
      const late = freshPhone()
      const then = Date.now() - 25 * 3_600_000
      yield* deliver(channel, [{
        messages: [inbound(late, `wamid.${late}.1`, then, { type: "text", text: { body: "Hello?" } })]
      }])
      const [handled] = yield* eventually(
        Effect.map(messagesOf(late), (rows) => rows[0]?.handled_reason ? rows : undefined),
        20_000
      )
      expect(handled!.handled_reason).toBe("outside_service_window")
      const refused = yield* post(owner, `/api/user/${handled!.conversation_id}/messages`, { message: "Still there?" })
      expect422(refused, ["message"])
      expect(JSON.stringify(refused.body)).toMatch(/window closed at \d{4}-/)
      expect(sends(graph).some((r) => r.body.to === late)).toBe(false)
    }))

  it.effect("reads Meta's errors by meaning: undeliverable fails, a rate limit is retried, a revoked token disconnects", () =>
    Effect.gen(function*() {
      const { channel, owner } = yield* connect
      const waId = freshPhone()
      yield* deliver(channel, [{
        messages: [inbound(waId, `wamid.${waId}.1`, Date.now(), { type: "text", text: { body: "Hi" } })]
      }])
      const reply = yield* replyTo(`wamid.${waId}.1`)
      const conversation = reply.conversation_id

      // 131026: failed with the provider's error, and a 500 (SPEC.md 4.2)
      graph.failures.push({
        status: 400,
        body: graphError(131026, "Message undeliverable", "The recipient cannot receive it.")
      })
      const undeliverable = yield* post(owner, `/api/user/${conversation}/messages`, { message: "One" })
      expect(undeliverable.status).toBe(500)
      expect(JSON.stringify(undeliverable.body)).toContain("(#131026)")

      // 130429: answered at hand-off, delivered by the durable retry
      graph.failures.push({
        status: 400,
        body: graphError(130429, "Rate limit hit", "Cloud API message throughput has been reached.")
      })
      const limited = ok(yield* post(owner, `/api/user/${conversation}/messages`, { message: "Two" }), "messages.send")
      expect(limited.status).toBe("created_manually")
      yield* eventually(
        Effect.map(
          sqlRows<{ status: string }>`select status from messages where id = ${limited._id}`,
          (rows) => rows[0]?.status === "sent_to_user" ? true : undefined
        ),
        20_000
      )

      // a text in two parts whose second is answered 130429: the retry sends only the second, the first keeps its id
      const long = `${"Part one. ".repeat(400).trimEnd()}\n\n${"Part two. ".repeat(100).trimEnd()}`
      graph.failures.push(null, {
        status: 400,
        body: graphError(130429, "Rate limit hit", "Cloud API message throughput has been reached.")
      })
      const split = ok(yield* post(owner, `/api/user/${conversation}/messages`, { message: long }), "messages.send")
      const stored = yield* eventually(
        Effect.map(
          sqlRows<{ status: string; external_message_id: string }>`
            select status, external_message_id from messages where id = ${split._id}`,
          (rows) => rows[0]?.status === "sent_to_user" ? rows[0] : undefined
        ),
        20_000
      )
      const parts = sends(graph).filter((r) => r.body.text?.body?.startsWith("Part "))
      // three calls: part one (accepted), part two (130429), part two again (accepted)
      expect(parts.map((r) => r.body.text.body.slice(0, 9))).toEqual(["Part one.", "Part two.", "Part two."])
      const accepted = graph.accepted.filter((a) => a.body.text?.body?.startsWith("Part "))
      expect(accepted.map((a) => a.body.text.body.slice(0, 9))).toEqual(["Part one.", "Part two."])
      expect(stored.external_message_id).toMatch(/^wamid\.fake/)
      expect(stored.external_message_id).toBe(accepted[0]!.id)
      // receipts for either part count: the message is delivered, then read, once both parts are
      const [first, second] = accepted.map((a) => a.id)
      const statusOf = Effect.map(
        sqlRows<{ delivery_status: string | null; status: string }>`
          select delivery_status, status from messages where id = ${split._id}`,
        (rows) => rows[0]!
      )
      const at = Date.now()
      yield* deliver(channel, [{ statuses: [receipt(first!, "read", at, waId)] }])
      expect((yield* statusOf).delivery_status).toBeNull()
      yield* deliver(channel, [{ statuses: [receipt(second!, "delivered", at + 1000, waId)] }])
      expect((yield* statusOf).delivery_status).toBe("delivered")
      yield* deliver(channel, [{ statuses: [receipt(second!, "read", at + 2000, waId)] }])
      expect((yield* statusOf).delivery_status).toBe("read")
      // one part that fails fails the message, with Meta's error
      const again = ok(yield* post(owner, `/api/user/${conversation}/messages`, { message: long }), "messages.send")
      expect(again.status).toBe("sent_to_user")
      const later = graph.accepted.filter((a) => a.body.text?.body?.startsWith("Part ")).slice(-2).map((a) => a.id)
      yield* deliver(channel, [{
        statuses: [
          receipt(later[0]!, "delivered", at, waId),
          receipt(later[1]!, "failed", at, waId, [{ code: 131026, title: "Message undeliverable" }])
        ]
      }])
      const [failedRow] = yield* sqlRows<{ delivery_status: string; status: string; error: string }>`
        select delivery_status, status, error from messages where id = ${again._id}`
      expect(failedRow).toMatchObject({ delivery_status: "failed", status: "failed" })
      expect(failedRow!.error).toContain("131026")

      // 190: the channel is disconnected, operators are told, and nothing more is sent until new credentials
      graph.failures.push({ status: 401, body: expiredToken })
      const revoked = yield* post(owner, `/api/user/${conversation}/messages`, { message: "Three" })
      expect(revoked.status).toBe(500)
      const shown = ok(yield* get(owner, `/api/user/channels/${channel.id}`), "channels.get")
      expect(shown).toMatchObject({ status: "disconnected", status_reason: expect.stringContaining("access token") })
      const before = sends(graph).length
      expect((yield* post(owner, `/api/user/${conversation}/messages`, { message: "Four" })).status).toBe(500)
      expect(sends(graph).length).toBe(before)
      // replacing the credentials reconnects it
      ok(yield* put(owner, `/api/user/channels/${channel.id}`, { credentials: credentials() }), "channels.update")
      expect(ok(yield* post(owner, `/api/user/${conversation}/messages`, { message: "Five" }), "messages.send").status)
        .toBe(
          "sent_to_user"
        )
    }))

  it.effect("an app's other number posting to this channel's URL is stored on that number's channel", () =>
    Effect.gen(function*() {
      const { channel, owner, pipeline } = yield* connect
      // the same Meta app (its secret signs every number's webhooks), a second number of the workspace
      const second = ok(
        yield* post(owner, "/api/user/channels", {
          kind: "whatsapp",
          name: "Second line",
          pipeline_id: pipeline.id,
          credentials: credentials({ phone_number_id: "106540352249999" })
        }),
        "channels.create"
      ) as unknown as WhatsAppChannel
      const forNumber = (number: string, waId: string) => {
        const body = webhookFor(graph, [{
          messages: [inbound(waId, `wamid.${waId}.1`, Date.now(), { type: "text", text: { body: "Hi there" } })]
        }])
        body.entry[0]!.changes[0]!.value.metadata.phone_number_id = number
        return body
      }
      const waId = freshPhone()
      expect((yield* postWebhook(channel.webhook_url, APP_SECRET, forNumber("106540352249999", waId))).status).toBe(200)
      const [row] = yield* sqlRows<{ channel_id: number; external_chat_id: string }>`
        select channel_id::int, external_chat_id from messages where external_message_id = ${`wamid.${waId}.1`}`
      expect(row).toEqual({ channel_id: second.id, external_chat_id: waId })

      // a number no channel of the workspace has: recorded, not stored
      const stray = freshPhone()
      expect((yield* postWebhook(channel.webhook_url, APP_SECRET, forNumber("106540352240000", stray))).status).toBe(
        200
      )
      expect(yield* sqlRows`select 1 from messages where external_message_id = ${`wamid.${stray}.1`}`).toEqual([])
      const [event] = yield* sqlRows<{ reason: string }>`
        select reason from channel_events where channel_id = ${channel.id} order by id desc limit 1`
      expect(event!.reason).toBe("For another account (106540352240000): no channel of this workspace and app has it.")
    }))

  it.effect("paces sends to the channel's rate, however many are made at once", () =>
    Effect.gen(function*() {
      const { channel, owner } = yield* connect
      const waId = freshPhone()
      yield* deliver(channel, [{
        messages: [inbound(waId, `wamid.${waId}.1`, Date.now(), { type: "text", text: { body: "Hi" } })]
      }])
      const reply = yield* replyTo(`wamid.${waId}.1`)
      ok(yield* put(owner, `/api/user/channels/${channel.id}`, { rate_per_second: 5 }), "channels.update")
      const texts = ["one", "two", "three", "four", "five", "six"].map((t) => `Paced ${t}`)
      yield* Effect.forEach(
        texts,
        (message) => post(owner, `/api/user/${reply.conversation_id}/messages`, { message }),
        { concurrency: "unbounded" }
      )
      const arrivals = sends(graph).filter((r) => texts.includes(r.body.text?.body)).map((r) => r.at).sort()
      expect(arrivals).toHaveLength(6)
      // 5 a second: six sends take five slots of 200 ms after the first. The first may reach the fake late (its
      // slot is reserved before the request goes out), so at least four full gaps lie between the arrivals; unpaced,
      // the six would arrive within a few milliseconds
      expect(arrivals[5]! - arrivals[0]!).toBeGreaterThanOrEqual(4 * 200)
    }))

  it.effect("the same phone on web chat and on WhatsApp is one contact", () =>
    Effect.gen(function*() {
      const { channel, owner, pipeline } = yield* connect
      const phone = freshPhone()
      const web = ok(
        yield* post(owner, "/api/user/channels", { kind: "web", pipeline_id: pipeline.id }),
        "channels.create"
      )
      const { baseUrl } = yield* TestServer
      const auth = `Basic ${Buffer.from(`${web.client_id}:${web.client_secret}`).toString("base64")}`
      const initiated = yield* Effect.promise(() =>
        fetch(`${baseUrl}/api/user/web-chat/initiate`, {
          method: "POST",
          headers: { authorization: auth, "content-type": "application/json", accept: "application/json" },
          body: JSON.stringify({ contact_id: "visitor-1", phone: `+${phone}` })
        }).then((r) => r.json())
      )
      expect(initiated.data.conversation_id).toBeTypeOf("number")
      yield* deliver(channel, [{
        messages: [inbound(phone, `wamid.${phone}.1`, Date.now(), { type: "text", text: { body: "Hi from WhatsApp" } })]
      }])
      const rows = yield* messagesOf(phone)
      const [contact] = yield* sqlRows<{ id: number }>`
        select contact_id::int as id from conversations where id = ${initiated.data.conversation_id}`
      expect(rows[0]!.contact_id).toBe(contact!.id)
      const conversations = yield* sqlRows<{ n: number }>`
        select count(*)::int as n from conversations where contact_id = ${contact!.id}`
      expect(conversations[0]!.n).toBe(2)
    }))
})
