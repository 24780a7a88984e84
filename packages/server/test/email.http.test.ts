/**
 * Issue 39, email: through the real server against a real Dovecot (IMAP, mail put in with APPEND) and a real SMTP
 * server (nodemailer's smtp-server). Connecting a mailbox (passwords never shown, bad input named, a refused login
 * said plainly), the mailbox sync storing each mail once (also when read again), threading by Message-ID and
 * References, quoted history, HTML and attachments, the reply's headers over SMTP, auto-replies never answered, an
 * SMTP refusal, and the simulator.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { connectChannel } from "./support/Channels.js"
import { type Dovecot, makeDovecot } from "./support/Dovecot.js"
import { expect422, get, ok, post, sqlRows } from "./support/Opportunities.js"
import { makeSmtpCapture, type SmtpCapture } from "./support/SmtpCapture.js"
import { seedUser, TestServer, TestServerLive } from "./support/TestServer.js"
import { eventually } from "./support/WebhookReceiver.js"

let dovecot: Dovecot
let smtp: SmtpCapture

const Servers = Layer.unwrapScoped(Effect.gen(function*() {
  dovecot = yield* makeDovecot(3)
  smtp = yield* makeSmtpCapture()
  return TestServerLive({ EMAIL_POLL_INTERVAL_MS: "300", ENGINE_SWEEP_INTERVAL_MS: "1000" })
}))

interface EmailChannel {
  readonly id: number
  readonly simulator_url: string | null
}

const credentials = (mailbox: string, overrides: { imapPassword?: string } = {}) => ({
  address: mailbox,
  imap: {
    host: dovecot.host,
    port: dovecot.port,
    secure: false,
    user: mailbox,
    password: overrides.imapPassword ?? dovecot.password
  },
  smtp: { host: smtp.host, port: smtp.port, secure: false, user: smtp.user, password: smtp.password }
})

const connect = (mailbox: string) =>
  Effect.suspend(() =>
    connectChannel<EmailChannel>({ kind: "email", name: "Support mail", credentials: credentials(mailbox) })
  )

/** A raw mail, CRLF lines. */
const mail = (headers: Record<string, string>, body: string) =>
  [...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), "", body].join("\r\n")

const append = (mailbox: string, raw: string) => Effect.promise(() => dovecot.append(mailbox, raw))

interface Row {
  readonly id: string
  readonly role: string
  readonly message: string | null
  readonly status: string
  readonly error: string | null
  readonly files: ReadonlyArray<{ name: string; mimetype: string; size: number }>
  readonly attachments: ReadonlyArray<Record<string, unknown>>
  readonly external_message_id: string | null
  readonly external_chat_id: string | null
  readonly conversation_id: number
  readonly contact_id: number
  readonly handled_reason: string | null
}

const rowsOf = (channelId: number) =>
  sqlRows<Row>`
    select id, role, message, status, error, files, attachments, external_message_id, external_chat_id,
           conversation_id::int, contact_id::int, handled_reason
    from messages where channel_id = ${channelId} order by created_at, id`

/** The contact's stored mail with this Message-ID. */
const stored = (channelId: number, messageId: string) =>
  eventually(
    Effect.map(rowsOf(channelId), (rows) => rows.find((r) => r.role === "user" && r.external_message_id === messageId)),
    20_000
  )

/** The AI's reply (sent or failed) to the contact's mail with this Message-ID. */
const replyTo = (channelId: number, messageId: string) =>
  eventually(
    Effect.map(
      sqlRows<Row>`
        select r.id, r.role, r.message, r.status, r.error, r.external_message_id, r.conversation_id::int
        from messages u join messages r on r.in_reply_to = u.id
        where u.channel_id = ${channelId} and u.external_message_id = ${messageId} and u.role = 'user'`,
      (rows) => rows[0] !== undefined && !["ai_generated", "sending"].includes(rows[0].status) ? rows[0] : undefined
    ),
    20_000
  )

const sentTo = (address: string) => smtp.mails.filter((m) => m.to.includes(address))

layer(Servers, { excludeTestServices: true, timeout: 120_000 })("Email channel", (it) => {
  it.effect("connects a mailbox: passwords never shown, bad input named, check logs in, a refused login said", () =>
    Effect.gen(function*() {
      const mailbox = dovecot.users[0]!
      const { channel, owner } = yield* connect(mailbox)
      const shown = ok(yield* get(owner, `/api/user/channels/${channel.id}`), "channels.get")
      expect(shown).toMatchObject({ kind: "email", status: "connected", simulator_url: null })
      for (const secret of [dovecot.password, smtp.password]) {
        expect(JSON.stringify(shown)).not.toContain(secret)
        const [row] = yield* sqlRows<
          { c: string }
        >`select credentials_ciphertext as c from channels where id = ${channel.id}`
        expect(row!.c).not.toContain(secret)
      }
      expect(ok(yield* post(owner, `/api/user/channels/${channel.id}/check`, {}), "channels.check")).toMatchObject({
        ok: true,
        account: { address: mailbox, imap: `${dovecot.host}:${dovecot.port}`, smtp: `${smtp.host}:${smtp.port}` }
      })

      expect422(
        yield* post(owner, "/api/user/channels", {
          kind: "email",
          credentials: {
            address: "not-an-address",
            imap: { host: "", port: 0, secure: true, user: "u", password: "p" },
            smtp: { host: "smtp.example.com", port: 587, secure: "no", user: "u" }
          }
        }),
        [
          "credentials.address",
          "credentials.imap.host",
          "credentials.imap.port",
          "credentials.smtp.password",
          "credentials.smtp.secure"
        ]
      )

      // a password the IMAP server refuses: the check says which server refused which login
      const wrong = ok(
        yield* post(owner, "/api/user/channels", {
          kind: "email",
          is_active: false,
          credentials: credentials(mailbox, { imapPassword: "wrong-password" })
        }),
        "channels.create"
      ) as { id: number }
      const refused = ok(yield* post(owner, `/api/user/channels/${wrong.id}/check`, {}), "channels.check")
      expect(refused.ok).toBe(false)
      expect(refused.message).toContain(
        `The IMAP server ${dovecot.host}:${dovecot.port} refused the login of ${mailbox}`
      )
      expect(refused.message).not.toContain("wrong-password")

      const stranger = yield* seedUser()
      expect((yield* get(stranger, `/api/user/channels/${channel.id}`)).status).toBe(404)
      expect((yield* post(stranger, `/api/user/channels/${channel.id}/check`, {})).status).toBe(404)
    }))

  it.effect("stores each mail once, threads it, strips quoted history, reads HTML and files, replies with headers", () =>
    Effect.gen(function*() {
      const mailbox = dovecot.users[1]!
      const { channel, owner } = yield* connect(mailbox)
      const ana = "ana@contact.example"
      yield* append(
        mailbox,
        mail(
          {
            From: `Ana Lima <${ana}>`,
            To: mailbox,
            Subject: "Order 42",
            "Message-ID": "<a1@contact.example>",
            Date: new Date().toUTCString()
          },
          [
            "Hello, where is my order 42?",
            "",
            "-- ",
            "Ana Lima, Porto",
            "",
            "On Mon, 23 Nov 2026 at 10:00, Support <support@example.com> wrote:",
            "> Your order has shipped."
          ].join("\r\n")
        )
      )
      const first = yield* stored(channel.id, "<a1@contact.example>")
      expect(first.message).toBe("Hello, where is my order 42?")
      expect(first.attachments[0]).toMatchObject({
        type: "email",
        subject: "Order 42",
        from: ana,
        to: [mailbox],
        message_id: "<a1@contact.example>",
        original_text: expect.stringContaining("> Your order has shipped.")
      })

      // the AI's reply reaches the SMTP server as an answer to Ana's mail
      const reply = yield* replyTo(channel.id, "<a1@contact.example>")
      expect(reply.status).toBe("sent_to_user")
      const out = yield* eventually(Effect.sync(() => sentTo(ana)[0]))
      expect(out.from).toBe(mailbox)
      expect(out.parsed.from?.address).toBe(mailbox)
      expect(out.parsed.subject).toBe("Re: Order 42")
      expect(out.parsed.inReplyTo).toBe("<a1@contact.example>")
      expect(out.parsed.references).toContain("<a1@contact.example>")
      expect(out.parsed.messageId).toBe(reply.external_message_id)
      expect(out.parsed.text?.trim()).toBe(reply.message?.trim())

      // Ana answers the reply (In-Reply-To its Message-ID): the same conversation
      yield* append(
        mailbox,
        mail({
          From: ana,
          To: mailbox,
          Subject: "Re: Order 42",
          "Message-ID": "<a2@contact.example>",
          "In-Reply-To": reply.external_message_id!,
          References: `<a1@contact.example> ${reply.external_message_id!}`
        }, "Thanks! And when does it arrive?\r\n\r\n> earlier text")
      )
      const second = yield* stored(channel.id, "<a2@contact.example>")
      expect(second.conversation_id).toBe(first.conversation_id)
      expect(second.message).toBe("Thanks! And when does it arrive?")

      // a new subject, HTML only, with a file: a new conversation with the same contact
      yield* append(
        mailbox,
        mail(
          {
            From: ana,
            To: mailbox,
            Subject: "Invoice question",
            "Message-ID": "<b1@contact.example>",
            "MIME-Version": "1.0",
            "Content-Type": "multipart/mixed; boundary=\"b\""
          },
          [
            "--b",
            "Content-Type: text/html; charset=utf-8",
            "",
            "<html><body><p>Please send the <b>invoice</b> again.</p><blockquote>old quoted</blockquote></body></html>",
            "--b",
            "Content-Type: application/pdf; name=\"order.pdf\"",
            "Content-Disposition: attachment; filename=\"order.pdf\"",
            "Content-Transfer-Encoding: base64",
            "",
            Buffer.from("%PDF-1.4 order 42").toString("base64"),
            "--b--"
          ].join("\r\n")
        )
      )
      const third = yield* stored(channel.id, "<b1@contact.example>")
      expect(third.conversation_id).not.toBe(first.conversation_id)
      expect(third.contact_id).toBe(first.contact_id)
      expect(third.message).toBe("Please send the invoice again.")
      expect(third.files).toEqual([
        expect.objectContaining({ name: "order.pdf", mimetype: "application/pdf", size: 17 })
      ])
      const [contact] = yield* sqlRows<{ email: string | null; name: string | null }>`
        select email, name from contacts where id = ${first.contact_id}`
      expect(contact).toEqual({ email: ana, name: "Ana Lima" })

      // an operator answers with the invoice: the file goes as the mail's attachment, on that thread
      const { baseUrl } = yield* TestServer
      const form = new FormData()
      form.append("message", "Here it is.")
      form.append("files[]", new Blob([Buffer.from("%PDF-1.4 invoice 42")], { type: "application/pdf" }), "invoice.pdf")
      const sent = yield* Effect.promise(() =>
        fetch(`${baseUrl}/api/user/${third.conversation_id}/messages`, {
          method: "POST",
          headers: { authorization: `Bearer ${owner.token}` },
          body: form
        }).then((r) => r.status)
      )
      expect(sent).toBe(200)
      const withFile = yield* eventually(Effect.sync(() => sentTo(ana).find((m) => m.parsed.attachments.length > 0)))
      expect(withFile.parsed.subject).toBe("Re: Invoice question")
      expect(withFile.parsed.inReplyTo).toBe("<b1@contact.example>")
      expect(withFile.parsed.attachments.map((a) => [a.filename, a.mimeType])).toEqual([[
        "invoice.pdf",
        "application/pdf"
      ]])
      expect(Buffer.from(withFile.parsed.attachments[0]!.content as ArrayBuffer).toString()).toBe("%PDF-1.4 invoice 42")

      // read again from the start (the watermark lost): every mail is still stored once
      yield* sqlRows`update mailbox_sync set last_uid = 0 where channel_id = ${channel.id}`
      yield* eventually(
        Effect.map(
          sqlRows<{ n: number }>`select last_uid::int as n from mailbox_sync where channel_id = ${channel.id}`,
          (rows) => (rows[0]?.n ?? 0) >= 3
        )
      )
      const users = (yield* rowsOf(channel.id)).filter((r) => r.role === "user")
      expect(users.map((r) => r.external_message_id).sort()).toEqual([
        "<a1@contact.example>",
        "<a2@contact.example>",
        "<b1@contact.example>"
      ])
    }))

  it.effect("stores an auto-reply without answering it; an SMTP 550 fails the reply with the server's words", () =>
    Effect.gen(function*() {
      const mailbox = dovecot.users[2]!
      const { channel } = yield* connect(mailbox)
      yield* append(
        mailbox,
        mail({
          From: "bob@contact.example",
          To: mailbox,
          Subject: "Out of office",
          "Message-ID": "<auto1@contact.example>",
          "Auto-Submitted": "auto-replied"
        }, "I am away until Monday.")
      )
      const auto = yield* stored(channel.id, "<auto1@contact.example>")
      expect(auto.handled_reason).toBe("automated")
      expect(auto.attachments[0]).toMatchObject({ automated: "Auto-Submitted: auto-replied" })

      yield* append(
        mailbox,
        mail(
          { From: "refuse-carl@contact.example", To: mailbox, Subject: "Hi", "Message-ID": "<c1@contact.example>" },
          "Hello?"
        )
      )
      const failed = yield* replyTo(channel.id, "<c1@contact.example>")
      expect(failed.status).toBe("failed")
      expect(failed.error).toContain("550")
      expect(failed.error).toContain("Recipient address rejected")

      // by now the auto-reply would have had its answer: it has none, and nothing was sent to its sender
      const rows = yield* rowsOf(channel.id)
      expect(rows.filter((r) => r.conversation_id === auto.conversation_id && r.role === "assistant")).toEqual([])
      expect(sentTo("bob@contact.example")).toEqual([])
    }))

  it.effect("simulates a mailbox: the contact's mail gets the agent's reply, and answering it threads back", () =>
    Effect.gen(function*() {
      const { channel, owner } = yield* connectChannel<EmailChannel>({
        kind: "email",
        credentials: { simulator: true }
      })
      expect(channel.simulator_url).toMatch(/\/simulator\/email\/wh_[A-Za-z0-9]+$/)
      const url = channel.simulator_url!
      const page = yield* Effect.promise(() => fetch(url).then((r) => r.text()))
      expect(page).toContain("Email simulator")
      const say = (subject: string, text: string) =>
        Effect.promise(() =>
          fetch(`${url}/messages`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ from: "dora@contact.example", name: "Dora", subject, text })
          }).then((r) => r.json() as Promise<{ message_id: string }>)
        )
      const thread = Effect.promise(() =>
        fetch(`${url}/thread?from=dora@contact.example`).then((r) =>
          r.json() as Promise<{ messages: Array<{ direction: string; subject: string; id: string }> }>
        )
      )
      const first = yield* say("Opening hours", "When are you open?")
      const answered = yield* eventually(
        Effect.map(thread, (t) => t.messages.find((m) => m.direction === "out"))
      )
      expect(answered.subject).toBe("Re: Opening hours")
      const again = yield* say("Opening hours", "And on Sundays?")
      const [a, b] = [yield* stored(channel.id, first.message_id), yield* stored(channel.id, again.message_id)]
      expect(b.conversation_id).toBe(a.conversation_id)
      expect(ok(yield* get(owner, `/api/user/channels/${channel.id}`), "channels.get")).toMatchObject({ kind: "email" })
    }))
})
