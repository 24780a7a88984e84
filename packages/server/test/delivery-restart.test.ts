/**
 * SPEC.md 6.2 and 8: a process restart between the two attempts of the reply webhook does not lose the
 * delivery. The real `parley serve` runs as a child process on a temporary data dir; the receiver fails
 * attempt 1 with a 503, the server is killed hard (SIGKILL, no shutdown) during the durable wait before
 * attempt 2, and a second `parley serve` on the same data dir must send attempt 2 (same message_id,
 * valid signature), at the original deadline rather than a full retry delay after the restart, and
 * never a third; the receiver's message_id ends up on the message.
 */
import { describe, expect, it } from "@effect/vitest"
import { verifyServiceSignature } from "@parley/domain"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { embeddedDataPath, openPglite } from "../src/db/Database.js"

const root = Path.resolve(__dirname, "../../..")
const cli = Path.join(root, "packages/server/src/cli/main.ts")
const tsx = Path.join(root, "node_modules/.bin/tsx")

/** Long enough that the kill surely lands inside the wait, and that a restarted-from-zero timer shows. */
const RETRY_DELAY_MS = 12_000

interface Hit {
  readonly at: number
  readonly headers: Http.IncomingHttpHeaders
  readonly rawBody: string
}

const OPERATOR_TEXT = "Your demo is booked for Tuesday."

/** 503 to the first request, 200 with a message_id to every later one. */
const startReceiver = () =>
  new Promise<{ url: string; hits: Array<Hit>; close: () => Promise<void> }>((resolve) => {
    const hits: Array<Hit> = []
    const server = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const rawBody = Buffer.concat(chunks).toString("utf8")
        // the demo's opening message (sent when Initiate creates the opportunity) is not this test's delivery
        if (JSON.parse(rawBody).text !== OPERATOR_TEXT) return res.writeHead(200).end("{}")
        hits.push({ at: Date.now(), headers: req.headers, rawBody })
        if (hits.length === 1) return res.writeHead(503).end("unavailable")
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ message_id: "ext-after-restart" }))
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
        hits,
        close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()) })
      }))
  })

interface Running {
  readonly child: ChildProcess
  readonly api: string
  readonly output: () => string
  readonly exited: Promise<void>
}

const serve = (dataDir: string) =>
  new Promise<Running>((resolve, reject) => {
    // its own process group, so the tsx launcher and the node process it starts can be killed together
    const child = spawn(tsx, [cli, "serve"], {
      cwd: root,
      detached: true,
      env: {
        ...process.env,
        PARLEY_DATA_DIR: dataDir,
        PORT: "0",
        RECEIVER_PORT: "0",
        PARLEY_SEED_DEMO: "true",
        OUTBOUND_ALLOW_PRIVATE: "true",
        WEBHOOK_TIMEOUT_MS: "10000",
        WEBHOOK_RETRY_DELAY_MS: String(RETRY_DELAY_MS),
        LOG_LEVEL: "Warning"
      }
    })
    const exited = new Promise<void>((r) => child.on("exit", () => r()))
    let output = ""
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 45_000)
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      const match = /API\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (match && output.includes("Data ")) {
        clearTimeout(timer)
        resolve({ child, api: match[1]!, output: () => output, exited })
      }
    })
    child.stderr!.on("data", (c: Buffer) => (output += c.toString()))
    child.on("exit", (code, signal) => {
      clearTimeout(timer)
      reject(new Error(`server exited with ${code ?? signal}:\n${output}`))
    })
  })

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const killGroup = (server: Running, signal: NodeJS.Signals) => {
  try {
    process.kill(-server.child.pid!, signal)
  } catch {
    // already gone
  }
}

/** A crash: SIGKILL to the serving node process (the pid in `lock`) and to its tsx launcher, no shutdown. */
const crash = async (server: Running, dataDir: string) => {
  const pid = Number(Fs.readFileSync(Path.join(dataDir, "lock"), "utf8").trim())
  expect(pid).toBe(JSON.parse(Fs.readFileSync(Path.join(dataDir, "server.json"), "utf8")).pid)
  expect(pid).not.toBe(server.child.pid)
  process.kill(pid, "SIGKILL")
  killGroup(server, "SIGKILL")
  await server.exited
  for (let i = 0; i < 100 && alive(pid); i++) await sleep(50)
  expect(alive(pid)).toBe(false)
  return pid
}

/** An orderly stop (SIGTERM, as an operator would), SIGKILL if it hangs. */
const stop = async (server: Running | undefined) => {
  if (!server || server.child.exitCode !== null || server.child.signalCode !== null) return
  server.child.kill("SIGTERM")
  const timeout = setTimeout(() => killGroup(server, "SIGKILL"), 15_000)
  await server.exited
  clearTimeout(timeout)
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const until = async <A>(what: string, check: () => Promise<A | undefined> | A | undefined, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const value = await check()
    if (value !== undefined) return value
    await sleep(50)
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`)
}

const call = async (url: string, init: RequestInit & { token?: string; basic?: [string, string] } = {}) => {
  const { basic, token, ...rest } = init
  const authorization = token !== undefined
    ? `Bearer ${token}`
    : `Basic ${Buffer.from(`${basic![0]}:${basic![1]}`).toString("base64")}`
  const response = await fetch(url, {
    ...rest,
    headers: { authorization, accept: "application/json", "content-type": "application/json", ...rest.headers }
  })
  return { status: response.status, body: (await response.json()) as any }
}

interface Demo {
  readonly token: string
  readonly channel: { readonly id: number; readonly client_id: string; readonly client_secret: string }
}

describe("reply webhook across a process restart", () => {
  it("a SIGKILL during the wait before attempt 2 does not lose the delivery: the restarted server sends it, once", async () => {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-restart-"))
    const receiver = await startReceiver()
    let first: Running | undefined
    let second: Running | undefined
    try {
      first = await serve(dataDir)
      const demo = JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8")) as Demo
      expect(first.output()).toContain(`export PARLEY_TOKEN=${demo.token}`)
      const { token, channel } = demo

      const updated = await call(`${first.api}/api/user/channels/${channel.id}`, {
        method: "PUT",
        token,
        body: JSON.stringify({ callback_url: receiver.url })
      })
      expect(updated.status).toBe(200)
      expect(updated.body.data.callback_url).toBe(receiver.url)

      const session = await call(`${first.api}/api/user/web-chat/initiate`, {
        method: "POST",
        basic: [channel.client_id, channel.client_secret],
        body: JSON.stringify({ contact_id: "visitor-restart" })
      })
      expect(session.status).toBe(200)
      const conversationId = session.body.data.conversation_id as number

      const sent = await call(`${first.api}/api/user/${conversationId}/messages`, {
        method: "POST",
        token,
        body: JSON.stringify({ message: OPERATOR_TEXT })
      })
      expect(sent.status).toBe(200)
      const messageId = sent.body.data._id as string
      expect(sent.body.data.status).toBe("sent_to_user")

      const deliveries = async (api: string) => {
        const r = await call(`${api}/api/user/channels/${channel.id}/deliveries?message_id=${messageId}`, { token })
        expect(r.status).toBe(200)
        return (r.body.data as Array<any>).slice().sort((a, b) => a.attempt - b.attempt)
      }

      // attempt 1 fails with a 503 and is recorded; the workflow is now in its durable wait
      await until("attempt 1 at the receiver", () => receiver.hits.length >= 1 ? true : undefined, 15_000)
      const attempt1At = receiver.hits[0]!.at
      await until("attempt 1 in the delivery log", async () => (await deliveries(first!.api)).length >= 1 ? true : undefined, 5_000)
      // let the activity's result and the durable clock be stored before pulling the plug
      await sleep(Math.max(0, attempt1At + 2_000 - Date.now()))
      expect(receiver.hits).toHaveLength(1)
      const killedAt = Date.now()
      expect(killedAt - attempt1At).toBeLessThan(RETRY_DELAY_MS - 3_000)
      const servingPid = await crash(first, dataDir)
      first = undefined
      // the crash left its lock behind (a dead pid): the restart must take it over
      expect(Fs.readFileSync(Path.join(dataDir, "lock"), "utf8").trim()).toBe(String(servingPid))
      expect(receiver.hits).toHaveLength(1)

      const spawnedAt = Date.now()
      second = await serve(dataDir)
      const restartedAt = Date.now()
      expect(Number(Fs.readFileSync(Path.join(dataDir, "lock"), "utf8").trim())).not.toBe(servingPid)

      await until("attempt 2 at the receiver after the restart", () => receiver.hits.length >= 2 ? true : undefined, 20_000)
      const hit = receiver.hits[1]!
      const body = JSON.parse(hit.rawBody)
      expect(body).toMatchObject({
        event: "message",
        client_id: channel.client_id,
        contact_id: "visitor-restart",
        message_id: messageId,
        text: "Your demo is booked for Tuesday."
      })
      expect(JSON.parse(receiver.hits[0]!.rawBody).message_id).toBe(messageId)
      expect(hit.headers["webhook-id"]).toBe(messageId)
      expect(verifyServiceSignature(
        channel.client_secret,
        { signature: hit.headers["x-service-signature"] as string, timestamp: hit.headers["x-service-timestamp"] as string },
        hit.rawBody
      )).toBe(true)

      // the timer is durable: attempt 2 comes at the original deadline (or at boot, if that was later),
      // not a whole retry delay after the restarted engine began (that would be after spawnedAt + delay)
      const deadline = attempt1At + RETRY_DELAY_MS
      console.log(
        `after attempt 1: kill at ${killedAt - attempt1At} ms, respawn at ${spawnedAt - attempt1At} ms, ` +
          `banner at ${restartedAt - attempt1At} ms, attempt 2 at ${hit.at - attempt1At} ms (retry delay ${RETRY_DELAY_MS} ms)`
      )
      expect(hit.at).toBeGreaterThanOrEqual(deadline - 250)
      expect(hit.at).toBeLessThanOrEqual(Math.max(deadline, restartedAt) + 1_000)

      // the log shows both attempts of the one run; the 200 stored the receiver's message_id
      const log = await until("attempt 2 in the delivery log", async () => {
        const rows = await deliveries(second!.api)
        return rows.length >= 2 ? rows : undefined
      }, 5_000)
      expect(log.map((d) => [d.run, d.attempt, d.status_code, d.error])).toEqual([
        [0, 1, 503, "HTTP 503"],
        [0, 2, 200, null]
      ])
      expect(log[1].response_excerpt).toBe(JSON.stringify({ message_id: "ext-after-restart" }))

      // the schedule is over: no third attempt
      await sleep(3_000)
      expect(receiver.hits).toHaveLength(2)
      expect(await deliveries(second.api)).toHaveLength(2)

      // with the server stopped, the data dir itself: the message kept the receiver's message_id
      await stop(second)
      second = undefined
      expect(Fs.existsSync(Path.join(dataDir, "lock"))).toBe(false)
      const stored = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const db = yield* openPglite({ dataDir: embeddedDataPath(dataDir) })
        return yield* Effect.promise(() =>
          db.query<{ external_message_id: string | null; status: string }>(
            "select external_message_id, status from messages where id = $1",
            [messageId]
          )
        )
      })))
      expect(stored.rows).toEqual([{ external_message_id: "ext-after-restart", status: "sent_to_user" }])
    } finally {
      await stop(first)
      await stop(second)
      await receiver.close()
      Fs.rmSync(dataDir, { recursive: true, force: true })
    }
  }, 120_000)
})
