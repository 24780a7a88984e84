/**
 * The web-chat receiver and the socket fan-out, on the embedded database.
 * Run: pnpm bench:receiver   (or: npx tsx bench/receiver.ts [seconds] [sockets])
 *
 * 1. Fan-out (first, on a fresh server, so memory is not muddied by earlier load): N socket.io clients
 *    join one conversation; the server's resident memory per socket, and the time from an operator
 *    message's POST to `new_message` on every socket (p50, p99).
 * 2. Inbound messages per second and latency at concurrency 1, 16 and 64 (each request is stored with
 *    its contact, conversation and opportunity in one transaction before the 200).
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { io, type Socket } from "socket.io-client"
import { header, load, row, send, startServer } from "./support.js"

const seconds = Number(process.argv[2] ?? 10)
const socketCount = Number(process.argv[3] ?? 5000)

const rssKiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(Fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0)

const server = await startServer()
try {
  const { client_id, client_secret } = server.demo.channel
  const basic = { authorization: `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString("base64")}`, "content-type": "application/json" }
  const inbound = (i: number) => ({
    method: "POST",
    url: `${server.receiver}/web-chat/message`,
    headers: basic,
    // 500 visitors: most messages join an existing conversation, as in production
    body: JSON.stringify({ contact_id: `visitor-${i % 500}`, message: `Message ${i}` })
  })
  // fan-out
  const initiate = JSON.parse((await send({
    method: "POST",
    url: `${server.api}/api/user/web-chat/initiate`,
    headers: basic,
    body: JSON.stringify({ contact_id: "fan-out" })
  })).body).data
  const pid = JSON.parse(Fs.readFileSync(Path.join(server.dataDir, "server.json"), "utf8")).pid as number
  await new Promise((r) => setTimeout(r, 3000)) // let start-up garbage go before the first sample
  const before = rssKiB(pid)
  const sockets: Array<Socket> = []
  const latencies: Array<number> = []
  let sentAt = 0
  for (let i = 0; i < socketCount; i += 250) {
    await Promise.all(Array.from({ length: Math.min(250, socketCount - i) }, () =>
      new Promise<void>((resolve, reject) => {
        const socket = io(initiate.socket_url, { transports: ["websocket"], reconnection: false, forceNew: true })
        socket.on("connect_error", reject)
        socket.on("connect", () =>
          socket.emit("join-channel", { channel: initiate.channel, app_key: initiate.app_key, token: initiate.token }, () => resolve()))
        socket.on("new_message", () => latencies.push(performance.now() - sentAt))
        sockets.push(socket)
      })))
  }
  await new Promise((r) => setTimeout(r, 3000))
  const after = rssKiB(pid)
  const rounds = 5
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

  await load(16, 2, inbound) // warm-up (creates the 500 contacts)
  const results = []
  for (const concurrency of [1, 16, 64]) results.push([concurrency, await load(concurrency, seconds, inbound)] as const)

  console.log(`\nReceiver on the embedded database, ${seconds} s per row, node ${process.version}\n`)
  console.log(header)
  for (const [concurrency, r] of results) console.log(row("POST /web-chat/message (JSON)", concurrency, r))
  console.log(`\nFan-out: ${sockets.length} sockets joined to one conversation, ${rounds} operator messages\n`)
  console.log("| sockets | server RSS before | after | per socket | deliveries | new_message p50 ms | p99 ms |")
  console.log("|---|---|---|---|---|---|---|")
  console.log(`| ${sockets.length} | ${(before / 1024).toFixed(0)} MiB | ${(after / 1024).toFixed(0)} MiB | ${((after - before) / sockets.length).toFixed(1)} KiB | ${latencies.length}/${rounds * sockets.length} | ${at(0.5).toFixed(1)} | ${at(0.99).toFixed(1)} |`)
} finally {
  await server.stop()
}
process.exit(0)
