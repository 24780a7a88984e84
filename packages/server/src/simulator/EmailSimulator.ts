/**
 * The email simulator Parley ships (docs/channels.md, "Email"): for an email channel created with
 * `credentials: {"simulator": true}` there is no mail server. The contact's page (`/simulator/email/{webhook key}`)
 * writes a mail (from, subject, text) that is composed as a real MIME mail (nodemailer's composer, with
 * `In-Reply-To` and `References` when it answers a mail of the same subject, as a mail client does) and read by
 * the same code as a mailbox's mail (MailIngest.ts); the adapter's replies are kept instead of sent over SMTP
 * (channels/email/SimulatedMailboxes.ts), and the page shows both. Kept in the memory of the `all` process.
 */
import { HttpLayerRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { ulid } from "@parley/domain"
import { Effect, Layer, Option, Schema } from "effect"
import MailComposer from "nodemailer/lib/mail-composer/index.js"
import type { EmailCredentials } from "../channels/email/Email.js"
import { MailboxChannel } from "../channels/email/MailboxRepo.js"
import { MailIngest } from "../channels/email/MailIngest.js"
import { subjectKey } from "../channels/email/MailParse.js"
import { SimulatedMailboxes } from "../channels/email/SimulatedMailboxes.js"
import { ProviderCredentials } from "../channels/ProviderCredentials.js"
import { ChannelProviders } from "../channels/Providers.js"
import { htmlResponse, scriptNonce } from "../http/PageHeaders.js"

/** What the contact writes on the simulator's page. */
export const EmailSay = Schema.Struct({
  from: Schema.String.pipe(
    Schema.pattern(/^[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+$/, { message: () => "must be an email address" })
  ),
  name: Schema.optionalWith(Schema.String.pipe(Schema.maxLength(100)), { default: () => "Simulated contact" }),
  subject: Schema.optionalWith(Schema.String.pipe(Schema.maxLength(200)), { default: () => "Hello" }),
  text: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(20_000))
})

export class EmailSimulator extends Effect.Service<EmailSimulator>()("@parley/server/EmailSimulator", {
  dependencies: [ChannelProviders.Default, ProviderCredentials.Default, SimulatedMailboxes.Default, MailIngest.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const providerCredentials = yield* ProviderCredentials
    const email = Option.getOrThrow((yield* ChannelProviders).forKind("email"))
    const mailboxes = yield* SimulatedMailboxes
    const ingest = yield* MailIngest

    /** The simulated mailbox with this webhook key. */
    const simulated = (key: string) =>
      Effect.gen(function*() {
        const rows = yield* sql`
          select id, workspace_id, kind, pipeline_id, is_active, credentials_ciphertext, created_at from channels
          where is_simulated and kind = 'email' and credentials_ciphertext is not null and webhook_key = ${key}`
        const row = rows[0]
        if (row === undefined) return Option.none()
        const channel = yield* Schema.decodeUnknown(MailboxChannel)(row)
        const credentials: EmailCredentials = yield* providerCredentials.of(email, channel.credentials_ciphertext)
        return Option.some({ channel, credentials })
      }).pipe(Effect.orDie)

    /** The contact writes: a mail to the mailbox, answering the newest mail of the same subject in the thread. */
    const contactSays = Effect.fn("EmailSimulator.contactSays")(
      function*(key: string, input: typeof EmailSay.Type) {
        const mailbox = yield* simulated(key)
        if (Option.isNone(mailbox)) return Option.none()
        const { channel, credentials } = mailbox.value
        const thread = mailboxes.thread(credentials.address, input.from)
        const answered = [...thread].reverse().find((m) => subjectKey(m.subject) === subjectKey(input.subject))
        const messageId = `<${ulid().toLowerCase()}@${input.from.split("@").pop()}>`
        const raw = yield* Effect.promise(() =>
          new MailComposer({
            from: { name: input.name, address: input.from },
            to: credentials.address,
            subject: input.subject,
            text: input.text,
            messageId,
            date: new Date(),
            ...(answered === undefined ? {} : { inReplyTo: answered.id, references: [answered.id] })
          }).compile().build()
        )
        mailboxes.append(credentials.address, input.from, {
          id: messageId,
          direction: "in",
          subject: input.subject,
          text: input.text,
          files: [],
          in_reply_to: answered?.id ?? null,
          at: new Date().toISOString()
        })
        yield* ingest.ingest(channel, credentials, new Uint8Array(raw), messageId)
        return Option.some({ message_id: messageId })
      }
    )

    return {
      contactSays,
      simulated,
      thread: (key: string, from: string) =>
        Effect.map(simulated(key), Option.map((m) => mailboxes.thread(m.credentials.address, from)))
    }
  })
}) {}

/** The contact's mail client: write a mail, read the thread (every second). */
export const emailPage = (nonce: string) =>
  `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Email simulator · Parley</title>
<style>
  body { margin: 0; font: 15px/1.45 system-ui, sans-serif; background: #f3f4f6; display: flex; justify-content: center; }
  main { width: min(640px, 100vw); min-height: 100vh; background: #fff; display: flex; flex-direction: column; }
  header { background: #1f2937; color: #fff; padding: 12px 16px; }
  header h1 { margin: 0; font-size: 1.05rem; }
  header p { margin: 4px 0 0; font-size: .85rem; opacity: .85; }
  header input { font: inherit; font-size: .85rem; border: 0; border-radius: 4px; padding: 2px 6px; }
  ol { list-style: none; margin: 0; padding: 12px; flex: 1; display: flex; flex-direction: column; gap: 10px; }
  li { border: 1px solid #e5e7eb; border-radius: 6px; padding: 8px 12px; white-space: pre-wrap; }
  li.out { background: #eef2ff; }
  li b { display: block; } li small { color: #6b7280; }
  form { display: grid; gap: 6px; padding: 12px; border-top: 1px solid #e5e7eb; }
  form input, form textarea { font: inherit; padding: 6px 8px; }
</style></head>
<body><main>
<header><h1>Email simulator</h1>
<p>You are <input id="name" aria-label="Your name"> &lt;<input id="from" aria-label="Your email address">&gt;</p></header>
<ol id="thread" aria-live="polite"><li>Write to the mailbox: your mail is read by Parley as a mailbox's mail is.</li></ol>
<form id="form"><input id="subject" aria-label="Subject" placeholder="Subject" required>
<textarea id="text" rows="4" aria-label="Message" placeholder="Message" required></textarea><button>Send</button></form>
</main>
<script nonce="${nonce}">
const base = location.pathname.replace(/\\/$/, "")
const stored = (k, make) => localStorage.getItem(k) || (localStorage.setItem(k, make()), localStorage.getItem(k))
const from = document.getElementById("from"), name = document.getElementById("name")
from.value = stored("sim-email", () => "jane" + Math.floor(Math.random() * 1e6) + "@example.com")
name.value = stored("sim-name", () => "Jane Doe")
from.onchange = () => localStorage.setItem("sim-email", from.value)
name.onchange = () => localStorage.setItem("sim-name", name.value)
const esc = (s) => s.replace(/[&<>]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c])
async function refresh() {
  const r = await fetch(base + "/thread?from=" + encodeURIComponent(from.value))
  if (!r.ok) return
  const { messages } = await r.json()
  if (messages.length === 0) return
  document.getElementById("thread").innerHTML = messages.map((m) => "<li class='" + m.direction + "'><b>" +
    esc(m.subject) + "</b>" + esc(m.text) + "<small> " + m.at.slice(11, 16) + "</small></li>").join("")
}
document.getElementById("form").onsubmit = async (e) => {
  e.preventDefault()
  const subject = document.getElementById("subject"), text = document.getElementById("text")
  await fetch(base + "/messages", { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ from: from.value, name: name.value, subject: subject.value, text: text.value }) })
  text.value = ""
  refresh()
}
setInterval(refresh, 1000)
refresh()
</script></body></html>`

const json = (status: number, body: unknown) => HttpServerResponse.unsafeJson(body, { status })
const notFound = json(404, { message: "No simulated channel has this address." })

const keyParam = Effect.map(HttpLayerRouter.params, (p) => p.key ?? "")

/** The contact's page, its thread (`?from=`), and the contact's mail (`{from, name?, subject?, text}`). */
export const EmailSimulatorRoutes = Layer.mergeAll(
  HttpLayerRouter.add(
    "GET",
    "/simulator/email/:key",
    Effect.gen(function*() {
      if (Option.isNone(yield* (yield* EmailSimulator).simulated(yield* keyParam))) return notFound
      const nonce = scriptNonce()
      const policy = { "script-src": [`'nonce-${nonce}'`], "style-src": ["'unsafe-inline'"], "connect-src": ["'self'"] }
      return htmlResponse(emailPage(nonce), policy, { cache: "no-store" })
    })
  ),
  HttpLayerRouter.add(
    "GET",
    "/simulator/email/:key/thread",
    Effect.gen(function*() {
      const search = yield* HttpServerRequest.ParsedSearchParams
      const from = typeof search.from === "string" ? search.from : ""
      const thread = yield* (yield* EmailSimulator).thread(yield* keyParam, from)
      return Option.match(thread, { onNone: () => notFound, onSome: (messages) => json(200, { from, messages }) })
    })
  ),
  HttpLayerRouter.add(
    "POST",
    "/simulator/email/:key/messages",
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const input = yield* Effect.either(Effect.flatMap(request.json, Schema.decodeUnknown(EmailSay)))
      if (input._tag === "Left") {
        return json(422, {
          message: "Expected {from, name?, subject?, text}: an email address and 1 to 20000 characters."
        })
      }
      const sent = yield* (yield* EmailSimulator).contactSays(yield* keyParam, input.right)
      return Option.match(sent, { onNone: () => notFound, onSome: (s) => json(200, s) })
    })
  )
)
