/**
 * Reply throughput over a long run (issue 22: "throughput after 100,000 replies within 10% of the first
 * 10,000"): the same closed loop as bench/reply.ts at concurrency 16 (local model, reply_debounce_ms 0,
 * the webhook at a local receiver), run until `replies` replies have arrived, with replies per second,
 * server CPU per reply and statements per reply (`parley_db_statements_total`) for every block of
 * `block` replies. The database grows as it would: every reply adds a contact message, a reply and a
 * delivery-log row; conversations grow long (64 of them by default).
 * Run: npx tsx bench/reply-soak.ts [replies] [block] [conversations] [minutes]   (defaults 100000 10000 64, no time
 * limit)
 * With `minutes` it stops at that time whatever the count (issue 35's 30-minute soak: `... 100000000 10000 64 30`).
 * Each block also reports the server's RSS, sampled every 500 ms: its low point in the block (after a
 * collection; what stays held) and its high point. Low points that keep rising after warm-up mean a leak.
 * To tell where memory is held, every 2 s the servers' /metrics: the V8 heap's low point in the block
 * (`nodejs_heap_used_bytes`: JavaScript objects), and at the block's end the memory outside it
 * (`nodejs_external_memory_bytes`: buffers and the embedded database's WebAssembly memory) and the
 * database's size on disk.
 * On Postgres: BENCH_PG=throwaway or DATABASE_URL=..., BENCH_TOPOLOGY (see support.ts).
 */
import * as Fs from "node:fs"
import { replyExchange, replyServerEnv, startReplyHook } from "./replies.js"
import { gauge, scrape, statementCount } from "./statements.js"
import { cpuMs, describe, serverProcs, setup, startServer } from "./support.js"

const total = Number(process.argv[2] ?? 100_000)
const block = Number(process.argv[3] ?? 10_000)
const conversationCount = Number(process.argv[4] ?? 64)
const minutes = process.argv[5] === undefined ? Infinity : Number(process.argv[5])
const rssMiB = (pid: number) => {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(Fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024
  } catch {
    return 0
  }
}
const concurrency = 16

const hook = await startReplyHook(() => server.demo.channel.client_secret)
const s = await setup()
const server = await startServer(replyServerEnv, s)
try {
  const statements = () => statementCount(server)
  const replied = await replyExchange(server, hook, 60_000)
  const exchange = (contactId: string, text: string) => replied(contactId, text).then(() => undefined)
  const contacts = Array.from({ length: conversationCount }, (_, i) => `bench-soak-${i}`)
  for (let i = 0; i < contacts.length; i += concurrency) {
    await Promise.all(contacts.slice(i, i + concurrency).map((c) => exchange(c, "Hello")))
  }

  const procs = serverProcs(server)
  const cpu = () => procs.reduce((sum, p) => sum + cpuMs(p.pid), 0)
  console.log(
    `\nReply soak on ${
      describe(s)
    }: ${total} replies at concurrency ${concurrency}, ${conversationCount} conversations, node ${process.version}\n`
  )
  console.log(
    "| replies | minutes | replies/s | server CPU per reply | statements per reply | RSS low | RSS high | heap low | external | database |"
  )
  console.log("|---|---|---|---|---|---|---|---|---|---|")
  const started = Date.now()
  const stopAt = started + minutes * 60_000
  let rss = { low: Infinity, high: 0, heapLow: Infinity }
  const sampler = setInterval(() => {
    const now = procs.reduce((sum, p) => sum + rssMiB(p.pid), 0)
    rss = { ...rss, low: Math.min(rss.low, now), high: Math.max(rss.high, now) }
  }, 500)
  const scrapeAll = () => Promise.all(server.processes.map((p) => scrape(p.metrics!)))
  const sum = (bodies: ReadonlyArray<string>, name: string) =>
    bodies.reduce((n, body) => n + gauge(body, name), 0) / 2 ** 20
  const heapSampler = setInterval(() => {
    scrapeAll().then((bodies) => {
      rss = { ...rss, heapLow: Math.min(rss.heapLow, sum(bodies, "nodejs_heap_used_bytes")) }
    }, () => undefined)
  }, 2_000)
  let done = 0
  let mark = { at: Date.now(), cpu: cpu(), statements: await statements(), done: 0 }
  const rates: Array<number> = []
  await Promise.all(Array.from({ length: concurrency }, async (_, loop) => {
    const own = contacts.filter((_, i) => i % concurrency === loop)
    for (let n = 0; done < total && Date.now() < stopAt; n++) {
      await exchange(own[n % own.length]!, `What does the annual plan cost? (${n})`)
      done++
      if (done % block === 0) {
        const now = { at: Date.now(), cpu: cpu(), statements: await statements(), done }
        const count = now.done - mark.done
        const rate = (count * 1000) / (now.at - mark.at)
        rates.push(rate)
        const bodies = await scrapeAll()
        const database = gauge(bodies[0]!, "parley_database_size_bytes") / 2 ** 20
        console.log(
          `| ${now.done} | ${((now.at - started) / 60_000).toFixed(1)} | ${rate.toFixed(1)} | ${
            ((now.cpu - mark.cpu) / count).toFixed(1)
          } ms | ` +
            `${((now.statements - mark.statements) / count).toFixed(1)} | ${rss.low.toFixed(0)} MiB | ${
              rss.high.toFixed(0)
            } MiB | ` +
            `${rss.heapLow.toFixed(0)} MiB | ${sum(bodies, "nodejs_external_memory_bytes").toFixed(0)} MiB | ${
              database.toFixed(0)
            } MiB |`
        )
        mark = now
        rss = { low: Infinity, high: 0, heapLow: Infinity }
      }
    }
  }))
  clearInterval(sampler)
  clearInterval(heapSampler)
  if (rates.length >= 2) {
    console.log(`\nlast block against the first: ${((100 * rates.at(-1)!) / rates[0]!).toFixed(0)}%`)
  }
} finally {
  await server.stop()
  await s.database.stop()
  hook.close()
}
process.exit(0)
