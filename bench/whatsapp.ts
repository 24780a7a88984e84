/**
 * WhatsApp channel throughput, against the fake Graph API of the test support (real HTTP, Meta's shapes).
 * Run: npx tsx bench/whatsapp.ts [seconds] [replies]   (defaults 10 and 2000; embedded database, one process)
 *
 * 1. Inbound: signed single-message webhooks from 500 returning contacts at concurrency 16, and in the same run the
 *    web-chat receiver with 500 returning visitors at concurrency 16: messages a second, p50 and p99, and the
 *    ratio. The demo pipeline's reply_debounce_ms is set to 60 s first, so no agent turn runs during the rows
 *    (as in bench/receiver.ts).
 * 2. Outbound: `replies` operator messages to the 500 WhatsApp contacts, 32 at a time, while the fake answers
 *    130429 (Meta's throughput limit) to one call in ten: every message must reach the fake exactly once, and no
 *    second may see more sends than the channel's rate (80 a second, the default).
 */
import { Effect, Exit, Scope } from "effect"
import {
  API_VERSION,
  fakeGraph,
  graphState,
  hubSignature,
  inbound,
  webhookFor
} from "../packages/server/test/support/FakeGraph.js"
import { load, type LoadResult, send, startServer } from "./support.js"

const seconds = Number(process.argv[2] ?? 10)
const replies = Number(process.argv[3] ?? 2000)
const RATE = 80
const BURST_CONCURRENCY = 32
const APP_SECRET = "bench-app-secret"

const graph = graphState("106540352242999", "EAAG-bench-token")
const scope = Effect.runSync(Scope.make())
const graphUrl = await Effect.runPromise(Scope.extend(fakeGraph(graph), scope))
const server = await startServer({ META_GRAPH_API_URL: graphUrl, WEBHOOK_RETRY_DELAY_MS: "500" })

const bearer = { authorization: `Bearer ${server.demo.token}`, "content-type": "application/json" }
/**
 * A keep-alive socket the server closed as it was reused answers ECONNRESET before the request is read: sent again
 * once (a retried POST that had been stored would show as a duplicate below).
 */
let reposted = 0
const json = async (method: string, url: string, body?: unknown) => {
  const spec = { method, url, headers: bearer, ...(body === undefined ? {} : { body: JSON.stringify(body) }) }
  const r = await send(spec).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== "ECONNRESET") throw e
    reposted++
    return send(spec)
  })
  if (r.status !== 200) throw new Error(`${method} ${url}: ${r.status} ${r.body}`)
  return JSON.parse(r.body).data
}

const line = (name: string, r: LoadResult) =>
  `| ${name} | 16 | ${r.requests} | ${r.perSecond.toFixed(0)} | ${r.p50.toFixed(2)} | ${
    r.p99.toFixed(2)
  } | ${r.errors} |`

try {
  await json("PUT", `${server.api}/api/user/pipelines/${server.demo.pipeline_id}`, { reply_debounce_ms: 60_000 })
  const channel = await json("POST", `${server.api}/api/user/channels`, {
    kind: "whatsapp",
    name: "Bench",
    pipeline_id: server.demo.pipeline_id,
    credentials: {
      phone_number_id: graph.phoneNumberId,
      access_token: graph.token,
      app_secret: APP_SECRET,
      api_version: API_VERSION
    }
  })
  const waId = (i: number) => `49170${String(i % 500).padStart(7, "0")}`
  let counter = 0
  const webhook = (i: number) => {
    const body = JSON.stringify(webhookFor(graph, [{
      messages: [
        inbound(waId(i), `wamid.bench.${++counter}`, Date.now(), { type: "text", text: { body: `Message ${i}` } })
      ]
    }]))
    return {
      method: "POST",
      url: channel.webhook_url,
      headers: { "content-type": "application/json", "x-hub-signature-256": hubSignature(APP_SECRET, body) },
      body
    }
  }
  const { client_id, client_secret } = server.demo.channel
  const basic = `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString("base64")}`
  const web = (i: number) => ({
    method: "POST",
    url: `${server.receiver}/web-chat/message`,
    headers: { authorization: basic, "content-type": "application/json" },
    body: JSON.stringify({ contact_id: `visitor-${i % 500}`, message: `Message ${i}` })
  })
  // warm-up: each contact and visitor writes once (contact, conversation, opportunity), then 2 s of each
  for (let i = 0; i < 500; i += 16) {
    await Promise.all(Array.from({ length: Math.min(16, 500 - i) }, (_, j) => send(webhook(i + j))))
    await Promise.all(Array.from({ length: Math.min(16, 500 - i) }, (_, j) => send(web(i + j))))
  }
  await load(16, 2, webhook)
  await load(16, 2, web)
  const whatsapp = await load(16, seconds, webhook)
  const receiver = await load(16, seconds, web)

  // outbound: the conversations of the 500 WhatsApp contacts
  const conversations: Array<number> = []
  for (let page = 1; conversations.length < 500 && page <= 20; page++) {
    const opportunities = await json("GET", `${server.api}/api/user/opportunities?per_page=100&page=${page}`)
    for (const o of opportunities.data ?? opportunities) {
      if (o.source === "whatsapp") conversations.push(...o.conversations.map((c: { id: number }) => c.id))
    }
  }
  // the warm-up's contact messages are not answered during the burst (their 60 s debounce would end inside it)
  await json("PUT", `${server.api}/api/user/pipelines/${server.demo.pipeline_id}`, { status: "inactive" })
  graph.rateLimitEvery = Number(process.env.BENCH_RATE_LIMIT_EVERY ?? 10)
  const acceptedBefore = graph.accepted.length
  const started = performance.now()
  let next = 0
  const messageIds = new Map<string, string>()
  await Promise.all(Array.from({ length: BURST_CONCURRENCY }, async () => {
    while (next < replies) {
      const i = next++
      const stored = await json("POST", `${server.api}/api/user/${conversations[i % conversations.length]}/messages`, {
        message: `Reply ${i}`
      })
      messageIds.set(`Reply ${i}`, stored.id)
    }
  }))
  const answeredIn = (performance.now() - started) / 1000
  const deadline = Date.now() + 300_000
  const delivered = () =>
    new Set(
      graph.accepted.slice(acceptedBefore).map((a) => a.body.text?.body).filter((t) => t?.startsWith("Reply "))
    ).size
  while (delivered() < replies && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200))
  const sent = graph.accepted.slice(acceptedBefore).filter((a) => a.body.text?.body?.startsWith("Reply "))
  const texts = sent.map((a) => a.body.text?.body as string)
  const duplicates = texts.length - new Set(texts).size
  const calls = graph.requests.filter((r) => r.path.endsWith("/messages") && r.body?.text?.body?.startsWith("Reply "))
  const rejected = calls.length - sent.length
  // the most calls (accepted or not) in any one second
  const times = calls.map((c) => c.at).sort((a, b) => a - b)
  let busiest = 0
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[i]! - times[j]! >= 1000) j++
    busiest = Math.max(busiest, i - j + 1)
  }
  const span = (times[times.length - 1]! - times[0]!) / 1000

  console.log(`\nWhatsApp channel, embedded database, one \`parley serve\` process; ${seconds} s per row\n`)
  console.log("| scenario | concurrency | requests | req/s | p50 ms | p99 ms | errors |\n|---|---|---|---|---|---|---|")
  console.log(line("WhatsApp webhook, signed, one message", whatsapp))
  console.log(line("web-chat receiver (same run)", receiver))
  console.log(`\nratio WhatsApp / web receiver: ${(whatsapp.perSecond / receiver.perSecond).toFixed(2)}`)
  console.log(
    `\nOutbound: ${replies} operator messages, ${BURST_CONCURRENCY} at a time, 1 call in 10 answered 130429; rate ${RATE}/s\n\n` +
      "| delivered | duplicates | 130429 answers | all answered in | last delivery after | calls/s over the burst | busiest second |\n" +
      "|---|---|---|---|---|---|---|\n" +
      `| ${new Set(texts).size}/${replies} | ${duplicates} | ${rejected} | ${answeredIn.toFixed(1)} s | ${
        ((times[times.length - 1]! - times[0]!) / 1000).toFixed(1)
      } s | ${(calls.length / span).toFixed(1)} | ${busiest} calls |`
  )
  // a POST sent again after ECONNRESET may have been stored the first time: its text then shows twice above
  console.log(`\nPOSTs sent again after ECONNRESET: ${reposted}`)
  // each message sent twice: its delivery log, to say why
  const seen = new Set<string>()
  for (const text of texts) {
    if (!seen.has(text)) {
      seen.add(text)
      continue
    }
    const log = await json(
      "GET",
      `${server.api}/api/user/channels/${channel.id}/deliveries?message_id=${messageIds.get(text)}&limit=20`
    )
    console.log(`\n${text} (${messageIds.get(text)}) was accepted twice; its attempts:`)
    for (const a of log) {
      console.log(
        `  run ${a.run} attempt ${a.attempt} ${a.created_at} ${a.status_code} ${a.duration_ms} ms ${a.error ?? ""}`
      )
    }
    console.log(
      `  accepted at ${sent.filter((a) => a.body.text?.body === text).map((a) => a.at - sent[0]!.at).join(", ")} ms`
    )
  }
} finally {
  await server.stop()
  await server.database.stop()
  await Effect.runPromise(Scope.close(scope, Exit.void))
}
