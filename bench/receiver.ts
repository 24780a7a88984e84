/**
 * The web-chat receiver and the socket fan-out, and the bare baseline of an inbound message (node:http and
 * the receiver's 4-statement transaction, `bare.ts`) on the same database in the same run.
 * Run: pnpm bench:receiver   (or: npx tsx bench/receiver.ts [seconds] [sockets]; 0 sockets skips the fan-out)
 * On Postgres: BENCH_PG=throwaway (a cluster for this run) or DATABASE_URL=… (an empty database), and
 * BENCH_TOPOLOGY=single|split, BENCH_WORKERS=n (see support.ts, postgres.ts).
 *
 * 1. Fan-out (first, on a fresh server, so memory is not muddied by earlier load): N socket.io clients
 *    join one conversation; the server's resident memory per socket, and the time from an operator
 *    message's POST to `new_message` on every socket (p50, p99).
 * 2. Inbound messages per second and latency at concurrency 1, 16 and 64 (each request is stored with
 *    its contact, conversation and opportunity in one transaction before the 200, then handed to the
 *    conversation's entity). The demo pipeline's reply_debounce_ms is set to its maximum, 60 s, first: every
 *    visitor writes again well within a minute, so no agent turn runs during the rows (replies are
 *    bench/reply.ts's figure). With the default 3 s, whether turns run depends on the rate itself (a
 *    visitor quiet for 3 s gets a turn), and a slower server does more work per message.
 * 3. The same rows bare (see bare.ts), after the server has stopped; on Postgres also concurrency 16 with
 *    the bare's statements prepared.
 */
import * as Fs from "node:fs"
import { io, type Socket } from "socket.io-client"
import { pg } from "./postgres.js"
import {
  costsHeader,
  costsRow,
  header,
  load,
  type LoadResult,
  measure,
  row,
  send,
  serverProcs,
  setup,
  sideBySide,
  sideBySideHeader,
  startBare,
  startServer,
  statementsTable
} from "./support.js"

const seconds = Number(process.argv[2] ?? 10)
const socketCount = Number(process.argv[3] ?? 5000)

const rssKiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(Fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0)

const s = await setup()
const server = await startServer({}, s)
const results: Array<readonly [number, Awaited<ReturnType<typeof measure<LoadResult>>>]> = []
interface Answer {
  readonly sentAt: number
  readonly answeredAt: number
  readonly id: string
}
const legs: Array<readonly [number, ReadonlyArray<Answer>]> = []
const fanOut: Array<string> = []
try {
  const { client_id, client_secret } = server.demo.channel
  const basic = {
    authorization: `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString("base64")}`,
    "content-type": "application/json"
  }
  const inbound = (i: number) => ({
    method: "POST",
    url: `${server.receiver}/web-chat/message`,
    headers: basic,
    // 500 visitors: most messages join an existing conversation, as in production
    body: JSON.stringify({ contact_id: `visitor-${i % 500}`, message: `Message ${i}` })
  })
  // no agent turns during the rows (see the top of this file)
  const tuned = await send({
    method: "PUT",
    url: `${server.api}/api/user/pipelines/${server.demo.pipeline_id}`,
    headers: { authorization: `Bearer ${server.demo.token}`, "content-type": "application/json" },
    body: JSON.stringify({ reply_debounce_ms: 60_000 })
  })
  if (tuned.status !== 200) throw new Error(`PUT pipeline: ${tuned.status} ${tuned.body}`)
  // fan-out
  const initiate = JSON.parse(
    (await send({
      method: "POST",
      url: `${server.api}/api/user/web-chat/initiate`,
      headers: basic,
      body: JSON.stringify({ contact_id: "fan-out" })
    })).body
  ).data
  // sockets join on the API listener: the one process, or the api process
  const pid = server.processes.find((p) => p.role === "all" || p.role === "api")!.pid
  await new Promise((r) => setTimeout(r, 3000)) // let start-up garbage go before the first sample
  const before = rssKiB(pid)
  const sockets: Array<Socket> = []
  const latencies: Array<number> = []
  let sentAt = 0
  for (let i = 0; i < socketCount; i += 250) {
    await Promise.all(
      Array.from({ length: Math.min(250, socketCount - i) }, () =>
        new Promise<void>((resolve, reject) => {
          const socket = io(initiate.socket_url, { transports: ["websocket"], reconnection: false, forceNew: true })
          socket.on("connect_error", reject)
          socket.on("connect", () =>
            socket.emit(
              "join-channel",
              { channel: initiate.channel, app_key: initiate.app_key, token: initiate.token },
              () => resolve()
            ))
          socket.on("new_message", () => latencies.push(performance.now() - sentAt))
          sockets.push(socket)
        }))
    )
  }
  await new Promise((r) => setTimeout(r, 3000))
  const after = rssKiB(pid)
  const rounds = socketCount > 0 ? 5 : 0
  for (let round = 0; round < rounds; round++) {
    const expected = latencies.length + sockets.length
    sentAt = performance.now()
    await send({
      method: "POST",
      url: `${server.api}/api/user/${initiate.conversation_id}/messages`,
      headers: { authorization: `Bearer ${server.demo.token}`, "content-type": "application/json" },
      body: JSON.stringify({ message: `Broadcast ${round}` })
    })
    const deadline = Date.now() + 30_000
    while (latencies.length < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
  }
  for (const s of sockets) s.close()
  const sorted = [...latencies].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0

  if (sockets.length > 0) {
    fanOut.push(
      `\nFan-out: ${sockets.length} sockets joined to one conversation, ${rounds} operator messages\n`,
      "| sockets | server RSS before | after | per socket | deliveries | new_message p50 ms | p99 ms |",
      "|---|---|---|---|---|---|---|",
      `| ${sockets.length} | ${(before / 1024).toFixed(0)} MiB | ${(after / 1024).toFixed(0)} MiB | ${
        ((after - before) / sockets.length).toFixed(1)
      } KiB | ${latencies.length}/${rounds * sockets.length} | ${at(0.5).toFixed(1)} | ${at(0.99).toFixed(1)} |`
    )
  }

  // warm-up: each of the 500 visitors writes once (contact, conversation, opportunity), then 2 s of load
  for (let i = 0; i < 500; i += 16) {
    await Promise.all(Array.from({ length: Math.min(16, 500 - i) }, (_, j) => send(inbound(i + j))))
  }
  await load(16, 2, inbound)
  for (const concurrency of [1, 16, 64]) {
    const answers: Array<Answer> = []
    const m = await measure(
      s.database,
      serverProcs(server),
      () =>
        load(concurrency, seconds, inbound, undefined, (sentAt, answeredAt, status, body) => {
          if (status === 200) answers.push({ sentAt, answeredAt, id: JSON.parse(body).data.message_id })
        })
    )
    results.push([concurrency, m] as const)
    legs.push([concurrency, answers] as const)
  }
} catch (e) {
  await server.stop()
  await s.database.stop()
  throw e
}
await server.stop(true)

/**
 * Postgres only: each message's `created_at` (now() of the transaction that inserted it: the insert
 * itself, or the BEGIN of a first message's transaction), read back from the database, splits the 200
 * into POST → created_at (authentication, the wait for a pooled connection, reading the thread) and
 * created_at → 200 (the insert and its triggers, the realtime event, the hand-over to the entity).
 */
const legLines: Array<string> = []
if (s.database.kind === "native") {
  const client = new pg.Client({ connectionString: s.database.url })
  await client.connect()
  legLines.push(
    "\nWhere an inbound message's time goes (p50 / p99 ms; `created_at` is now() of the transaction that inserted it, Postgres's clock on this machine):\n",
    "| concurrency | POST → 200 | POST → created_at | created_at → 200 |",
    "|---|---|---|---|"
  )
  for (const [concurrency, answers] of legs) {
    const stored = new Map(
      (await client.query<{ id: string; at: Date }>("select id, created_at as at from messages where id = any($1)", [
        answers.map((a) => a.id)
      ])).rows.map((r) => [r.id, r.at.getTime()])
    )
    const spans = answers.flatMap((a) => {
      const at = stored.get(a.id)
      return at === undefined ? [] : [[a.answeredAt - a.sentAt, at - a.sentAt, a.answeredAt - at] as const]
    })
    const cell = (i: number) => {
      const v = spans.map((x) => x[i]!).sort((a, b) => a - b)
      const q = (p: number) => v[Math.min(v.length - 1, Math.floor(p * v.length))] ?? 0
      return `${q(0.5)} / ${q(0.99)}`
    }
    legLines.push(`| ${concurrency} | ${cell(0)} | ${cell(1)} | ${cell(2)} |`)
  }
  await client.end()
}

// the bare baseline on the same database and the same 500 visitors: the server is stopped, so the two never share the
// machine
const bareResults: Array<readonly [number, Awaited<ReturnType<typeof measure<LoadResult>>>]> = []
let preparedBare: Awaited<ReturnType<typeof measure<LoadResult>>> | undefined
try {
  const bare = await startBare(server)
  try {
    const inbound = (i: number) => ({
      method: "POST",
      url: `${bare.url}/web-chat/message`,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ contact_id: `visitor-${i % 500}`, message: `Message ${i}` })
    })
    await load(16, 2, inbound) // warm-up
    for (const concurrency of [1, 16, 64]) {
      bareResults.push(
        [
          concurrency,
          await measure(s.database, [{ name: "bare", pid: bare.pid }], () => load(concurrency, seconds, inbound))
        ] as const
      )
    }
    // on Postgres also with the three statements prepared, as the server prepares its own (bare.ts): concurrency 16
    // only
    if (s.database.kind === "native") {
      const prepared = (i: number) => ({ ...inbound(i), url: `${bare.url}/prepared/web-chat/message` })
      await load(16, 2, prepared)
      preparedBare = await measure(s.database, [{ name: "bare", pid: bare.pid }], () => load(16, seconds, prepared))
    }
  } finally {
    await bare.stop()
  }
} finally {
  server.removeData()
  await s.database.stop()
}

console.log(`\nReceiver on ${server.label}; ${seconds} s per row, node ${process.version}\n`)
console.log(header)
for (const [concurrency, r] of results) console.log(row("POST /web-chat/message (JSON)", concurrency, r.result))
for (const [concurrency, r] of bareResults) {
  console.log(row("bare: node:http + 4-statement transaction", concurrency, r.result))
}
if (preparedBare) console.log(row("bare, the statements prepared", 16, preparedBare.result))
console.log("\nSide by side with the bare baseline (same database, same run):\n")
console.log(sideBySideHeader)
for (const [concurrency, r] of results) {
  console.log(
    sideBySide("inbound message", concurrency, r.result, bareResults.find(([c]) => c === concurrency)![1].result)
  )
}
const at16 = results.find(([c]) => c === 16)
if (preparedBare && at16) {
  console.log(sideBySide("inbound message (bare prepared)", 16, at16[1].result, preparedBare.result))
}
console.log("\nWhere the time goes (per request):\n")
console.log(costsHeader)
for (const [concurrency, r] of results) console.log(costsRow(`inbound, concurrency ${concurrency}`, r.costs))
for (const [concurrency, r] of bareResults) console.log(costsRow(`bare inbound, concurrency ${concurrency}`, r.costs))
if (preparedBare) console.log(costsRow("bare inbound prepared, concurrency 16", preparedBare.costs))
for (const [concurrency, r] of results.filter(([c]) => c === 16)) {
  console.log(statementsTable(`inbound, concurrency ${concurrency}`, r.costs))
}
for (const [concurrency, r] of bareResults.filter(([c]) => c === 16)) {
  console.log(statementsTable(`bare inbound, concurrency ${concurrency}`, r.costs))
}
console.log(legLines.join("\n"))
console.log(fanOut.join("\n"))
process.exit(0)
