/**
 * Issue 39, Telegram: through the real server against a local fake of the Bot API that checks the bot token and the
 * request shapes and answers with Telegram's bodies. Connecting a bot (Parley sets its webhook and secret), updates
 * with and without the secret, a retried update stored once, every inbound type with files through `getFile`, the
 * AI's and an operator's messages reaching the fake, and Telegram's errors by meaning.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { connectChannel } from "./support/Channels.js"
import { blocked, type FakeTelegram, makeFakeTelegram, tooManyRequests } from "./support/FakeTelegram.js"
import { createOpportunity, expect422, get, ok, post, sqlRows } from "./support/Opportunities.js"
import { seedUser, TestServer, TestServerLive } from "./support/TestServer.js"
import { eventually } from "./support/WebhookReceiver.js"

let fake: FakeTelegram

const FakeBot = Layer.unwrapScoped(
  Effect.map(makeFakeTelegram(), (made) => {
    fake = made
    return TestServerLive({
      TELEGRAM_API_URL: made.url,
      ENGINE_SWEEP_INTERVAL_MS: "1000",
      WEBHOOK_RETRY_DELAY_MS: "200"
    })
  })
)

interface TelegramChannel {
  readonly id: number
  readonly webhook_url: string
}

/** A workspace with a pipeline answering at once on the local model, and a Telegram channel linked to it. */
const connect = Effect.suspend(() =>
  connectChannel<TelegramChannel>({
    kind: "telegram",
    name: "Support bot",
    credentials: { bot_token: fake.state.token }
  })
)

let chats = 0
/** A Telegram user with a private chat of their own. */
const freshUser = (first_name = "Ana", last_name = "Lima") => ({
  id: 500_000_000 + process.pid * 100 + ++chats,
  first_name,
  last_name
})

const send = (update: object, secret?: string | null) =>
  Effect.promise(() => fake.post(update, secret === undefined ? {} : { secret }).then((r) => r.status))

interface Row {
  readonly id: string
  readonly role: string
  readonly message: string | null
  readonly status: string
  readonly files: ReadonlyArray<{ path: string; mimetype: string; type: string; size: number; name: string }>
  readonly attachments: ReadonlyArray<Record<string, unknown>>
  readonly external_message_id: string | null
  readonly error: string | null
  readonly conversation_id: number
  readonly contact_id: number
}

const messagesOf = (chat: number) =>
  sqlRows<Row>`
    select id, role, message, status, files, attachments, external_message_id, error, conversation_id::int,
           contact_id::int
    from messages where external_chat_id = ${String(chat)} order by created_at, id`

/** Waits for the AI's reply (sent or failed) to the contact's message with the provider id `id`. */
const replyTo = (id: string) =>
  eventually(
    Effect.map(
      sqlRows<Row>`
        select r.id, r.role, r.message, r.status, r.external_message_id, r.error, r.conversation_id::int
        from messages u join messages r on r.in_reply_to = u.id
        where u.external_message_id = ${id} and u.role = 'user'`,
      (rows) =>
        rows[0] !== undefined && rows[0].status !== "ai_generated" && rows[0].status !== "sending"
          ? rows[0]
          : undefined
    ),
    20_000
  )

const sentTo = (chat: number) => fake.state.sent.filter((s) => s.chat_id === chat)

layer(FakeBot, { excludeTestServices: true })("Telegram channel", (it) => {
  it.effect("connects by setting the bot's webhook with a secret; the token is never returned; a bad token is 422", () =>
    Effect.gen(function*() {
      const { channel, owner } = yield* connect
      const { receiverUrl } = yield* TestServer
      expect(channel.webhook_url).toMatch(new RegExp(`^${receiverUrl}/channels/wh_[A-Za-z0-9]+/webhook$`))
      expect(fake.state.webhook).toMatchObject({
        url: channel.webhook_url,
        secret_token: expect.stringMatching(/^[A-Za-z0-9]{48}$/),
        allowed_updates: ["message", "edited_message", "callback_query"]
      })
      const shown = ok(yield* get(owner, `/api/user/channels/${channel.id}`), "channels.get")
      expect(shown).toMatchObject({ kind: "telegram", status: "connected" })
      expect(JSON.stringify(shown)).not.toContain(fake.state.token)
      expect(JSON.stringify(shown)).not.toContain(fake.state.webhook!.secret_token)
      const [row] = yield* sqlRows<
        { c: string }
      >`select credentials_ciphertext as c from channels where id = ${channel.id}`
      expect(row!.c).not.toContain(fake.state.token)

      const checked = ok(yield* post(owner, `/api/user/channels/${channel.id}/check`, {}), "channels.check")
      expect(checked).toMatchObject({ ok: true, account: { username: fake.state.bot.username, is_bot: true } })

      // a token Telegram refuses: 422 naming credentials with Telegram's words, nothing stored
      const before = ok(yield* get(owner, "/api/user/channels"), "channels.list").length
      const refused = yield* post(owner, "/api/user/channels", {
        kind: "telegram",
        credentials: { bot_token: "7000000001:AAWrongTokenWrongTokenWrongToken" }
      })
      expect422(refused, ["credentials"])
      expect(JSON.stringify(refused.body)).toContain("Unauthorized")
      expect(JSON.stringify(refused.body)).not.toContain("AAWrongToken")
      expect422(yield* post(owner, "/api/user/channels", { kind: "telegram", credentials: { bot_token: "x" } }), [
        "credentials.bot_token"
      ])
      expect(ok(yield* get(owner, "/api/user/channels"), "channels.list").length).toBe(before)
      // the webhook still points at the channel that was connected
      expect(fake.state.webhook!.url).toBe(channel.webhook_url)

      const stranger = yield* seedUser()
      expect((yield* get(stranger, `/api/user/channels/${channel.id}`)).status).toBe(404)
      expect((yield* post(stranger, `/api/user/channels/${channel.id}/check`, {})).status).toBe(404)
    }))

  it.effect("refuses updates without the secret with 401 and stores nothing; stores a retried update once", () =>
    Effect.gen(function*() {
      yield* connect
      const user = freshUser()
      const update = fake.message(user, { text: "Hi, do you ship to Porto?" })
      expect(yield* send(update, null)).toBe(401)
      expect(yield* send(update, "not-the-secret")).toBe(401)
      expect(yield* messagesOf(user.id)).toEqual([])

      expect(yield* send(update)).toBe(200)
      expect(yield* send(update)).toBe(200)
      const id = `${user.id}:${update.message.message_id}`
      const reply = yield* replyTo(id)
      expect(reply.status).toBe("sent_to_user")
      expect(reply.external_message_id).toMatch(new RegExp(`^${user.id}:\\d+$`))
      const rows = yield* messagesOf(user.id)
      expect(rows.filter((r) => r.role === "user")).toHaveLength(1)
      expect(rows.filter((r) => r.role === "assistant")).toHaveLength(1)
      expect(rows[0]).toMatchObject({ message: "Hi, do you ship to Porto?", external_message_id: id })
      // one reply, quoting nothing (the talk has not moved on), and the bot was seen typing
      expect(sentTo(user.id)).toHaveLength(1)
      expect(sentTo(user.id)[0]!.method).toBe("sendMessage")
      yield* eventually(
        Effect.sync(() =>
          fake.state.requests.find((r) => r.method === "sendChatAction" && Number(r.body.chat_id) === user.id)
        ),
        20_000
      )
      // the opportunity and contact: source telegram, the chat as source_id, the user's name
      const [opportunity] = yield* sqlRows<{ source: string; source_id: string; name: string | null }>`
        select o.source, o.source_id, c.name from opportunities o join contacts c on c.id = o.contact_id
        where c.id = ${rows[0]!.contact_id}`
      expect(opportunity).toEqual({ source: "telegram", source_id: String(user.id), name: "Ana Lima" })

      // the inbox filters by channel kind: a second workspace, whose bot now has the webhook, sees its own one
      const owner = (yield* connect).owner
      const other = fake.message(freshUser(), { text: "Hello, second workspace" })
      expect(yield* send(other)).toBe(200)
      const listed = (kind: string) => Effect.map(get(owner, `/api/user/conversations?channel_kind=${kind}`), (r) => r)
      const mine = yield* listed("telegram")
      expect(mine.status).toBe(200)
      expect((mine.body as { data: { conversations: Array<{ channel_kind: string }> } }).data.conversations)
        .toEqual([expect.objectContaining({ channel_kind: "telegram" })])
      expect((((yield* listed("whatsapp")).body) as { data: { conversations: Array<unknown> } }).data.conversations)
        .toEqual([])
      expect422(yield* listed("fax"), ["channel_kind"])
    }))

  it.effect("reads every inbound type: files through getFile, location, contact cards, edits, buttons, the rest", () =>
    Effect.gen(function*() {
      const { channel } = yield* connect
      const user = freshUser("Rui", "Costa")
      const photo = fake.addFile(Buffer.from("jpeg-bytes"), { path: "photos/file_1.jpg" })
      const small = fake.addFile(Buffer.from("thumb"), { path: "photos/file_0.jpg" })
      const pdf = fake.addFile(Buffer.from("%PDF-1.4 order"), { path: "documents/file_2.pdf" })
      const voice = fake.addFile(Buffer.from("ogg-bytes"), { path: "voice/file_3.oga" })
      const big = fake.addFile(Buffer.alloc(16), { path: "documents/big.zip", size: 21 * 1024 * 1024 })
      const updates = [
        fake.message(user, {
          photo: [{ file_id: small, file_unique_id: "s", width: 90, height: 90 }, {
            file_id: photo,
            file_unique_id: "p",
            width: 800,
            height: 600
          }],
          caption: "My order"
        }),
        fake.message(user, {
          document: { file_id: pdf, file_unique_id: "d", file_name: "order.pdf", mime_type: "application/pdf" }
        }),
        fake.message(user, { voice: { file_id: voice, file_unique_id: "v", duration: 2, mime_type: "audio/ogg" } }),
        fake.message(user, { location: { latitude: 41.15, longitude: -8.61 } }),
        fake.message(user, {
          contact: { phone_number: "+351 912 345 678", first_name: "Rui", last_name: "Costa", user_id: user.id }
        }),
        fake.message(user, { poll: { id: "1", question: "?" } }),
        fake.message(user, { document: { file_id: big, file_unique_id: "b", file_name: "big.zip" } })
      ]
      for (const u of updates) expect(yield* send(u)).toBe(200)
      const first = updates[0]!.message.message_id
      const edited = fake.update({
        edited_message: {
          message_id: first,
          from: { id: user.id, is_bot: false, first_name: "Rui" },
          chat: { id: user.id, type: "private", first_name: "Rui" },
          date: Math.floor(Date.now() / 1000) - 5,
          edit_date: Math.floor(Date.now() / 1000),
          photo: [{ file_id: photo, file_unique_id: "p", width: 800, height: 600 }],
          caption: "My order, number 42"
        }
      })
      expect(yield* send(edited)).toBe(200)
      const button = fake.update({
        callback_query: {
          id: "4382bfdwdsb323b2d9",
          from: { id: user.id, is_bot: false, first_name: "Rui" },
          message: { message_id: first, chat: { id: user.id, type: "private" }, date: 1 },
          chat_instance: "1",
          data: "plan:growth"
        }
      })
      expect(yield* send(button)).toBe(200)
      // Telegram retries it: stored once, answered once (the contact's app stops showing the button loading)
      expect(yield* send(button)).toBe(200)
      const answered = fake.state.requests.filter((r) => r.method === "answerCallbackQuery")
      expect(answered.map((r) => r.body.callback_query_id)).toEqual(["4382bfdwdsb323b2d9"])
      expect(fake.state.callbacks.has("4382bfdwdsb323b2d9")).toBe(false)
      // a group's message is not answered: recorded, nothing stored
      const group = fake.update({
        message: {
          message_id: 1,
          from: { id: user.id, is_bot: false, first_name: "Rui" },
          chat: { id: -100123, type: "supergroup", title: "Fans" },
          date: Math.floor(Date.now() / 1000),
          text: "hello all"
        }
      })
      expect(yield* send(group)).toBe(200)

      const rows = (yield* messagesOf(user.id)).filter((r) => r.role === "user")
      expect(rows).toHaveLength(9)
      const [photoRow, pdfRow, voiceRow, locationRow, contactRow, pollRow, bigRow, editRow, buttonRow] = rows
      expect(photoRow).toMatchObject({ message: "My order" })
      expect(photoRow!.files).toEqual([expect.objectContaining({ mimetype: "image/jpeg", type: "image", size: 10 })])
      expect(pdfRow!.files).toEqual([
        expect.objectContaining({ name: "order.pdf", mimetype: "application/pdf", type: "document", size: 14 })
      ])
      expect(voiceRow!.files).toEqual([expect.objectContaining({ mimetype: "audio/ogg", type: "audio", size: 9 })])
      expect(locationRow!.message).toBe("[location] 41.15, -8.61")
      expect(contactRow!.message).toBe("[contact] Rui Costa +351 912 345 678")
      expect(pollRow!.message).toBe("[unsupported Telegram message: poll]")
      expect(bigRow!.files).toEqual([])
      expect(bigRow!.message).toMatch(/could not be downloaded: Bad Request: file is too big/)
      expect(editRow).toMatchObject({ message: "[edited] My order, number 42", files: [] })
      expect(editRow!.attachments).toContainEqual({ type: "edit", message_id: `${user.id}:${first}` })
      expect(buttonRow).toMatchObject({
        message: "plan:growth",
        external_message_id: expect.stringContaining(":callback:")
      })
      // the contact's own card gave its phone
      const [contact] = yield* sqlRows<{ phone: string | null }>`select phone from contacts where id = ${
        rows[0]!.contact_id
      }`
      expect(contact!.phone).toBe("351912345678")
      const [event] = yield* sqlRows<{ reason: string }>`
        select reason from channel_events where channel_id = ${channel.id} order by id desc limit 1`
      expect(event!.reason).toMatch(/supergroup chat/)
    }))

  it.effect("an operator's message and file reach the bot API; errors are read by meaning", () =>
    Effect.gen(function*() {
      const { channel, owner } = yield* connect
      const user = freshUser("Joana", "Reis")
      const update = fake.message(user, { text: "Hello" })
      expect(yield* send(update)).toBe(200)
      const reply = yield* replyTo(`${user.id}:${update.message.message_id}`)
      const conversation = reply.conversation_id

      const sent = ok(
        yield* post(owner, `/api/user/${conversation}/messages`, { message: "Joana, Ana here." }),
        "messages.send"
      )
      expect(sent).toMatchObject({ status: "sent_to_user", external_message_id: expect.stringMatching(/^\d+:\d+$/) })
      expect(sentTo(user.id).some((s) => s.method === "sendMessage" && s.text === "Joana, Ana here.")).toBe(true)

      // a picture with a short text: one sendPhoto by signed link, the text its caption; Telegram fetched the bytes
      const { baseUrl } = yield* TestServer
      const form = new FormData()
      form.append("message", "The brochure")
      form.append("files[]", new Blob([Buffer.from("png-bytes")], { type: "image/png" }), "brochure.png")
      const withFile = yield* Effect.promise(() =>
        fetch(`${baseUrl}/api/user/${conversation}/messages`, {
          method: "POST",
          headers: { authorization: `Bearer ${owner.token}` },
          body: form
        }).then((r) => r.status)
      )
      expect(withFile).toBe(200)
      const picture = sentTo(user.id).at(-1)!
      expect(picture).toMatchObject({ method: "sendPhoto", caption: "The brochure", media: { bytes: 9 } })

      // a document Telegram will not fetch by link (only PDF, ZIP and GIF): uploaded, read from storage
      const docForm = new FormData()
      docForm.append(
        "files[]",
        new Blob([Buffer.from("docx-bytes!")], {
          type: "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
        }),
        "terms.docx"
      )
      const withDoc = yield* Effect.promise(() =>
        fetch(`${baseUrl}/api/user/${conversation}/messages`, {
          method: "POST",
          headers: { authorization: `Bearer ${owner.token}` },
          body: docForm
        }).then((r) => r.status)
      )
      expect(withDoc).toBe(200)
      expect(sentTo(user.id).at(-1)).toMatchObject({
        method: "sendDocument",
        media: { url: "attach://document", bytes: 11 }
      })

      // a text over 4,096 characters goes in two messages
      const long = `${"word ".repeat(900)}\n\n${"more ".repeat(300)}`.trim()
      ok(yield* post(owner, `/api/user/${conversation}/messages`, { message: long }), "messages.send")
      const parts = sentTo(user.id).slice(-2)
      expect(parts.map((p) => p.method)).toEqual(["sendMessage", "sendMessage"])
      expect(parts.every((p) => p.text!.length <= 4096)).toBe(true)
      // about one message a second in a chat, as Telegram asks
      const calls = fake.state.requests.filter((r) => r.method === "sendMessage" && Number(r.body?.chat_id) === user.id)
      expect(calls.at(-1)!.at - calls.at(-2)!.at).toBeGreaterThanOrEqual(1000)

      // a rate limit is retried durably, after the wait Telegram asked for (retry_after: 2 s, ten times the backoff)
      fake.state.failures.push(tooManyRequests(2))
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
      expect(sentTo(user.id).filter((s) => s.text === "After the limit")).toHaveLength(1)
      const tries = fake.state.requests.filter((r) => r.method === "sendMessage" && r.body?.text === "After the limit")
      expect(tries).toHaveLength(2)
      expect(tries[1]!.at - tries[0]!.at).toBeGreaterThanOrEqual(2000)

      // the user blocked the bot: the message fails with Telegram's words and the send answers 500
      fake.state.failures.push(blocked())
      const refused = yield* post(owner, `/api/user/${conversation}/messages`, { message: "Are you there?" })
      expect(refused.status).toBe(500)
      expect(JSON.stringify(refused.body)).toContain("bot was blocked by the user")

      // the token revoked: the channel is disconnected and says so; its sends stop
      const token = fake.state.token
      fake.state.token = "7000000001:AARevokedRevokedRevokedRevoked"
      const revoked = yield* post(owner, `/api/user/${conversation}/messages`, { message: "Hello again" })
      expect(revoked.status).toBe(500)
      const shown = ok(yield* get(owner, `/api/user/channels/${channel.id}`), "channels.get")
      expect(shown).toMatchObject({ status: "disconnected" })
      expect(JSON.stringify(shown)).not.toContain(token)
      const [logged] = yield* sqlRows<{ url: string; error: string | null }>`
        select url, error from webhook_deliveries where channel_id = ${channel.id} order by id desc limit 1`
      expect(logged!.url).toMatch(/\/bot7000000001:\*\*\*\/sendMessage$/)
      expect(JSON.stringify(logged)).not.toContain(token)
      fake.state.token = token
    }))

  it.effect("a link Parley issues ties the chat it starts to a known contact; a forged or foreign one does not", () =>
    Effect.gen(function*() {
      const { channel, owner, pipeline } = yield* connect
      // a link whose signature has a `_` of its own (base64url), as about a third have: the token still reads
      let known = yield* createOpportunity(owner, {
        pipeline_id: pipeline.id,
        contact: { name: "Maria Known", email: `maria.${process.pid}@example.com` }
      })
      let link = ok(
        yield* post(owner, `/api/user/channels/${channel.id}/links`, { contact_id: known.contact_id }),
        "channels.link"
      )
      for (let i = 0; i < 40 && link.token.split("_").length < 4; i++) {
        known = yield* createOpportunity(owner, {
          pipeline_id: pipeline.id,
          contact: { name: "Maria Known", email: `maria.${process.pid}.${i}@example.com` }
        })
        link = ok(
          yield* post(owner, `/api/user/channels/${channel.id}/links`, { contact_id: known.contact_id }),
          "channels.link"
        )
      }
      expect(link.token.split("_").length).toBeGreaterThanOrEqual(4)
      expect(link.url).toBe(`https://t.me/${fake.state.bot.username}?start=${link.token}`)
      expect(link.token).toMatch(/^[A-Za-z0-9_-]{1,64}$/)
      // the contact taps the link: Telegram opens the chat with `/start {token}`
      const user = freshUser("Maria", "K")
      expect(yield* send(fake.message(user, { text: `/start ${link.token}` }))).toBe(200)
      const [first] = yield* messagesOf(user.id)
      expect(first).toMatchObject({ message: "/start", contact_id: known.contact_id })

      // a token changed by a character, or another workspace's contact: a new contact, as without a link
      const forged = `${link.token.slice(0, -1)}${link.token.endsWith("A") ? "B" : "A"}`
      const stranger = freshUser()
      expect(yield* send(fake.message(stranger, { text: `/start ${forged}` }))).toBe(200)
      const [strange] = yield* messagesOf(stranger.id)
      expect(strange!.contact_id).not.toBe(known.contact_id)
      const other = yield* seedUser()
      expect((yield* post(other, `/api/user/channels/${channel.id}/links`, { contact_id: known.contact_id })).status)
        .toBe(404)
      const foreign = yield* post(owner, `/api/user/channels/${channel.id}/links`, { contact_id: 999_999_999 })
      expect422(foreign, ["contact_id"])
    }))

  it.effect("the simulator Parley ships plays Telegram and the contact: no bot needed", () =>
    Effect.gen(function*() {
      const { owner, pipeline } = yield* connect
      const created = ok(
        yield* post(owner, "/api/user/channels", {
          kind: "telegram",
          name: "Simulated bot",
          pipeline_id: pipeline.id,
          credentials: { simulator: true }
        }),
        "channels.create"
      ) as unknown as TelegramChannel & { simulator_url: string }
      expect(created.simulator_url).toMatch(/\/simulator\/telegram\/wh_\w+$/)
      const checked = ok(yield* post(owner, `/api/user/channels/${created.id}/check`, {}), "channels.check")
      expect(checked).toMatchObject({ ok: true, account: { username: "parley_sim_bot" } })
      const page = yield* Effect.promise(() =>
        fetch(created.simulator_url).then(async (r) => [r.status, await r.text()])
      )
      expect(page[0]).toBe(200)
      expect(page[1]).toContain("Telegram simulator")

      const chat = 880_000_000 + process.pid
      const said = yield* Effect.promise(() =>
        fetch(`${created.simulator_url}/messages`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ chat_id: chat, name: "Sim Contact", text: "Hello from the simulator" })
        }).then(async (r) => ({ status: r.status, body: await r.json() as { webhook_status: number } }))
      )
      expect(said).toMatchObject({ status: 200, body: { webhook_status: 200 } })
      const thread = yield* eventually(
        Effect.promise(() =>
          fetch(`${created.simulator_url}/thread?chat_id=${chat}`).then((r) =>
            r.json() as Promise<{ messages: Array<{ direction: string; text: string }> }>
          )
        ).pipe(Effect.map((t) => t.messages.some((m) => m.direction === "out") ? t.messages : undefined)),
        20_000
      )
      expect(thread[0]).toMatchObject({ direction: "in", text: "Hello from the simulator" })
      const [stored] = yield* messagesOf(chat)
      expect(stored).toMatchObject({ role: "user", message: "Hello from the simulator" })
      // nothing of it went to the Bot API the server is configured with
      expect(fake.state.requests.some((r) => r.body?.chat_id !== undefined && Number(r.body.chat_id) === chat)).toBe(
        false
      )
    }))
})
