/**
 * An email channel's SMTP side (nodemailer): a mail sent as the mailbox, and the login check. The SMTP server's
 * answer is read by meaning: 535 (and a refused login) revokes the channel's credentials, any other 5xx (a
 * recipient refused) makes the mail undeliverable with the server's words, 4xx and a server that cannot be reached
 * or times out are transient. The password is never logged: nodemailer's logger is off.
 */
import { SendFailure } from "@parley/domain"
import { Effect } from "effect"
import nodemailer from "nodemailer"
import type Mail from "nodemailer/lib/mailer/index.js"
import type { MailServer } from "./Mailbox.js"

const TIMEOUT_MS = 20_000

const transport = (server: MailServer) =>
  nodemailer.createTransport({
    host: server.host,
    port: server.port,
    secure: server.secure,
    auth: { user: server.user, pass: server.password },
    connectionTimeout: TIMEOUT_MS,
    greetingTimeout: TIMEOUT_MS,
    socketTimeout: TIMEOUT_MS,
    logger: false
  })

/** nodemailer's error as a `SendFailure`: its `responseCode` and `code` decide. */
export const smtpFailure = (server: MailServer, cause: unknown): SendFailure => {
  const e = cause as { code?: string; responseCode?: number; response?: string; message?: string }
  const status = typeof e.responseCode === "number" ? e.responseCode : null
  const words = e.response ?? e.message ?? String(cause)
  const where = `The SMTP server ${server.host}:${server.port}`
  const [kind, message]: readonly [SendFailure["kind"], string] =
    status === 535 || (e.code === "EAUTH" && (status === null || status >= 500))
      ? ["auth_revoked", `${where} refused the login of ${server.user}: ${words}`]
      : status !== null && status >= 500
      ? ["undeliverable", `${where} refused the mail: ${words}`]
      : status !== null && status >= 400
      ? ["transient", `${where} deferred the mail: ${words}`]
      : e.code === "EENVELOPE" || e.code === "EMESSAGE"
      ? ["undeliverable", `${where} could not take the mail: ${words}`]
      : ["transient", `${where} could not be reached or failed: ${words}`]
  return new SendFailure({ kind, message, status, code: status, excerpt: e.response?.slice(0, 1000) ?? null })
}

/** One mail through the mailbox's SMTP server; its answer (`250 ...`). */
export const sendMail = (server: MailServer, mail: Mail.Options) =>
  Effect.acquireUseRelease(
    Effect.sync(() => transport(server)),
    (t) =>
      Effect.tryPromise({
        try: () => t.sendMail(mail) as Promise<{ response?: string }>,
        catch: (cause) => smtpFailure(server, cause)
      }),
    (t) => Effect.sync(() => t.close())
  ).pipe(Effect.map((info) => info.response ?? "250 OK"), Effect.withSpan("MailSend.send"))

/** Logs in (EHLO, STARTTLS where offered, AUTH) and out: whether the SMTP server takes the mailbox's login. */
export const checkSmtp = (server: MailServer) =>
  Effect.acquireUseRelease(
    Effect.sync(() => transport(server)),
    (t) => Effect.tryPromise({ try: () => t.verify(), catch: (cause) => smtpFailure(server, cause) }),
    (t) => Effect.sync(() => t.close())
  ).pipe(Effect.asVoid, Effect.withSpan("MailSend.check"))
