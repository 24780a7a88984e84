/**
 * A real SMTP server for a test (nodemailer's `smtp-server`) on a free 127.0.0.1 port: AUTH PLAIN/LOGIN against one
 * user and password (535 otherwise), recipients refused with `550` when their address starts with `refuse`, and
 * every mail it takes kept raw with its envelope, parsed (postal-mime) for the test to read.
 */
import { Effect } from "effect"
import PostalMime, { type Email } from "postal-mime"
import { SMTPServer } from "smtp-server"
import { freePort } from "./Ports.js"

export interface CapturedMail {
  readonly from: string
  readonly to: ReadonlyArray<string>
  readonly raw: string
  readonly parsed: Email
  readonly header: (name: string) => string | undefined
}

export interface SmtpCapture {
  readonly host: string
  readonly port: number
  readonly user: string
  readonly password: string
  readonly mails: Array<CapturedMail>
  /** Mail is taken (in `mails`) and never acknowledged: the DATA command waits, as a server that hangs. */
  hang: boolean
}

export const makeSmtpCapture = (user = "support@example.com", password = "smtp-secret") =>
  Effect.gen(function*() {
    const port = yield* Effect.promise(freePort)
    const mails: Array<CapturedMail> = []
    const capture: SmtpCapture = { host: "127.0.0.1", port, user, password, mails, hang: false }
    const server = new SMTPServer({
      secure: false,
      disabledCommands: ["STARTTLS"],
      authMethods: ["PLAIN", "LOGIN"],
      allowInsecureAuth: true,
      logger: false,
      onAuth: (auth, _session, callback) =>
        auth.username === user && auth.password === password
          ? callback(null, { user: auth.username })
          : callback(Object.assign(new Error("5.7.8 Authentication credentials invalid"), { responseCode: 535 })),
      onRcptTo: (address, _session, callback) =>
        address.address.startsWith("refuse")
          ? callback(
            Object.assign(new Error("5.1.1 <" + address.address + ">: Recipient address rejected: User unknown"), {
              responseCode: 550
            })
          )
          : callback(),
      onData: (stream, session, callback) => {
        const chunks: Array<Buffer> = []
        stream.on("data", (c: Buffer) => chunks.push(c))
        stream.on("end", () => {
          const raw = Buffer.concat(chunks).toString("utf8")
          PostalMime.parse(raw).then((parsed) => {
            mails.push({
              from: session.envelope.mailFrom === false ? "" : session.envelope.mailFrom.address,
              to: session.envelope.rcptTo.map((r) => r.address),
              raw,
              parsed,
              header: (name) => parsed.headers.find((h) => h.key === name.toLowerCase())?.value
            })
            if (!capture.hang) callback()
          }, callback)
        })
      }
    })
    yield* Effect.acquireRelease(
      Effect.promise(() => new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))),
      () => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
    )
    return capture
  })
