/**
 * Reply throughput over a long run (issue 22: "throughput after 100,000 replies within 10% of the first
 * 10,000"): the same closed loop as bench/reply.ts at concurrency 16 (local model, reply_debounce_ms 0,
 * the webhook at a local receiver), run until `replies` replies have arrived, with replies per second,
 * server CPU per reply and statements per reply (`parley_db_statements_total`) for every block of
 * `block` replies. The database grows as it would: every reply adds a contact message, a reply and a
 * delivery-log row; conversations grow long (64 of them by default).
 * Run: npx tsx bench/reply-soak.ts [replies] [block] [conversations]   (defaults 100000 10000 64)
 * On Postgres: BENCH_PG=throwaway or DATABASE_URL=..., BENCH_TOPOLOGY (see support.ts).
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { statementCount } from "./statements.js"
import { cpuMs, describe, send, serverProcs, setup, startServer } from "./support.js"

const total = Number(process.argv[2] ?? 100_000)
const block = Number(process.argv[3] ?? 10_000)
const conversationCount = Number(process.argv[4] ?? 64)
const concurrency = 16

/** The channel's webhook: wakes whoever waits for that contact's reply. */
const waiting = new Map<string, () => void>()
const hook = Http.createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (c: Buffer) => chunks.push(c))
  req.on("end", () => {
    const { contact_id } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { contact_id: string }
    const wake = waiting.get(contact_id)
    waiting.delete(contact_id)
    wake?.()
    res.writeHead(200, { "content-type": "application/json" }).end("{}")
  })
})
hook.keepAliveTimeout = 60_000
await new Promise<void>((resolve) => hook.listen(0, "127.0.0.1", () => resolve()))

const s = await setup()
const server = await startServer({ OUTBOUND_ALLOW_PRIVATE: "true", LOCAL_MODEL_LATENCY_MS: "0" }, s)
try {
  const { client_id, client_secret } = server.demo.channel
  const basic = { authorization: `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString("base64")}`, "content-type": "application/json" }
  const bearer = { authorization: `Bearer ${server.demo.token}`, "content-type": "application/json" }
  for (const [path, body] of [
    [`/api/user/pipelines/${server.demo.pipeline_id}`, { reply_debounce_ms: 0 }],
    [`/api/user/channels/${server.demo.channel.id}`, { callback_url: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook` }]
  ] as const) {
    const r = await send({ method: "PUT", url: `${server.api}${path}`, headers: bearer, body: JSON.stringify(body) })
    if (r.status !== 200) throw new Error(`PUT ${path}: ${r.status} ${r.body}`)
  }
  const statements = () => statementCount(server)
  const exchange = async (contactId: string, text: string) => {
    const replied = new Promise<void>((resolve, reject) => {
      waiting.set(contactId, resolve)
      setTimeout(() => reject(new Error(`no reply for ${contactId} within 60 s`)), 60_000).unref()
    })
    const r = await send({ method: "POST", url: `${server.receiver}/web-chat/message`, headers: basic, body: JSON.stringify({ contact_id: contactId, message: text }) })
    if (r.status !== 200) throw new Error(`POST /web-chat/message: ${r.status} ${r.body}`)
    await replied
  }
  const contacts = Array.from({ length: conversationCount }, (_, i) => `bench-soak-${i}`)
  for (let i = 0; i < contacts.length; i += concurrency) await Promise.all(contacts.slice(i, i + concurrency).map((c) => exchange(c, "Hello")))

  const procs = serverProcs(server)
  const cpu = () => procs.reduce((sum, p) => sum + cpuMs(p.pid), 0)
  console.log(`\nReply soak on ${describe(s)}: ${total} replies at concurrency ${concurrency}, ${conversationCount} conversations, node ${process.version}\n`)
  console.log("| replies | replies/s | server CPU per reply | statements per reply |")
  console.log("|---|---|---|---|")
  let done = 0
  let mark = { at: Date.now(), cpu: cpu(), statements: await statements(), done: 0 }
  const rates: Array<number> = []
  await Promise.all(Array.from({ length: concurrency }, async (_, loop) => {
    const own = contacts.filter((_, i) => i % concurrency === loop)
    for (let n = 0; done < total; n++) {
      await exchange(own[n % own.length]!, `What does the annual plan cost? (${n})`)
      done++
      if (done % block === 0) {
        const now = { at: Date.now(), cpu: cpu(), statements: await statements(), done }
        const count = now.done - mark.done
        const rate = (count * 1000) / (now.at - mark.at)
        rates.push(rate)
        console.log(`| ${now.done} | ${rate.toFixed(1)} | ${((now.cpu - mark.cpu) / count).toFixed(1)} ms | ${((now.statements - mark.statements) / count).toFixed(1)} |`)
        mark = now
      }
    }
  }))
  if (rates.length >= 2) console.log(`\nlast block against the first: ${((100 * rates.at(-1)!) / rates[0]!).toFixed(0)}%`)
} finally {
  await server.stop()
  await s.database.stop()
  hook.close()
}
process.exit(0)
