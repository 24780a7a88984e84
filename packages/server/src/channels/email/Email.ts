/**
 * The email adapter (docs/channels.md, "Email"): the channel layer's port for `kind: "email"`. A mailbox is read over
 * IMAP by MailboxSync.ts (no webhook: `verify` refuses every request), a reply goes out over SMTP (MailSend.ts) as
 * an answer to the contact's latest mail: `In-Reply-To` and `References` name it, its Message-ID (made from our
 * message id, so every attempt sends the same one) is the provider id a reply to it threads back by. A simulated
 * mailbox sends to this server's email simulator instead (simulator/EmailSimulator.ts).
 */
import { type ChannelProvider, type OutboundMessage, SendFailure, type Sent } from "@parley/domain"
import { Effect, Option, Schema } from "effect"
import { FileStorage } from "../../files/FileStorage.js"
import { checkImap, type MailServer } from "./Mailbox.js"
import { isReplySubject } from "./MailParse.js"
import { checkSmtp, sendMail } from "./MailSend.js"
import { SimulatedMailboxes } from "./SimulatedMailboxes.js"

const NonEmpty = (max: number) =>
  Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" }), Schema.maxLength(max))

const Address = Schema.String.pipe(
  Schema.maxLength(254),
  Schema.filter((s) =>
    /^[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+$/.test(s) || "must be an email address such as support@example.com"
  )
)

const Server = Schema.Struct({
  host: NonEmpty(253),
  port: Schema.Int.pipe(Schema.between(1, 65535, { message: () => "must be a port between 1 and 65535" })),
  /** TLS from the start (IMAP 993, SMTP 465); false: STARTTLS where the server offers it (SMTP 587). */
  secure: Schema.Boolean,
  user: NonEmpty(320),
  password: NonEmpty(1000)
})

/** What `credentials` holds for an email channel, as given on create (and replaced whole by update). */
export const EmailCredentialsInput = Schema.Struct({ address: Address, imap: Server, smtp: Server })

/** A mailbox that talks to the simulator Parley ships: everything else is generated. */
export const SimulatedMailboxInput = Schema.Struct({ simulator: Schema.Literal(true) })

/** As stored (encrypted); a simulated mailbox has no servers. */
export const EmailCredentials = Schema.Struct({
  address: Schema.String,
  imap: Schema.optional(Server),
  smtp: Schema.optional(Server),
  simulator: Schema.optional(Schema.Boolean)
})
export type EmailCredentials = typeof EmailCredentials.Type

/** A mail's size Parley reads at most, and a file's: the usual limit of mail servers. */
export const MAX_MAIL_BYTES = 35 * 1024 * 1024
const MAX_FILE_BYTES = 25 * 1024 * 1024

/** The `email` attachment a stored mail keeps (MailboxSync.ts): what a reply to it needs. */
export interface EmailEntry {
  readonly type: "email"
  readonly subject: string
  readonly from: string | null
  readonly reply_to: string | null
  readonly to: ReadonlyArray<string>
  readonly cc: ReadonlyArray<string>
  readonly message_id: string | null
  readonly references: ReadonlyArray<string>
  readonly original_text: string
  readonly automated: string | null
}

const entryOf = (attachments: ReadonlyArray<unknown>): EmailEntry | undefined =>
  attachments.find((a): a is EmailEntry =>
    typeof a === "object" && a !== null && (a as { type?: unknown }).type === "email"
  )

const domainOf = (address: string) => address.split("@").pop() ?? "parley.invalid"

const escapeHtml = (s: string) =>
  s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;" })[c]!)

/** The text as simple HTML: paragraphs and line breaks, nothing else. */
const htmlOf = (text: string) =>
  text.split(/\n{2,}/).map((p) => `<p>${escapeHtml(p).replaceAll("\n", "<br>")}</p>`).join("\n")

const undeliverable = (message: string) =>
  new SendFailure({ kind: "undeliverable", message, status: null, code: null, excerpt: null })

const misconfigured = new SendFailure({
  kind: "misconfigured",
  message: "The mailbox has no IMAP and SMTP servers: replace its credentials.",
  status: null,
  code: null,
  excerpt: null
})

/** The headers of a reply to the contact's latest mail that may be answered. */
const replyHeaders = (c: EmailCredentials, m: OutboundMessage) => {
  const entry = entryOf(m.contactMessage?.attachments ?? [])
  const to = entry?.reply_to ?? entry?.from
  // a machine's mail is never answered (the delivery's query skips it too)
  if (entry === undefined || entry.automated !== null || to === null || to === undefined) return Option.none()
  const root = entry.subject.trim() === "" ? "(no subject)" : entry.subject.trim()
  const references = [...entry.references, ...(entry.message_id === null ? [] : [entry.message_id])].slice(-30)
  return Option.some({
    from: c.address,
    to,
    subject: isReplySubject(root) ? root : `Re: ${root}`,
    messageId: `<${m.id.toLowerCase()}@${domainOf(c.address)}>`,
    ...(entry.message_id === null ? {} : { inReplyTo: entry.message_id }),
    references
  })
}

export class Email extends Effect.Service<Email>()("@parley/server/Email", {
  dependencies: [FileStorage.Default, SimulatedMailboxes.Default],
  effect: Effect.gen(function*() {
    const storage = yield* FileStorage
    const simulated = yield* SimulatedMailboxes

    const attachmentsOf = (m: OutboundMessage) =>
      Effect.forEach(m.files, (f) =>
        Effect.flatMap(storage.blob(f.key, f.mimetype), (blob) =>
          Option.isNone(blob)
            ? Effect.fail(undeliverable(`The file ${f.name} is no longer stored.`))
            : Effect.map(
              Effect.promise(() => blob.value.arrayBuffer()),
              (bytes) => ({ filename: f.name, contentType: f.mimetype, content: Buffer.from(bytes) })
            )))

    const send = (c: EmailCredentials, m: OutboundMessage) =>
      Effect.gen(function*() {
        const headers = replyHeaders(c, m)
        if (Option.isNone(headers)) {
          return yield* undeliverable(
            "The contact has no mail to answer: Parley answers a person's mail, never a machine's (an auto-reply, a bounce, a list)."
          )
        }
        const h = headers.value
        const text = m.text ?? ""
        if (c.simulator === true) {
          simulated.received(c.address, { ...h, text, files: m.files.map((f) => f.name) })
          return { providerMessageIds: [h.messageId], status: 250, excerpt: "250 simulated" } satisfies Sent
        }
        if (c.smtp === undefined) return yield* misconfigured
        const attachments = yield* attachmentsOf(m)
        const response = yield* sendMail(c.smtp, {
          from: m.sender === "operator" && m.senderName !== null ? { name: m.senderName, address: h.from } : h.from,
          to: h.to,
          subject: h.subject,
          messageId: h.messageId,
          ...(h.inReplyTo === undefined ? {} : { inReplyTo: h.inReplyTo }),
          references: [...h.references],
          text,
          html: htmlOf(text),
          attachments
        })
        return { providerMessageIds: [h.messageId], status: 250, excerpt: response.slice(0, 1000) } satisfies Sent
      }).pipe(Effect.withSpan("Email.send"))

    /** Logs in to both servers: what failed, said plainly. */
    const check = (c: EmailCredentials) =>
      Effect.gen(function*() {
        if (c.simulator === true) return { address: c.address, simulator: true }
        if (c.imap === undefined || c.smtp === undefined) return yield* misconfigured
        const server = (s: MailServer) => `${s.host}:${s.port}`
        yield* checkImap(c.imap)
        yield* checkSmtp(c.smtp)
        return { address: c.address, imap: server(c.imap), smtp: server(c.smtp) }
      })

    const provider: ChannelProvider<EmailCredentials> = {
      kind: "email",
      rules: {
        // mail has no service window
        serviceWindowMs: null,
        // mail servers count a mailbox's mail per minute and hour: one a second stays far under them
        defaultRatePerSecond: 1,
        delivery: { handOff: "provider", attempts: 6 },
        maxTextChars: 100_000,
        maxFileBytes: MAX_FILE_BYTES,
        conversationPerThread: true
      },
      credentials: EmailCredentials,
      handshake: () => Option.none(),
      // mail is read from the mailbox, never posted to a webhook
      verify: () => false,
      parse: () => [],
      send,
      // a mail's read state is the mailbox owner's: Parley leaves it as it is
      markRead: () => Effect.void,
      fetchMedia: () => Effect.fail(undeliverable("A mail's files come with it.")),
      check,
      account: (c) => c.address,
      sharesWebhook: () => false
    }
    /** Where sends go, for the delivery log: the SMTP server, never its login. */
    const endpoint = (c: EmailCredentials) =>
      c.simulator === true || c.smtp === undefined ? "smtp://simulator" : `smtp://${c.smtp.host}:${c.smtp.port}`
    return { provider, endpoint }
  })
}) {}
