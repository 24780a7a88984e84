/**
 * A mail as the agent reads it (docs/channels.md, "Email"): parsed from its raw bytes (postal-mime), HTML made text,
 * quoted history and the signature taken out of what the agent reads (the original is kept in the `email`
 * attachment), attachments as files, and whether a machine sent it. Pure: no I/O here.
 */
import { convert } from "html-to-text"
import PostalMime, { type Address, type Email } from "postal-mime"

export interface MailAddress {
  readonly address: string
  readonly name: string | undefined
}

export interface MailFile {
  readonly name: string
  readonly mimetype: string
  readonly content: Uint8Array
}

export interface ParsedMail {
  /** `<id@host>` as the header gives it; undefined when the mail has none. */
  readonly messageId: string | undefined
  readonly inReplyTo: string | undefined
  readonly references: ReadonlyArray<string>
  readonly subject: string
  readonly from: MailAddress | undefined
  /** Where a reply goes: `Reply-To`, else `From`. */
  readonly replyTo: MailAddress | undefined
  readonly to: ReadonlyArray<string>
  readonly cc: ReadonlyArray<string>
  readonly date: Date | undefined
  /** What the agent reads: the new part of the mail. */
  readonly text: string
  /** The whole text, quoted history and signature included. */
  readonly original: string
  readonly files: ReadonlyArray<MailFile>
  /** Why a machine sent it (the header that says so); undefined for a person's mail. */
  readonly automated: string | undefined
}

const ids = (value: string | undefined): Array<string> => value?.match(/<[^<>\s]+>/g) ?? []

const mailboxes = (list: ReadonlyArray<Address> | undefined): Array<MailAddress> =>
  (list ?? []).flatMap((a) => a.group === undefined ? [a] : a.group).flatMap((m) =>
    m.address === undefined || m.address === "" ? [] : [{ address: m.address.toLowerCase(), name: m.name || undefined }]
  )

const headerOf = (mail: Email, key: string) => mail.headers.find((h) => h.key === key)?.value?.trim()

/** A person's reply opens with one of these (Gmail, Apple Mail, Thunderbird in a few languages): the rest is quoted. */
const ATTRIBUTION =
  /^(On|Am|Le|El|Il|Op|Em)\s.+(wrote|schrieb|a écrit|escribió|ha scritto|schreef|escreveu)(\s.*)?:\s*$/i
const ATTRIBUTION_START = /^(On|Am|Le|El|Il|Op|Em)\s.{10,}$/
const FORWARD_BLOCK = /^-{2,}\s*(Original Message|Ursprüngliche Nachricht|Forwarded message)\s*-{2,}\s*$/i
const OUTLOOK_FROM = /^\*?(From|Von|De):\*?\s.+/i
const OUTLOOK_NEXT = /^\*?(Sent|Date|Gesendet|Datum|Envoyé|To|An|Subject|Betreff):\*?\s/i

/**
 * The new part of a mail's text: up to the attribution of the quoted mail (`On ... wrote:`, also wrapped over two
 * lines), Outlook's `From:`/`Sent:` block or an `Original Message` line, and the signature (`-- `); `>` lines out.
 */
export const stripQuoted = (text: string): string => {
  const lines = text.replace(/\r\n?/g, "\n").split("\n")
  const kept: Array<string> = []
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const trimmed = line.trim()
    const next = lines[i + 1]?.trim() ?? ""
    if (line === "-- " || trimmed === "--") break
    if (ATTRIBUTION.test(trimmed)) break
    if (ATTRIBUTION_START.test(trimmed) && ATTRIBUTION.test(`${trimmed} ${next}`)) break
    if (FORWARD_BLOCK.test(trimmed)) break
    if (/^_{10,}$/.test(trimmed) && OUTLOOK_FROM.test(next)) break
    if (OUTLOOK_FROM.test(trimmed) && OUTLOOK_NEXT.test(next)) break
    if (trimmed.startsWith(">")) continue
    kept.push(line)
  }
  return kept.join("\n").replace(/\n{3,}/g, "\n\n").trim()
}

/** HTML as text: links kept, images out; `quoted` false drops the blocks mail clients put quoted history in. */
const htmlText = (html: string, quoted: boolean) =>
  convert(html, {
    wordwrap: false,
    selectors: [
      { selector: "img", format: "skip" },
      { selector: "a", options: { hideLinkHrefIfSameAsText: true } },
      ...(quoted ? [] : [
        { selector: "blockquote", format: "skip" },
        { selector: "div.gmail_quote", format: "skip" },
        { selector: "#divRplyFwdMsg", format: "skip" },
        { selector: "#appendonsend", format: "skip" }
      ])
    ]
  }).trim()

const AUTOMATED_SENDERS = /^(mailer-daemon|postmaster|no-?reply|do-?not-?reply)(\+.*)?@/i

/**
 * Why a machine sent the mail (RFC 3834's `Auto-Submitted`, `Precedence: bulk|junk|list`, the auto-responders'
 * `X-Autoreply`/`X-Autorespond`, a mailing list's `List-Id`, a bounce's empty `Return-Path` or `multipart/report`,
 * a daemon's address); undefined for a person's mail.
 */
const automatedBy = (mail: Email, from: MailAddress | undefined): string | undefined => {
  const auto = headerOf(mail, "auto-submitted")
  if (auto !== undefined && auto.split(";")[0]!.trim().toLowerCase() !== "no") return `Auto-Submitted: ${auto}`
  const precedence = headerOf(mail, "precedence")?.toLowerCase()
  if (precedence !== undefined && ["bulk", "junk", "list"].includes(precedence)) return `Precedence: ${precedence}`
  for (const key of ["x-autoreply", "x-autorespond", "list-id"]) {
    const value = headerOf(mail, key)
    if (value !== undefined) return `${key}: ${value}`
  }
  const returnPath = headerOf(mail, "return-path")
  if (returnPath !== undefined && /^<\s*>$/.test(returnPath)) return "Return-Path: <>"
  const type = headerOf(mail, "content-type")?.toLowerCase()
  if (type?.startsWith("multipart/report")) return "Content-Type: multipart/report"
  if (from !== undefined && AUTOMATED_SENDERS.test(from.address)) return `From: ${from.address}`
  return undefined
}

const bytesOf = (content: ArrayBuffer | Uint8Array | string) =>
  typeof content === "string"
    ? new TextEncoder().encode(content)
    : content instanceof Uint8Array
    ? content
    : new Uint8Array(content)

/** Text as Postgres stores it: no NUL. */
const clean = (s: string) => s.replaceAll("\u0000", "")

export const parseMail = async (raw: Uint8Array): Promise<ParsedMail> => {
  const mail = await PostalMime.parse(raw, { attachmentEncoding: "arraybuffer" })
  const from = mailboxes(mail.from === undefined ? [] : [mail.from])[0]
  const original = clean(mail.text?.trim() || (mail.html === undefined ? "" : htmlText(mail.html, true)))
  const fresh = mail.text?.trim()
    ? stripQuoted(mail.text)
    : mail.html === undefined
    ? ""
    : stripQuoted(htmlText(mail.html, false))
  const date = mail.date === undefined ? undefined : new Date(mail.date)
  return {
    messageId: ids(mail.messageId)[0],
    inReplyTo: ids(mail.inReplyTo)[0],
    references: ids(mail.references),
    subject: clean(mail.subject?.trim() ?? ""),
    from,
    replyTo: mailboxes(mail.replyTo)[0] ?? from,
    to: mailboxes(mail.to).map((a) => a.address),
    cc: mailboxes(mail.cc).map((a) => a.address),
    date: date !== undefined && Number.isFinite(date.getTime()) ? date : undefined,
    // a mail whose every line was quoted (a forward without a word) is read whole
    text: clean(fresh) || original,
    original,
    files: mail.attachments
      // an image the HTML shows inline is part of the text's look, not a file the contact sent
      .filter((a) => !(a.related === true && a.mimeType.startsWith("image/")))
      .map((a, i) => ({
        name: a.filename ?? `attachment-${i + 1}`,
        mimetype: a.mimeType || "application/octet-stream",
        content: bytesOf(a.content)
      })),
    automated: automatedBy(mail, from)
  }
}

/** A subject without its `Re:`/`Fwd:`/`AW:` prefixes, lowercased: two mails of one thread have the same. */
export const subjectKey = (subject: string) =>
  subject.replace(/^(\s*(re|fwd?|aw|wg|sv|antw)\s*(\[\d+\])?\s*:\s*)+/i, "").trim().toLowerCase()

/** Whether the subject says the mail answers another (`Re:`). */
export const isReplySubject = (subject: string) => /^\s*(re|aw|sv|antw)\s*(\[\d+\])?\s*:/i.test(subject)
