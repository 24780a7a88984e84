/**
 * Exactly once across a crash: killing the process in the middle of a reply and restarting produces the
 * reply once, not zero or two times. The real `parley serve` runs as a child process on a temporary data
 * dir with a local model that takes 4 s per call; a contact writes, and 1.5 s later (inside the model
 * call, nothing stored yet) the server is killed hard (SIGKILL, no shutdown). A second `parley serve` on
 * the same data dir, with an instant model, must store one reply to that message and deliver it to the
 * channel's webhook once, and nothing more may arrive afterwards.
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

const MODEL_LATENCY_MS = 4_000
const KILL_AFTER_MS = 1_500

interface Hit {
  readonly at: number
  readonly headers: Http.IncomingHttpHeaders
  readonly rawBody: string
}

/** The channel's reply webhook: records every request, answers 200. */
const startReceiver = () =>
  new Promise<{ url: string; hits: Array<Hit>; close: () => Promise<void> }>((resolve) => {
    const hits: Array<Hit> = []
    const server = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        hits.push({ at: Date.now(), headers: req.headers, rawBody: Buffer.concat(chunks).toString("utf8") })
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ message_id: `ext-${hits.length}` }))
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
  readonly receiver: string
  readonly output: () => string
  readonly exited: Promise<void>
}

const serve = (dataDir: string, modelLatencyMs: number) =>
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
        LOCAL_MODEL_LATENCY_MS: String(modelLatencyMs),
        ENGINE_SWEEP_INTERVAL_MS: "2000",
        LOG_LEVEL: "Warning"
      }
    })
    const exited = new Promise<void>((r) => child.on("exit", () => r()))
    let output = ""
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 30_000)
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      const api = /API\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1]
      const receiver = /Receiver\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1]
      if (api && receiver && output.includes("Data ")) {
        clearTimeout(timer)
        resolve({ child, api, receiver, output: () => output, exited })
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
  expect(pid).not.toBe(server.child.pid)
  process.kill(pid, "SIGKILL")
  killGroup(server, "SIGKILL")
  await server.exited
  for (let i = 0; i < 100 && alive(pid); i++) await sleep(50)
  expect(alive(pid)).toBe(false)
}

/** An orderly stop (SIGTERM), SIGKILL if it hangs. */
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

const call = async (url: string, init: RequestInit & { token?: string; basic?: readonly [string, string] } = {}) => {
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

/** Reads the data dir of a stopped server. */
const query = <A>(dataDir: string, text: string, params: Array<unknown>) =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const db = yield* openPglite({ dataDir: embeddedDataPath(dataDir) })
    return yield* Effect.promise(() => db.query<A>(text, params))
  }))).then((r) => r.rows)

interface Demo {
  readonly token: string
  readonly pipeline_id: number
  readonly workspace_id: number
  readonly channel: { readonly id: number; readonly client_id: string; readonly client_secret: string }
}

describe("a reply across a process restart", () => {
  it("killing the process in the middle of a reply and restarting produces the reply once, not zero or two times", async () => {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-reply-restart-"))
    const receiver = await startReceiver()
    let first: Running | undefined
    let second: Running | undefined
    try {
      first = await serve(dataDir, MODEL_LATENCY_MS)
      const demo = JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8")) as Demo
      const { channel, token } = demo
      const client = [channel.client_id, channel.client_secret] as const

      // the demo pipeline answers at once; its web channel calls our receiver; the demo workspace has credits
      const pipeline = await call(`${first.api}/api/user/pipelines/${demo.pipeline_id}`, {
        method: "PUT",
        token,
        body: JSON.stringify({ reply_debounce_ms: 0 })
      })
      expect(pipeline.status).toBe(200)
      expect(pipeline.body.data.reply_debounce_ms).toBe(0)
      const updated = await call(`${first.api}/api/user/channels/${channel.id}`, {
        method: "PUT",
        token,
        body: JSON.stringify({ callback_url: receiver.url })
      })
      expect(updated.status).toBe(200)
      expect(updated.body.data.callback_url).toBe(receiver.url)
      const me = await call(`${first.api}/api/user/me`, { token })
      expect(me.status).toBe(200)

      const contactId = "visitor-reply-restart"
      const history = async (api: string) => {
        const r = await call(`${api}/api/user/messages/webchat?contact_id=${contactId}&per_page=100`, { basic: client })
        expect(r.status).toBe(200)
        return r.body.data.data as Array<{ id: string; role: string; status: string; message: string | null }>
      }

      const t0 = Date.now()
      const sent = await call(`${first.receiver}/web-chat/message`, {
        method: "POST",
        basic: client,
        body: JSON.stringify({ contact_id: contactId, message: "Hello, what does Parley do and can I book a demo call?" })
      })
      expect(sent.status).toBe(200)
      const messageId = sent.body.data.message_id as string
      const storedAt = Date.now()

      // inside the 4 s model call: the turn has begun but stored nothing yet
      await sleep(Math.max(0, storedAt + KILL_AFTER_MS - Date.now()))
      const before = await history(first.api)
      expect(before.map((m) => [m.id, m.role])).toEqual([[messageId, "user"]])
      expect(receiver.hits).toHaveLength(0)
      const killedAt = Date.now()
      expect(killedAt - storedAt).toBeLessThan(MODEL_LATENCY_MS - 1_000)
      await crash(first, dataDir)
      first = undefined
      expect(receiver.hits).toHaveLength(0)

      const spawnedAt = Date.now()
      second = await serve(dataDir, 0)
      const restartedAt = Date.now()

      await until("the reply at the webhook after the restart", () => receiver.hits.length >= 1 ? true : undefined, 15_000)
      const hit = receiver.hits[0]!
      console.log(
        `after the message was stored: kill at ${killedAt - storedAt} ms, respawn at ${spawnedAt - storedAt} ms, ` +
          `banner at ${restartedAt - storedAt} ms, webhook at ${hit.at - storedAt} ms (POST took ${storedAt - t0} ms)`
      )
      const body = JSON.parse(hit.rawBody)
      expect(body).toMatchObject({ event: "message", client_id: channel.client_id, contact_id: contactId })
      expect(verifyServiceSignature(
        channel.client_secret,
        { signature: hit.headers["x-service-signature"] as string, timestamp: hit.headers["x-service-timestamp"] as string },
        hit.rawBody
      )).toBe(true)

      // nothing more arrives: no second reply, no second delivery of the first
      await sleep(4_000)
      expect(receiver.hits.map((h) => JSON.parse(h.rawBody).message_id)).toEqual([body.message_id])
      const after = await history(second.api)
      const assistant = after.filter((m) => m.role === "assistant")
      expect(assistant.map((m) => m.id)).toEqual([body.message_id])
      expect(assistant[0]!.status).toBe("sent_to_user")
      expect(body.text).toBe(assistant[0]!.message)

      // with the server stopped, the data dir itself: one reply, to that message, delivered once
      await stop(second)
      second = undefined
      const replies = await query<{ id: string; status: string; in_reply_to: string | null; call_type: string }>(
        dataDir,
        `select m.id, m.status, m.in_reply_to, m.call_type from messages m
         where m.conversation_id = (select conversation_id from messages where id = $1) and m.role = 'assistant'
         order by m.created_at, m.id`,
        [messageId]
      )
      expect(replies).toEqual([{ id: body.message_id, status: "sent_to_user", in_reply_to: messageId, call_type: "ai" }])
      const contact = await query<{ handled_reason: string | null }>(dataDir, "select handled_reason from messages where id = $1", [messageId])
      expect(contact).toEqual([{ handled_reason: "replied" }])
      const attempts = await query<{ attempt: number; status_code: number | null }>(
        dataDir,
        "select attempt, status_code from webhook_deliveries where message_id = $1 order by run, attempt",
        [body.message_id]
      )
      expect(attempts).toEqual([{ attempt: 1, status_code: 200 }])
    } finally {
      await stop(first)
      await stop(second)
      await receiver.close()
      Fs.rmSync(dataDir, { recursive: true, force: true })
    }
  }, 60_000)
})
