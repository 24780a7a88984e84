/**
 * The agent's reply end to end: from a contact's `POST /web-chat/message` to the signed reply webhook
 * arriving at the channel's receiver, with Parley's local model (no latency) and `reply_debounce_ms` 0.
 * Run: pnpm bench:reply   (or: npx tsx bench/reply.ts [seconds] [conversations])
 * On Postgres: BENCH_PG=throwaway (a cluster for this run) or DATABASE_URL=… (an empty database), and
 * BENCH_TOPOLOGY=single|split, BENCH_WORKERS=n (see support.ts, postgres.ts).
 *
 * Closed loop: each of `concurrency` loops owns its own conversations (distinct contact_ids, so two
 * messages of one conversation are never in flight together), sends a message, waits for its reply at
 * the webhook, and goes on with its next conversation. Every webhook's signature is checked. The same two rows
 * then run on an `openai_compatible` model (issue 40): a provider added over REST pointing at a local fake Chat
 * Completions server (in this process, so its CPU is not the server's) answering after a fixed
 * BENCH_MODEL_LATENCY_MS (default 20), so the provider path's cost per reply stands beside the local model's.
 * For a split
 * of the time, the stored timestamps of the contact message and of the reply are read back afterwards:
 * POST → message stored (receiver), stored → reply stored (hand-over, entity, turn), reply stored →
 * webhook received (delivery workflow and HTTP). "Server CPU per reply" is the user + system time of every
 * server process over the row, per reply (by role, and Postgres's when it runs here).
 */
import { startFakeModelServer } from "../packages/server/test/support/FakeModelServer.js"
import { type Exchange as Sample, replyExchange, replyServerEnv, startReplyHook } from "./replies.js"
import { statementCount } from "./statements.js"
import {
  type Costs,
  costsHeader,
  costsRow,
  measure,
  send,
  serverProcs,
  setup,
  startServer,
  statementsTable
} from "./support.js"

const seconds = Number(process.argv[2] ?? 10)
const conversationCount = Number(process.argv[3] ?? 64)
const modelLatencyMs = Number(process.env.BENCH_MODEL_LATENCY_MS ?? 20)

const quantile = (sorted: ReadonlyArray<number>, q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
const sortedBy = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)

let secret = ""
const receiver = await startReplyHook(() => secret)
const s = await setup()
const server = await startServer(replyServerEnv, s).catch(async (e) => {
  receiver.close()
  await s.database.stop()
  throw e
})
try {
  const { client_id, client_secret } = server.demo.channel
  secret = client_secret
  const basic = {
    authorization: `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString("base64")}`,
    "content-type": "application/json"
  }
  // the demo pipeline answers at once, through the demo web channel, to our receiver (the demo workspace has
  // credits, and the local models cost nothing)
  const exchange = await replyExchange(server, receiver)

  const contacts = Array.from({ length: conversationCount }, (_, i) => `bench-reply-${i}`)
  // warm-up: every conversation exists (contact, conversation, opportunity) and has had a reply
  for (let i = 0; i < contacts.length; i += 16) {
    await Promise.all(contacts.slice(i, i + 16).map((c) => exchange(c, "Hello")))
  }

  const run = async (concurrency: number) => {
    const samples: Array<Sample> = []
    const deadline = Date.now() + seconds * 1000
    const started = Date.now()
    await Promise.all(Array.from({ length: concurrency }, async (_, loop) => {
      const own = contacts.filter((_, i) => i % concurrency === loop)
      if (own.length === 0) return
      for (let n = 0; Date.now() < deadline; n++) {
        samples.push(await exchange(own[n % own.length]!, `What does the annual plan cost? (${n})`))
      }
    }))
    const elapsed = (Date.now() - started) / 1000
    return { concurrency, samples, elapsed, requests: samples.length }
  }

  /** Stored timestamps of the contact messages and their replies (newest first, one page per conversation). */
  const storedTimes = async (samples: ReadonlyArray<Sample>) => {
    const times = new Map<string, number>()
    for (const contactId of new Set(samples.map((s) => s.contactId))) {
      for (let page = 1;; page++) {
        const r = await send({
          method: "GET",
          url: `${server.api}/api/user/messages/webchat?contact_id=${contactId}&per_page=100&page=${page}`,
          headers: basic
        })
        const data = JSON.parse(r.body).data as { data: Array<{ id: string; created_at: string }>; last_page: number }
        for (const m of data.data) times.set(m.id, Date.parse(m.created_at))
        if (page >= data.last_page) break
      }
    }
    return times
  }

  const results: Array<
    Awaited<ReturnType<typeof run>> & { model: string; costs: Costs; statements: number }
  > = []
  // BENCH_PROFILE_LOAD=true with BENCH_NODE_ARGS="--import ./bench/cpu-profile.mjs": each row profiled
  const profile = () =>
    process.env.BENCH_PROFILE_LOAD === "true" && server.processes.forEach((p) => process.kill(p.pid, "SIGUSR2"))
  const rows = async (model: string) => {
    for (const concurrency of [1, 16]) {
      const before = await statementCount(server)
      profile()
      const { result, costs } = await measure(s.database, serverProcs(server), () => run(concurrency))
      profile()
      results.push({ ...result, model, costs, statements: (await statementCount(server)) - before })
    }
  }
  await rows("local")

  // the same rows through a provider: Chat Completions at a fake with a fixed latency
  const fake = await startFakeModelServer({
    apiKey: "sk-bench",
    models: ["bench-llama"],
    latencyMs: modelLatencyMs,
    text: "The annual plan is 990 euros per year."
  })
  const bearer = { authorization: `Bearer ${server.demo.token}`, "content-type": "application/json" }
  const rest = async (method: string, path: string, body: unknown) => {
    const r = await send({ method, url: `${server.api}${path}`, headers: bearer, body: JSON.stringify(body) })
    if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${r.body}`)
    return JSON.parse(r.body).data as { id: number }
  }
  const provider = await rest("POST", "/api/user/ai-providers", {
    kind: "openai_compatible",
    name: "Bench server",
    base_url: fake.openAiUrl,
    api_key: "sk-bench"
  })
  const model = await rest("POST", "/api/user/ai-models", { ai_provider_id: provider.id, model: "bench-llama" })
  await rest("PUT", `/api/user/pipelines/${server.demo.pipeline_id}`, { ai_model_id: model.id })
  // the recorded requests are the fake's test aid: dropped as the rows go, to keep this process light
  const trim = setInterval(() => fake.requests.splice(0), 1000)
  for (const c of contacts) await exchange(c, "Hello")
  await rows(`openai_compatible (${modelLatencyMs} ms)`)
  clearInterval(trim)
  await fake.close()

  console.log(
    `\nReply end to end on ${server.label}; reply_debounce_ms 0, ${seconds} s per row, ${conversationCount} conversations, node ${process.version}\n`
  )
  console.log(
    "| model | concurrency | replies | replies/s | p50 ms | p99 ms | max ms | server CPU per reply | statements per reply |"
  )
  console.log("|---|---|---|---|---|---|---|---|---|")
  for (const { concurrency, costs, elapsed, model, samples, statements } of results) {
    const total = sortedBy(samples.map((s) => s.webhookAt - s.sentAt))
    const cpu = costs.cpu.reduce((sum, [, v]) => sum + v, 0)
    console.log(
      `| ${model} | ${concurrency} | ${samples.length} | ${(samples.length / elapsed).toFixed(1)} | ${
        quantile(total, 0.5)
      } | ${quantile(total, 0.99)} | ${total.at(-1)} | ${cpu.toFixed(1)} ms${
        costs.postgresCpu === undefined ? "" : ` (+ Postgres ${costs.postgresCpu.toFixed(1)} ms)`
      } | ${(statements / samples.length).toFixed(1)} |`
    )
  }
  console.log("\nWhere the time goes (p50 / p99 ms of each leg; stored timestamps from the server, same clock):\n")
  console.log(
    "| model | concurrency | POST → 200 | POST → message stored | stored → reply stored | reply stored → webhook received |"
  )
  console.log("|---|---|---|---|---|---|")
  for (const { concurrency, model, samples } of results) {
    const times = await storedTimes(samples)
    const legs = samples.flatMap((s) => {
      const inbound = times.get(s.inboundId)
      const reply = times.get(s.replyId)
      return inbound === undefined || reply === undefined
        ? []
        : [[s.answeredAt - s.sentAt, inbound - s.sentAt, reply - inbound, s.webhookAt - reply]]
    })
    const cell = (i: number) => {
      const v = sortedBy(legs.map((l) => l[i]!))
      return `${quantile(v, 0.5)} / ${quantile(v, 0.99)}`
    }
    console.log(`| ${model} | ${concurrency} | ${cell(0)} | ${cell(1)} | ${cell(2)} | ${cell(3)} |`)
  }
  console.log("\nWhere the time goes (per reply):\n")
  console.log(costsHeader)
  for (const { concurrency, costs, model } of results) {
    console.log(costsRow(`reply, ${model}, concurrency ${concurrency}`, costs))
  }
  for (const { concurrency, costs, model } of results) {
    console.log(statementsTable(`reply, ${model}, concurrency ${concurrency}`, costs))
  }
  console.log(
    `\nwebhooks: ${receiver.stats.received} received, ${receiver.stats.badSignatures} bad signatures, ${receiver.stats.unexpected} unexpected`
  )
} finally {
  await server.stop()
  receiver.close()
  await s.database.stop()
}
process.exit(0)
