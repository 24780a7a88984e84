/**
 * The email channel end to end, against a real Dovecot (IMAP) and a real SMTP server (the test support's): a
 * 1,000-message thread imported from the mailbox, and the agent's reply round trip.
 * Run: npx tsx bench/email.ts [mails]   (default 1000; embedded database, one `parley serve` process; needs Dovecot)
 *
 * 1. Import: `mails` mails of one thread (each In-Reply-To and References the one before) are put in the INBOX with
 *    IMAP APPEND, then the channel is connected: its first read takes them all (mail since the channel was made,
 *    five minutes of slack). Measured: from connecting to the last mail stored, in mails a second; in the same run,
 *    the same number of messages from one web-chat visitor, one at a time through the receiver, for comparison
 *    (each is one contact message stored on one thread).
 * 2. Round trip: with the reply debounce at 0, one more mail on the thread, five times: from APPEND to the agent's
 *    reply arriving at the SMTP server with its threading headers (the poll is 60 s: IDLE is what brings the mail).
 */
import { Effect, Exit, Scope } from "effect"
import { makeDovecot } from "../packages/server/test/support/Dovecot.js"
import { makeSmtpCapture } from "../packages/server/test/support/SmtpCapture.js"
import { send, startServer } from "./support.js"

const MAILS = Number(process.argv[2] ?? 1000)
const scope = Effect.runSync(Scope.make())
const dovecot = await Effect.runPromise(Scope.extend(makeDovecot(1), scope))
const smtp = await Effect.runPromise(Scope.extend(makeSmtpCapture(), scope))
const server = await startServer({ EMAIL_POLL_INTERVAL_MS: "60000" })
const mailbox = dovecot.users[0]!

const bearer = { authorization: `Bearer ${server.demo.token}`, "content-type": "application/json" }
const json = async (method: string, url: string, body?: unknown) => {
  const r = await send({ method, url, headers: bearer, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
  if (r.status !== 200) throw new Error(`${method} ${url}: ${r.status} ${r.body}`)
  return JSON.parse(r.body).data
}
/** User messages stored on a provider kind's channels (the analytics totals, which count every provider). */
const stored = async (provider: string) =>
  (await json("GET", `${server.api}/api/user/analytics/messaging-stats?provider=${provider}`)).totals
    .user_messages as number
const waitFor = async (what: string, done: () => Promise<boolean> | boolean, timeoutMs = 600_000) => {
  const deadline = Date.now() + timeoutMs
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

const contact = "reader@contact.example"
const id = (n: number) => `<thread-${n}@contact.example>`
const mail = (n: number) => {
  const references = Array.from({ length: Math.min(n, 20) }, (_, i) => id(n - 1 - i)).reverse()
  return [
    `From: Reader <${contact}>`,
    `To: ${mailbox}`,
    `Subject: ${n === 0 ? "" : "Re: "}A long thread`,
    `Message-ID: ${id(n)}`,
    ...(n === 0 ? [] : [`In-Reply-To: ${id(n - 1)}`, `References: ${references.join(" ")}`]),
    `Date: ${new Date().toUTCString()}`,
    "",
    `Message ${n} of the thread.`,
    "",
    `On a day before, Support <${mailbox}> wrote:`,
    `> The answer to message ${n - 1}.`
  ].join("\r\n")
}

try {
  await json("PUT", `${server.api}/api/user/pipelines/${server.demo.pipeline_id}`, { reply_debounce_ms: 60_000 })
  for (let n = 0; n < MAILS; n++) await dovecot.append(mailbox, mail(n))

  // 1. import: the channel's first read
  const started = performance.now()
  await json("POST", `${server.api}/api/user/channels`, {
    kind: "email",
    name: "Bench mailbox",
    pipeline_id: server.demo.pipeline_id,
    credentials: {
      address: mailbox,
      imap: { host: dovecot.host, port: dovecot.port, secure: false, user: mailbox, password: dovecot.password },
      smtp: { host: smtp.host, port: smtp.port, secure: false, user: smtp.user, password: smtp.password }
    }
  })
  await waitFor("the thread stored", async () => (await stored("email")) >= MAILS)
  const importSeconds = (performance.now() - started) / 1000

  // the same number of messages from one web-chat visitor, one at a time
  const { client_id, client_secret } = server.demo.channel
  const basic = `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString("base64")}`
  const webStarted = performance.now()
  for (let n = 0; n < MAILS; n++) {
    const r = await send({
      method: "POST",
      url: `${server.receiver}/web-chat/message`,
      headers: { authorization: basic, "content-type": "application/json" },
      body: JSON.stringify({ contact_id: "bench-reader", message: `Message ${n} of the thread.` })
    })
    if (r.status !== 200) throw new Error(`web-chat: ${r.status} ${r.body}`)
  }
  const webSeconds = (performance.now() - webStarted) / 1000

  // 2. round trip: one more mail, the reply at the SMTP server
  await json("PUT", `${server.api}/api/user/pipelines/${server.demo.pipeline_id}`, { reply_debounce_ms: 0 })
  // the thread's backlog is answered first (one reply for the burst)
  await waitFor("the backlog's reply", () => smtp.mails.length >= 1)
  const trips: Array<number> = []
  for (let k = 0; k < 5; k++) {
    const n = MAILS + k
    const before = smtp.mails.length
    const t0 = performance.now()
    await dovecot.append(mailbox, mail(n))
    await waitFor(
      `the reply to mail ${n}`,
      () => smtp.mails.slice(before).some((m) => m.header("in-reply-to") === id(n)),
      120_000
    )
    trips.push(performance.now() - t0)
  }
  trips.sort((a, b) => a - b)

  console.log(`\nEmail channel, embedded database, one \`parley serve\` process; Dovecot and smtp-server local\n`)
  console.log("| scenario | messages | seconds | messages/s |\n|---|---|---|---|")
  console.log(
    `| email: a ${MAILS}-mail thread, first read of the mailbox | ${MAILS} | ${importSeconds.toFixed(1)} | ${
      (MAILS / importSeconds).toFixed(0)
    } |`
  )
  console.log(
    `| web chat: ${MAILS} messages of one visitor, one at a time (same run) | ${MAILS} | ${webSeconds.toFixed(1)} | ${
      (MAILS / webSeconds).toFixed(0)
    } |`
  )
  console.log(`\nratio email import / web chat: ${(webSeconds / importSeconds).toFixed(2)}`)
  console.log(
    `\nReply round trip (APPEND to the reply at the SMTP server), 5 mails: median ${trips[2]!.toFixed(0)} ms, best ${
      trips[0]!.toFixed(0)
    } ms, worst ${trips[4]!.toFixed(0)} ms`
  )
} finally {
  await server.stop()
  await server.database.stop()
  await Effect.runPromise(Scope.close(scope, Exit.void))
}
