/**
 * Oversized bodies against a real `parley serve` (issue 17): 20 concurrent 50 MB JSON bodies to each
 * listener, half announced with Content-Length and half chunked, from a client that reads while it
 * writes and from one that sends everything first. Reports the answers, how long each took to arrive,
 * and the server's resident memory before and after.
 * Run: npx tsx bench/body-limits.ts [concurrency]
 */
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import { startServer } from "./support.js"

const concurrency = Number(process.argv[2] ?? 20)
const BYTES = 50 * 1024 * 1024
const rssMiB = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(Fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024

// browsers and most HTTP clients keep connections alive; with `Connection: close` the server closes the
// socket after its answer, and a client still writing may see EPIPE before it reads the 413
const agent = new Http.Agent({ keepAlive: true, maxSockets: 64 })

/** One 50 MB POST; `eager` stops writing once the answer arrives, otherwise the whole body is sent first. */
const flood = (url: string, headers: Record<string, string>, chunked: boolean, eager: boolean) =>
  new Promise<{ status: number | string; ms: number }>((resolve) => {
    const started = performance.now()
    let answered = false
    const req = Http.request(url, {
      method: "POST",
      agent,
      headers: {
        ...headers,
        "content-type": "application/json",
        ...(chunked ? { "transfer-encoding": "chunked" } : { "content-length": String(BYTES) })
      }
    }, (res) => {
      const ms = performance.now() - started
      res.resume()
      res.on("end", () => {
        answered = true
        req.destroy()
        resolve({ status: res.statusCode ?? 0, ms })
      })
    })
    req.on(
      "error",
      (e: NodeJS.ErrnoException) =>
        answered ? undefined : resolve({ status: e.code ?? e.message, ms: performance.now() - started })
    )
    const chunk = Buffer.alloc(64 * 1024, 0x20)
    let sent = 0
    const pump = () => {
      while ((!eager || !answered) && sent < BYTES) {
        sent += chunk.length
        if (!req.write(chunk)) return void req.once("drain", pump)
      }
      if (!answered) req.end()
    }
    pump()
  })

const server = await startServer()
try {
  const pid = JSON.parse(Fs.readFileSync(Path.join(server.dataDir, "server.json"), "utf8")).pid as number
  const { client_id, client_secret } = server.demo.channel
  const targets = [
    {
      name: "api  POST /api/user/pipelines",
      url: `${server.api}/api/user/pipelines`,
      headers: { authorization: `Bearer ${server.demo.token}` }
    },
    {
      name: "receiver POST /web-chat/message",
      url: `${server.receiver}/web-chat/message`,
      headers: { authorization: `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString("base64")}` }
    }
  ]
  await new Promise((r) => setTimeout(r, 3000)) // start-up garbage goes before the first sample
  const start = rssMiB(pid)
  console.log(
    `\nOversized bodies: ${concurrency} concurrent 50 MB bodies per listener and client kind, node ${process.version}\n`
  )
  console.log(
    "| listener | client | answers | slowest answer ms | median ms | server RSS after (start " + start.toFixed(0) +
      " MiB) |"
  )
  console.log("|---|---|---|---|---|---|")
  for (const eager of [true, false]) {
    for (const t of targets) {
      const answers = await Promise.all(
        Array.from({ length: concurrency }, (_, i) => flood(t.url, t.headers, i % 2 === 1, eager))
      )
      const statuses = new Map<number | string, number>()
      for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1)
      const ms = answers.map((a) => a.ms).sort((a, b) => a - b)
      console.log(
        `| ${t.name} | ${eager ? "stops on answer" : "sends all first"} | ${
          [...statuses].map(([s, n]) => `${n}× ${s}`).join(", ")
        } | ${ms.at(-1)!.toFixed(0)} | ${ms[Math.floor(ms.length / 2)]!.toFixed(0)} | ${rssMiB(pid).toFixed(0)} MiB |`
      )
    }
  }
} finally {
  await server.stop()
}
process.exit(0)
