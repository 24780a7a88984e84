/**
 * Inbound throughput of every webhook channel in one run, against the test support's fakes of each provider (real
 * HTTP, the providers' shapes and signatures): the web-chat receiver, WhatsApp, Messenger, Telegram and SMS
 * (Twilio). Run: npx tsx bench/channels.ts [seconds]   (default 10; embedded database, one `parley serve` process)
 *
 * Each row: one signed message a request from 500 returning contacts at concurrency 16 (each contact wrote once in
 * the warm-up, so the rows measure the returning contact's path: verify, parse, store once per provider id, tell
 * operators). The demo pipeline's reply_debounce_ms is 60 s, so no agent turn runs during the rows. The ratio of
 * each provider to the web receiver says what its verification and parsing cost beyond the one inbound path.
 */
import { Effect, Exit, Scope } from "effect"
import {
  API_VERSION as GRAPH_VERSION,
  fakeGraph,
  graphState,
  hubSignature,
  inbound,
  webhookFor
} from "../packages/server/test/support/FakeGraph.js"
import { fromContact, messaging, messengerState } from "../packages/server/test/support/FakeMessenger.js"
import { makeFakeTelegram } from "../packages/server/test/support/FakeTelegram.js"
import { makeFakeTwilio, twilioSignature } from "../packages/server/test/support/FakeTwilio.js"
import { load, type LoadResult, type RequestSpec, send, startServer } from "./support.js"

const seconds = Number(process.argv[2] ?? 10)
const CONTACTS = 500
const CONCURRENCY = 16
const APP_SECRET = "bench-app-secret"

const scope = Effect.runSync(Scope.make())
const graph = graphState("106540352242999", "EAAG-bench-token")
const page = messengerState("page", "104729915033499", `${APP_SECRET}-page`)
const graphUrl = await Effect.runPromise(Scope.extend(fakeGraph(graph), scope))
const telegram = await Effect.runPromise(Scope.extend(makeFakeTelegram(), scope))
const twilio = await Effect.runPromise(Scope.extend(makeFakeTwilio(), scope))
// Messenger's calls go to META_GRAPH_API_URL too: the rows make none (no agent turn runs), and a new contact's
// profile, asked once in the warm-up, is refused there and skipped, as when a page may not read profiles
const server = await startServer({
  META_GRAPH_API_URL: graphUrl,
  TELEGRAM_API_URL: telegram.url,
  TWILIO_API_URL: twilio.url
})
const bearer = { authorization: `Bearer ${server.demo.token}`, "content-type": "application/json" }
const json = async (method: string, url: string, body?: unknown) => {
  const r = await send({ method, url, headers: bearer, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
  if (r.status !== 200) throw new Error(`${method} ${url}: ${r.status} ${r.body}`)
  return JSON.parse(r.body).data
}
const channel = (kind: string, credentials: Record<string, unknown>) =>
  json("POST", `${server.api}/api/user/channels`, {
    kind,
    name: `Bench ${kind}`,
    pipeline_id: server.demo.pipeline_id,
    credentials
  }) as Promise<{ id: number; webhook_url: string }>

try {
  await json("PUT", `${server.api}/api/user/pipelines/${server.demo.pipeline_id}`, { reply_debounce_ms: 60_000 })
  const whatsapp = await channel("whatsapp", {
    phone_number_id: graph.phoneNumberId,
    access_token: graph.token,
    app_secret: APP_SECRET,
    api_version: GRAPH_VERSION
  })
  const messenger = await channel("messenger", {
    page_id: page.account,
    page_access_token: page.token,
    app_secret: page.appSecret
  })
  const bot = await channel("telegram", { bot_token: telegram.state.token })
  const sms = await channel("sms", {
    account_sid: twilio.state.accountSid,
    auth_token: twilio.state.authToken,
    from_number: twilio.state.numbers[0]
  })

  let counter = 0
  const kinds: Record<string, (i: number) => RequestSpec> = {
    "web-chat receiver": (() => {
      const { client_id, client_secret } = server.demo.channel
      const basic = `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString("base64")}`
      return (i: number) => ({
        method: "POST",
        url: `${server.receiver}/web-chat/message`,
        headers: { authorization: basic, "content-type": "application/json" },
        body: JSON.stringify({ contact_id: `visitor-${i % CONTACTS}`, message: `Message ${i}` })
      })
    })(),
    WhatsApp: (i) => {
      const waId = `49170${String(i % CONTACTS).padStart(7, "0")}`
      const body = JSON.stringify(webhookFor(graph, [{
        messages: [
          inbound(waId, `wamid.bench.${++counter}`, Date.now(), { type: "text", text: { body: `Message ${i}` } })
        ]
      }]))
      return {
        method: "POST",
        url: whatsapp.webhook_url,
        headers: { "content-type": "application/json", "x-hub-signature-256": hubSignature(APP_SECRET, body) },
        body
      }
    },
    Messenger: (i) => {
      const psid = String(6_100_000_000_000_000 + (i % CONTACTS))
      const body = JSON.stringify(messaging(page, [fromContact(page, psid, Date.now(), { text: `Message ${i}` })]))
      return {
        method: "POST",
        url: messenger.webhook_url,
        headers: { "content-type": "application/json", "x-hub-signature-256": hubSignature(page.appSecret, body) },
        body
      }
    },
    Telegram: (i) => {
      const user = { id: 700_000_000 + (i % CONTACTS), first_name: "Bench", last_name: String(i % CONTACTS) }
      return {
        method: "POST",
        url: bot.webhook_url,
        headers: {
          "content-type": "application/json",
          "x-telegram-bot-api-secret-token": telegram.state.webhook!.secret_token ?? ""
        },
        body: JSON.stringify(telegram.message(user, { text: `Message ${i}` }))
      }
    },
    SMS: (i) => {
      const params = new URLSearchParams(
        twilio.message(`+1415555${String(i % CONTACTS).padStart(4, "0")}`, { body: `Message ${i}` })
      )
      return {
        method: "POST",
        url: sms.webhook_url,
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          "x-twilio-signature": twilioSignature(twilio.state.authToken, sms.webhook_url, params)
        },
        body: params.toString()
      }
    }
  }

  // warm-up: each contact writes once on each channel (contact, conversation, opportunity), then 2 s of each
  for (const make of Object.values(kinds)) {
    for (let i = 0; i < CONTACTS; i += CONCURRENCY) {
      await Promise.all(Array.from({ length: Math.min(CONCURRENCY, CONTACTS - i) }, (_, j) => send(make(i + j))))
    }
    await load(CONCURRENCY, 2, make)
  }
  const results: Array<[string, LoadResult]> = []
  for (const [name, make] of Object.entries(kinds)) results.push([name, await load(CONCURRENCY, seconds, make)])
  const web = results[0]![1]

  console.log(`\nInbound by channel, embedded database, one \`parley serve\` process; ${seconds} s per row\n`)
  console.log(
    "| channel | concurrency | requests | req/s | p50 ms | p99 ms | errors | ratio to web |\n|---|---|---|---|---|---|---|---|"
  )
  for (const [name, r] of results) {
    console.log(
      `| ${name} | ${CONCURRENCY} | ${r.requests} | ${r.perSecond.toFixed(0)} | ${r.p50.toFixed(2)} | ${
        r.p99.toFixed(2)
      } | ${r.errors} | ${(r.perSecond / web.perSecond).toFixed(2)} |`
    )
  }
} finally {
  await server.stop()
  await server.database.stop()
  await Effect.runPromise(Scope.close(scope, Exit.void))
}
