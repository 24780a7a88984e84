/**
 * Issues 38 and 39, nothing lost on a provider channel: the real `parley serve` as a child process, against the
 * provider's local fake (Meta's Graph API for WhatsApp, the Send API for Messenger, the Bot API for Telegram, Twilio's
 * REST API for SMS, a real Dovecot and SMTP server for email). The agent's reply is stored and
 * its send is on its way to the provider (which takes it and never answers) when the server is killed hard
 * (SIGKILL). A second `parley serve` on the same database sends that reply, once more, and the delivery log holds
 * both attempts: the first marked interrupted, the second answered.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { call, childDatabase, crash, type Running, serve, stop, until } from "./support/ChildServer.js"
import { ok } from "./support/Contract.js"
import { makeDovecot } from "./support/Dovecot.js"
import { API_VERSION, fakeGraph, graphState, inbound, postWebhook, sends, webhookFor } from "./support/FakeGraph.js"
import { deliver, fakeMessenger, fromContact, messaging, messengerState, sentTo } from "./support/FakeMessenger.js"
import { makeFakeTelegram } from "./support/FakeTelegram.js"
import { makeFakeTwilio } from "./support/FakeTwilio.js"
import { makeSmtpCapture } from "./support/SmtpCapture.js"

/** One provider as the scenario drives it: its fake, the channel to create, a contact's message, what was sent. */
interface Provider {
  readonly env: Record<string, string>
  readonly channel: Record<string, unknown>
  /** The contact's thread (`external_chat_id`). */
  readonly thread: string
  readonly write: (webhookUrl: string) => Promise<number>
  /** The texts the provider was asked to send, in order. */
  readonly sent: () => ReadonlyArray<string>
  readonly hang: (on: boolean) => void
  readonly providerId: RegExp
}

const whatsapp = async (scope: Scope.Scope): Promise<Provider> => {
  const secret = "restart-app-secret"
  const graph = graphState("106540352242924", "EAAG-restart-token")
  const url = await Effect.runPromise(Scope.extend(fakeGraph(graph), scope))
  const waId = "4915198765432"
  return {
    env: { META_GRAPH_API_URL: url },
    channel: {
      kind: "whatsapp",
      credentials: {
        phone_number_id: graph.phoneNumberId,
        access_token: graph.token,
        app_secret: secret,
        api_version: API_VERSION
      }
    },
    thread: waId,
    write: (webhookUrl) =>
      Effect.runPromise(postWebhook(
        webhookUrl,
        secret,
        webhookFor(graph, [{
          messages: [
            inbound(waId, "wamid.restart.1", Date.now(), { type: "text", text: { body: "Can I host it myself?" } })
          ]
        }])
      )).then((r) => r.status),
    sent: () => sends(graph).map((r) => r.body.text.body as string),
    hang: (on) => (graph.hang = on),
    providerId: /^wamid\.fake/
  }
}

const telegram = async (scope: Scope.Scope): Promise<Provider> => {
  const fake = await Effect.runPromise(Scope.extend(makeFakeTelegram(), scope))
  const user = { id: 777000111, first_name: "Rita" }
  return {
    env: { TELEGRAM_API_URL: fake.url },
    channel: { kind: "telegram", credentials: { bot_token: fake.state.token } },
    thread: String(user.id),
    write: () => fake.post(fake.message(user, { text: "Can I host it myself?" })).then((r) => r.status),
    sent: () =>
      fake.state.requests.filter((r) => r.method === "sendMessage" && r.token === fake.state.token).map((r) =>
        String(r.body.text)
      ),
    hang: (on) => (fake.state.hang = on),
    providerId: new RegExp(`^${user.id}:\\d+$`)
  }
}

const messenger = async (scope: Scope.Scope): Promise<Provider> => {
  const page = messengerState("page", "104729915033777", "restart-page-secret")
  const url = await Effect.runPromise(Scope.extend(fakeMessenger([page]), scope))
  const psid = "6100000000777001"
  return {
    env: { META_GRAPH_API_URL: url },
    channel: {
      kind: "messenger",
      credentials: { page_id: page.account, page_access_token: page.token, app_secret: page.appSecret }
    },
    thread: psid,
    write: (webhookUrl) =>
      Effect.runPromise(
        deliver(
          webhookUrl,
          page,
          messaging(page, [fromContact(page, psid, Date.now(), { text: "Can I host it myself?" })])
        )
      ).then((r) => r.status),
    sent: () => sentTo(page, psid).map((m) => String(m.text)),
    hang: (on) => (page.hang = on),
    providerId: /^m_/
  }
}

const sms = async (scope: Scope.Scope): Promise<Provider> => {
  const fake = await Effect.runPromise(Scope.extend(makeFakeTwilio(), scope))
  const phone = "+4915198760000"
  return {
    env: { TWILIO_API_URL: fake.url },
    channel: {
      kind: "sms",
      credentials: {
        account_sid: fake.state.accountSid,
        auth_token: fake.state.authToken,
        from_number: fake.state.numbers[0]
      }
    },
    thread: phone,
    write: (webhookUrl) =>
      fake.post(webhookUrl, fake.message(phone, { body: "Can I host it myself?" })).then((r) => r.status),
    sent: () =>
      fake.state.requests.filter((r) => r.method === "POST" && r.path.endsWith("/Messages.json")).map((r) =>
        r.form.get("Body") ?? ""
      ),
    hang: (on) => (fake.state.hang = on),
    providerId: /^SM[0-9a-f]{32}$/
  }
}

const email = async (scope: Scope.Scope): Promise<Provider> => {
  const dovecot = await Effect.runPromise(Scope.extend(makeDovecot(1), scope))
  const smtp = await Effect.runPromise(Scope.extend(makeSmtpCapture(), scope))
  const mailbox = dovecot.users[0]!
  const contact = "rita@contact.example"
  const thread = "<restart-1@contact.example>"
  return {
    env: { EMAIL_POLL_INTERVAL_MS: "500" },
    channel: {
      kind: "email",
      credentials: {
        address: mailbox,
        imap: { host: dovecot.host, port: dovecot.port, secure: false, user: mailbox, password: dovecot.password },
        smtp: { host: smtp.host, port: smtp.port, secure: false, user: smtp.user, password: smtp.password }
      }
    },
    thread,
    write: () =>
      dovecot.append(
        mailbox,
        [
          `From: Rita <${contact}>`,
          `To: ${mailbox}`,
          "Subject: Hosting",
          `Message-ID: ${thread}`,
          "",
          "Can I host it myself?"
        ]
          .join("\r\n")
      ).then(() => 200),
    sent: () => smtp.mails.filter((m) => m.to.includes(contact)).map((m) => (m.parsed.text ?? "").trim()),
    hang: (on) => (smtp.hang = on),
    providerId: /^<[^@]+@.+>$/
  }
}

const killedMidSend = (make: (scope: Scope.Scope) => Promise<Provider>) => async () => {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-channel-restart-"))
  const database = await childDatabase(dataDir)
  const scope = Effect.runSync(Scope.make())
  const provider = await make(scope)
  const env = { ...database.env, ...provider.env, ENGINE_SWEEP_INTERVAL_MS: "2000" }
  let first: Running | undefined
  let second: Running | undefined
  try {
    first = await serve(dataDir, env)
    const demo = JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8")) as {
      token: string
      pipeline_id: number
    }
    const { token } = demo
    const pipeline = await call(`${first.api}/api/user/pipelines/${demo.pipeline_id}`, {
      method: "PUT",
      token,
      body: JSON.stringify({ reply_debounce_ms: 0 })
    })
    expect(pipeline.status).toBe(200)
    const created = await call(`${first.api}/api/user/channels`, {
      method: "POST",
      token,
      body: JSON.stringify({ ...provider.channel, pipeline_id: demo.pipeline_id })
    })
    expect(created.status).toBe(200)
    const channel = ok(created, "channels.create") as unknown as { webhook_url: string }

    // the provider takes the send and never answers: the reply is stored, its attempt logged, in flight
    provider.hang(true)
    expect(await provider.write(channel.webhook_url)).toBe(200)
    await until("the reply's send at the provider", () => provider.sent().length >= 1 ? true : undefined, 20_000)
    const inFlight = provider.sent()[0]!
    await crash(first, dataDir)
    first = undefined

    provider.hang(false)
    second = await serve(dataDir, env)
    await until("the reply sent again after the restart", () => provider.sent().length >= 2 ? true : undefined, 30_000)
    expect(provider.sent()).toEqual([inFlight, inFlight])

    await until("the reply recorded as sent", async () => {
      const rows = await database.query<{ status: string }>(
        "select status from messages where role = 'assistant' and external_chat_id = $1",
        [provider.thread]
      )
      return rows[0]?.status === "sent_to_user" ? true : undefined
    }, 20_000)
    await stop(second)
    second = undefined
    const replies = await database.query<{ id: string; message: string; external_message_id: string }>(
      "select id, message, external_message_id from messages where role = 'assistant' and external_chat_id = $1",
      [provider.thread]
    )
    expect(replies).toHaveLength(1)
    expect(replies[0]!.message).toBe(inFlight)
    expect(replies[0]!.external_message_id).toMatch(provider.providerId)
    const attempts = await database.query<{ status_code: number | null; error: string | null }>(
      "select status_code, error from webhook_deliveries where message_id = $1 order by id",
      [replies[0]!.id]
    )
    // the provider's success: 200, Twilio's 201 Created, or an SMTP server's 250
    const success = (code: number | null) => code === 201 || code === 250 ? 200 : code
    expect(attempts.map((a) => ({ ...a, status_code: success(a.status_code) }))).toEqual([
      { status_code: null, error: expect.stringMatching(/^Interrupted/) },
      { status_code: 200, error: null }
    ])
  } finally {
    await stop(first)
    await stop(second)
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await database.drop()
    Fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

describe("a provider channel's reply across a process restart", () => {
  it(
    "WhatsApp: killed between storing the reply and the Graph API's answer, the reply is sent after the restart",
    killedMidSend(whatsapp),
    180_000
  )
  it(
    "Telegram: killed between storing the reply and the Bot API's answer, the reply is sent after the restart",
    killedMidSend(telegram),
    180_000
  )
  it(
    "Messenger: killed between storing the reply and the Send API's answer, the reply is sent after the restart",
    killedMidSend(messenger),
    180_000
  )
  it(
    "SMS: killed between storing the reply and Twilio's answer, the reply is sent after the restart",
    killedMidSend(sms),
    180_000
  )
  it(
    "email: killed between storing the reply and the SMTP server's answer, the reply is sent after the restart",
    killedMidSend(email),
    180_000
  )
})
