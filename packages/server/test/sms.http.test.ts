/**
 * Issue 39, SMS (Twilio): through the real server against a local fake of Twilio's REST API that checks Basic auth
 * and the form fields, answers with Twilio's bodies and error codes, and posts signed webhooks. Connecting a number,
 * posts with and without a valid `X-Twilio-Signature`, a retried message stored once, MMS media fetched through
 * Twilio's redirect, the AI's and an operator's messages reaching the fake with their status callbacks, a WhatsApp
 * sender matching the SMS contact by phone, Twilio's errors by meaning, and the simulator Parley ships.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { connectChannel } from "./support/Channels.js"
import { type FakeTwilio, makeFakeTwilio, tooManyRequests, unsubscribed } from "./support/FakeTwilio.js"
import { expect422, get, ok, post, sqlRows } from "./support/Opportunities.js"
import { startOtlpReceiver } from "./support/OtlpReceiver.js"
import { seedUser, TestServer, TestServerLive } from "./support/TestServer.js"
import { eventually } from "./support/WebhookReceiver.js"

let fake: FakeTwilio
let otlp: Awaited<ReturnType<typeof startOtlpReceiver>>

const FakeApi = Layer.unwrapScoped(
  Effect.gen(function*() {
    fake = yield* makeFakeTwilio()
    // spans are exported, to show the auth token is in none of them
    otlp = yield* Effect.acquireRelease(Effect.promise(startOtlpReceiver), (r) => Effect.promise(r.close))
    return TestServerLive({
      TWILIO_API_URL: fake.url,
      ENGINE_SWEEP_INTERVAL_MS: "1000",
      WEBHOOK_RETRY_DELAY_MS: "200",
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_BSP_SCHEDULE_DELAY: "200"
    })
  })
)

interface SmsChannel {
  readonly id: number
  readonly webhook_url: string
}

const credentials = (from_number?: string) => ({
  account_sid: fake.state.accountSid,
  auth_token: fake.state.authToken,
  from_number: from_number ?? fake.state.numbers[0]!
})

/** A workspace with a pipeline answering at once on the local model, and an SMS channel linked to it. */
const connect = (extra: Record<string, unknown> = {}) =>
  Effect.suspend(() =>
    connectChannel<SmsChannel>({ kind: "sms", name: "Support line", credentials: credentials(), ...extra })
  )

let phones = 0
const freshPhone = () => `+1415${String(process.pid % 1000).padStart(3, "0")}${String(++phones).padStart(4, "0")}`

const send = (channel: SmsChannel, params: Record<string, string>, token?: string | null) =>
  Effect.promise(() => fake.post(channel.webhook_url, params, token))

interface Row {
  readonly id: string
  readonly role: string
  readonly message: string | null
  readonly status: string
  readonly files: ReadonlyArray<{ path: string; mimetype: string; type: string; size: number; name: string }>
  readonly attachments: ReadonlyArray<Record<string, unknown>>
  readonly external_message_id: string | null
  readonly delivery_status: string | null
  readonly error: string | null
  readonly conversation_id: number
  readonly contact_id: number
}

const messagesOf = (thread: string) =>
  sqlRows<Row>`
    select id, role, message, status, files, attachments, external_message_id, delivery_status, error,
           conversation_id::int, contact_id::int
    from messages where external_chat_id = ${thread} order by created_at, id`

/** Waits for the AI's reply (sent or failed) to the contact's message with the provider id `sid`. */
const replyTo = (sid: string) =>
  eventually(
    Effect.map(
      sqlRows<Row>`
        select r.id, r.role, r.message, r.status, r.external_message_id, r.error, r.conversation_id::int
        from messages u join messages r on r.in_reply_to = u.id
        where u.external_message_id = ${sid} and u.role = 'user'`,
      (rows) =>
        rows[0] !== undefined && rows[0].status !== "ai_generated" && rows[0].status !== "sending" ? rows[0] : undefined
    ),
    20_000
  )

const deliveryStatus = (id: string, wanted: string) =>
  eventually(
    Effect.map(
      sqlRows<{ delivery_status: string | null; error: string | null }>`
        select delivery_status, error from messages where id = ${id}`,
      (rows) => rows[0]?.delivery_status === wanted ? rows[0] : undefined
    ),
    10_000
  )

const sentTo = (to: string) => fake.state.sent.filter((s) => s.to === to)

layer(FakeApi, { excludeTestServices: true })("SMS channel (Twilio)", (it) => {
  it.effect("connects with the account SID, auth token and number; the token is never shown; bad fields are 422", () =>
    Effect.gen(function*() {
      const { channel, owner } = yield* connect()
      const { receiverUrl } = yield* TestServer
      expect(channel.webhook_url).toMatch(new RegExp(`^${receiverUrl}/channels/wh_[A-Za-z0-9]+/webhook$`))
      const shown = ok(yield* get(owner, `/api/user/channels/${channel.id}`), "channels.get")
      expect(shown).toMatchObject({ kind: "sms", status: "connected" })
      expect(JSON.stringify(channel)).not.toContain(fake.state.authToken)
      expect(JSON.stringify(shown)).not.toContain(fake.state.authToken)
      const [row] = yield* sqlRows<
        { c: string }
      >`select credentials_ciphertext as c from channels where id = ${channel.id}`
      expect(row!.c).not.toContain(fake.state.authToken)

      // Twilio's account record holds the auth token: the check shows the account, never the token
      const checked = ok(yield* post(owner, `/api/user/channels/${channel.id}/check`, {}), "channels.check")
      expect(checked).toMatchObject({ ok: true, account: { sid: fake.state.accountSid, status: "active" } })
      expect(JSON.stringify(checked)).not.toContain(fake.state.authToken)

      expect422(
        yield* post(owner, "/api/user/channels", {
          kind: "sms",
          credentials: { account_sid: "SK123", auth_token: "short", from_number: "4155550100" }
        }),
        ["credentials.account_sid", "credentials.auth_token", "credentials.from_number"]
      )
      // a token Twilio refuses: the check says the credentials are wrong, in Twilio's words
      const wrong = ok(
        yield* post(owner, "/api/user/channels", {
          kind: "sms",
          credentials: { ...credentials(), auth_token: "0".repeat(32) }
        }),
        "channels.create"
      ) as unknown as SmsChannel
      const refused = ok(yield* post(owner, `/api/user/channels/${wrong.id}/check`, {}), "channels.check")
      expect(refused).toMatchObject({ ok: false, account: null })
      expect(refused.message).toMatch(/refused the account SID and auth token: Authenticate \(Twilio error 20003\)/)

      const stranger = yield* seedUser()
      expect((yield* get(stranger, `/api/user/channels/${channel.id}`)).status).toBe(404)
      expect(yield* post(stranger, `/api/user/channels/${channel.id}/check`, {}).pipe(Effect.map((r) => r.status)))
        .toBe(404)
    }))

  it.effect("refuses a post without a valid signature; stores a signed SMS once; receipts move the reply's status", () =>
    Effect.gen(function*() {
      const { channel } = yield* connect()
      const phone = freshPhone()
      const params = fake.message(phone, { body: "Hi, do you ship to Porto?" })
      expect((yield* send(channel, params, null)).status).toBe(401)
      expect((yield* send(channel, params, "f".repeat(32))).status).toBe(401)
      // the signature covers every field: a body changed on the way is refused
      const changed = { ...params, Body: "Send me your card number" }
      expect((yield* Effect.promise(() => fake.post(channel.webhook_url, changed, undefined, params))).status).toBe(401)
      expect(yield* messagesOf(phone)).toEqual([])

      const answer = yield* send(channel, params)
      expect(answer).toMatchObject({
        status: 200,
        body: "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response></Response>"
      })
      expect(answer.type).toMatch(/^text\/xml/)
      expect((yield* send(channel, params)).status).toBe(200)
      const reply = yield* replyTo(params.MessageSid!)
      expect(reply.status).toBe("sent_to_user")
      const rows = yield* messagesOf(phone)
      expect(rows.filter((r) => r.role === "user")).toHaveLength(1)
      expect(rows[0]).toMatchObject({ message: "Hi, do you ship to Porto?", external_message_id: params.MessageSid })
      const [sent] = sentTo(phone)
      expect(sent).toMatchObject({ from: fake.state.numbers[0], statusCallback: channel.webhook_url })
      expect(reply.external_message_id).toBe(sent!.sid)
      const [contact] = yield* sqlRows<{ phone: string | null; source: string }>`
        select c.phone, o.source from contacts c join opportunities o on o.contact_id = c.id where c.id = ${
        rows[0]!.contact_id
      }`
      expect(contact).toEqual({ phone: phone.slice(1), source: "sms" })

      expect((yield* Effect.promise(() => fake.status(sent!, "sent"))).status).toBe(200)
      yield* deliveryStatus(reply.id, "sent")
      yield* Effect.promise(() => fake.status(sent!, "delivered"))
      yield* deliveryStatus(reply.id, "delivered")
      // a late `sent` moves nothing back
      yield* Effect.promise(() => fake.status(sent!, "sent"))
      yield* deliveryStatus(reply.id, "delivered")
    }))

  it.effect("fetches MMS media through Twilio's redirect; a WhatsApp sender with the same phone is the same contact", () =>
    Effect.gen(function*() {
      const { channel, owner, pipeline } = yield* connect()
      const phone = freshPhone()
      const mms = fake.message(phone, {
        body: "My order",
        media: [
          { bytes: Buffer.from("jpeg-bytes"), type: "image/jpeg" },
          { bytes: Buffer.from("%PDF-1.4 order"), type: "application/pdf" }
        ]
      })
      expect((yield* send(channel, mms)).status).toBe(200)
      const [row] = yield* messagesOf(phone)
      expect(row).toMatchObject({ message: "My order" })
      expect(row!.files).toEqual([
        expect.objectContaining({ mimetype: "image/jpeg", type: "image", size: 10 }),
        expect.objectContaining({ mimetype: "application/pdf", type: "document", size: 14 })
      ])
      // the download followed the redirect without the credentials, which the media store refuses
      const stored = fake.state.requests.filter((r) => r.path.startsWith("/media-store/"))
      expect(stored.map((r) => r.authorization)).toEqual([undefined, undefined])

      const whatsapp = ok(
        yield* post(owner, "/api/user/channels", {
          kind: "sms",
          name: "WhatsApp via Twilio",
          pipeline_id: pipeline.id,
          credentials: credentials(fake.state.numbers[1])
        }),
        "channels.create"
      ) as unknown as SmsChannel
      const from = `whatsapp:${phone}`
      const located = fake.message(from, {
        extra: { ProfileName: "Ana Lima", WaId: phone.slice(1), Latitude: "41.15", Longitude: "-8.61" }
      })
      expect((yield* send(whatsapp, located)).status).toBe(200)
      const [wa] = yield* messagesOf(from)
      expect(wa).toMatchObject({ message: "[location] 41.15, -8.61", contact_id: row!.contact_id })
      expect(wa!.attachments).toEqual([{ type: "location", latitude: 41.15, longitude: -8.61 }])
      const reply = yield* replyTo(located.MessageSid!)
      expect(reply.status).toBe("sent_to_user")
      expect(sentTo(from)[0]).toMatchObject({ from: fake.state.numbers[1] })

      // the WhatsApp sender keeps WhatsApp's 24-hour window, the SMS number has none: two days on (the contact's
      // messages dated back, as Twilio's clock would have them), only the SMS conversation may still be written to
      const day = 24 * 3_600_000
      yield* sqlRows`update messages set provider_sent_at = now() - interval '2 days'
                     where contact_id = ${row!.contact_id} and role = 'user'`
      const shown = ok(yield* get(owner, `/api/user/conversations/${reply.conversation_id}`), "conversations.get")
      const closesAt = Date.parse(shown.service_window_closes_at!)
      expect(Date.now() - closesAt).toBeGreaterThan(day - 60_000)
      expect(Date.now() - closesAt).toBeLessThan(day + 60_000)
      const refused = yield* post(owner, `/api/user/${reply.conversation_id}/messages`, { message: "Still there?" })
      expect422(refused, ["message"])
      expect(JSON.stringify(refused.body)).toMatch(/24 hours after the contact's latest message\): nothing can be sent/)
      const smsConversation = (yield* messagesOf(phone))[0]!.conversation_id
      const smsShown = ok(yield* get(owner, `/api/user/conversations/${smsConversation}`), "conversations.get")
      expect(smsShown.service_window_closes_at).toBeNull()
      ok(yield* post(owner, `/api/user/${smsConversation}/messages`, { message: "Still there?" }), "messages.send")
    }))

  it.effect("an operator's message reaches Twilio; errors are read by meaning", () =>
    Effect.gen(function*() {
      const { channel, owner } = yield* connect({ rate_per_second: 50 })
      const phone = freshPhone()
      const first = fake.message(phone, { body: "Hello" })
      expect((yield* send(channel, first)).status).toBe(200)
      const conversation = (yield* replyTo(first.MessageSid!)).conversation_id

      const sent = ok(
        yield* post(owner, `/api/user/${conversation}/messages`, { message: "Ana here." }),
        "messages.send"
      )
      expect(sent).toMatchObject({
        status: "sent_to_user",
        external_message_id: expect.stringMatching(/^SM[0-9a-f]{32}$/)
      })
      expect(sentTo(phone).at(-1)).toMatchObject({ body: "Ana here.", statusCallback: channel.webhook_url })

      // a file goes by signed link (MediaUrl) with the text; the link serves the file
      const { baseUrl } = yield* TestServer
      const form = new FormData()
      form.append("message", "The menu")
      form.append("files[]", new Blob([Buffer.from("jpeg-menu")], { type: "image/jpeg" }), "menu.jpg")
      const withFile = yield* Effect.promise(() =>
        fetch(`${baseUrl}/api/user/${conversation}/messages`, {
          method: "POST",
          headers: { authorization: `Bearer ${owner.token}` },
          body: form
        }).then((r) => r.status)
      )
      expect(withFile).toBe(200)
      const mms = sentTo(phone).at(-1)!
      expect(mms).toMatchObject({ body: "The menu", media: [expect.stringContaining("/files/")] })
      expect(yield* Effect.promise(() => fetch(mms.media[0]!).then((r) => r.text()))).toBe("jpeg-menu")

      // beyond Twilio's 1,600 characters: two messages
      const long = `${"word ".repeat(300)}\n\n${"more ".repeat(100)}`.trim()
      ok(yield* post(owner, `/api/user/${conversation}/messages`, { message: long }), "messages.send")
      expect(sentTo(phone).slice(-2).every((s) => s.body.length <= 1600 && s.body.length > 0)).toBe(true)

      // a failed status callback with Twilio's error code
      yield* Effect.promise(() => fake.status(sentTo(phone).at(-1)!, "undelivered", { ErrorCode: "30003" }))
      const failed = yield* eventually(
        Effect.map(
          sqlRows<{ delivery_status: string; error: string | null }>`
            select delivery_status, error from messages where delivery_status = 'failed' and external_chat_id = ${phone}`,
          (rows) => rows[0]
        )
      )
      expect(failed.error).toMatch(/undelivered \(error 30003: Unreachable destination handset\)/)

      // a rate limit is retried durably, after the Retry-After Twilio gave
      fake.state.failures.push(tooManyRequests(1))
      const limited = ok(
        yield* post(owner, `/api/user/${conversation}/messages`, { message: "After the limit" }),
        "messages.send"
      )
      expect(limited.status).not.toBe("failed")
      yield* eventually(
        Effect.map(
          sqlRows<{ status: string }>`select status from messages where id = ${limited._id}`,
          (rows) => rows[0]?.status === "sent_to_user" ? true : undefined
        ),
        20_000
      )
      const tries = fake.state.requests.filter((r) => r.form.get("Body") === "After the limit")
      expect(tries).toHaveLength(2)
      expect(tries[1]!.at - tries[0]!.at).toBeGreaterThanOrEqual(1000)

      // the contact texted STOP: the message fails with Twilio's words
      fake.state.failures.push(unsubscribed())
      const refused = yield* post(owner, `/api/user/${conversation}/messages`, { message: "Are you there?" })
      expect(refused.status).toBe(500)
      expect(JSON.stringify(refused.body)).toContain("Attempt to send to unsubscribed recipient (Twilio error 21610)")

      // the auth token changed at Twilio: the channel is disconnected; nothing logged shows the token
      const token = fake.state.authToken
      fake.state.authToken = "e".repeat(32)
      const revoked = yield* post(owner, `/api/user/${conversation}/messages`, { message: "Hello again" })
      expect(revoked.status).toBe(500)
      expect(ok(yield* get(owner, `/api/user/channels/${channel.id}`), "channels.get")).toMatchObject({
        status: "disconnected"
      })
      const logged = yield* sqlRows<{ url: string; error: string | null; response_excerpt: string | null }>`
        select * from webhook_deliveries where channel_id = ${channel.id}`
      expect(logged.at(-1)!.url).toBe(`${fake.url}/2010-04-01/Accounts/${fake.state.accountSid}/Messages.json`)
      expect(JSON.stringify(logged)).not.toContain(token)
      fake.state.authToken = token

      // client spans record Twilio's URL (the account SID) and headers with authorization redacted
      yield* eventually(
        Effect.sync(() =>
          otlp.spans.find((span) => String(span.attributes["url.full"] ?? "").endsWith("/Messages.json"))
        ),
        10_000
      )
      const basic = Buffer.from(`${fake.state.accountSid}:${token}`).toString("base64")
      expect(
        otlp.spans.filter((span) => {
          const text = JSON.stringify(span.attributes)
          return text.includes(token) || text.includes(basic)
        }).map((span) => span.name)
      ).toEqual([])
    }))

  it.effect("the simulator Parley ships plays Twilio and the contact's phone: no account needed", () =>
    Effect.gen(function*() {
      const { owner, pipeline } = yield* connect()
      const created = ok(
        yield* post(owner, "/api/user/channels", {
          kind: "sms",
          name: "SMS (simulator)",
          pipeline_id: pipeline.id,
          credentials: { simulator: true }
        }),
        "channels.create"
      ) as unknown as SmsChannel & { simulator_url: string }
      expect(created.simulator_url).toMatch(/\/simulator\/sms\/wh_\w+$/)
      const checked = ok(yield* post(owner, `/api/user/channels/${created.id}/check`, {}), "channels.check")
      expect(checked).toMatchObject({ ok: true, account: { friendly_name: "Parley simulator" } })
      const page = yield* Effect.promise(() =>
        fetch(created.simulator_url).then(async (r) => [r.status, await r.text()])
      )
      expect(page).toEqual([200, expect.stringContaining("SMS simulator")])

      const phone = `1555${String(process.pid).padStart(7, "0").slice(-7)}`
      const said = yield* Effect.promise(() =>
        fetch(`${created.simulator_url}/messages`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ phone: Number(phone), text: "Hello from the simulator" })
        }).then(async (r) => ({ status: r.status, body: await r.json() as { webhook_status: number } }))
      )
      expect(said).toMatchObject({ status: 200, body: { webhook_status: 200 } })
      const thread = yield* eventually(
        Effect.promise(() =>
          fetch(`${created.simulator_url}/thread?phone=${phone}`).then((r) =>
            r.json() as Promise<{ messages: Array<{ direction: string; text: string; status: string }> }>
          )
        ).pipe(Effect.map((t) => t.messages.some((m) => m.direction === "out") ? t.messages : undefined)),
        20_000
      )
      expect(thread[0]).toMatchObject({ direction: "in", text: "Hello from the simulator" })
      const rows = yield* messagesOf(`+${phone}`)
      expect(rows[0]).toMatchObject({ role: "user", message: "Hello from the simulator" })
      // the simulator's status callbacks are signed with the channel's token: the reply ends delivered
      const reply = rows.find((r) => r.role === "assistant")!
      yield* deliveryStatus(reply.id, "delivered")
      expect(fake.state.requests.some((r) => r.form.get("To") === `+${phone}`)).toBe(false)
    }))
})
