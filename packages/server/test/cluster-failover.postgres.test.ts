/**
 * Failover on native Postgres (issue 21): the multi-process topology as users scale it, in real
 * processes (`parley serve --role ...` with DATABASE_URL and PARLEY_CLUSTER=socket): two api, one receiver
 * and two worker processes on a database of this suite's own. 200 contact messages from 50 contacts go
 * through the receiver while one worker is killed with SIGKILL; nothing the receiver acknowledged is lost,
 * the conversations resume within 10 s of the kill (the health check finds the dead runner and its shards
 * move), every reply reaches the webhook (a duplicate only as the same message), every attempt the webhook
 * saw is in the delivery log, the dead runner is marked unhealthy, and a restarted worker takes shards.
 * Runs in the `postgres` project only (vitest.config.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import pg from "pg"
import { inject } from "vitest"
import { startReceiver, until } from "./support/ChildServer.js"
import { TEMPLATE_DATABASE } from "./support/NativePostgres.js"
import { freePort } from "./support/Ports.js"

const root = Path.resolve(__dirname, "../../..")
const tsx = Path.join(root, "node_modules/.bin/tsx")
const cli = Path.join(root, "packages/server/src/cli/main.ts")
const database = `parley_failover_${process.pid}`
const adminUrl = inject("pgAdminUrl")
const url = adminUrl.replace(/\/postgres$/, `/${database}`)
const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-failover-"))
// a start prints its progress; one that prints nothing for this long failed
const START_SILENCE_MS = 120_000

interface Proc {
  readonly role: string
  readonly child: ChildProcess
  readonly env: Record<string, string>
  readonly output: () => string
}
const procs: Array<Proc> = []
let admin: pg.Client
let db: pg.Client

const start = async (role: "api" | "receiver" | "worker", extra: Record<string, string> = {}): Promise<Proc> => {
  const env = {
    DATABASE_URL: url,
    APP_SECRET: "failover-test-secret",
    PARLEY_CLUSTER: "socket",
    PARLEY_DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    PORT: String(await freePort()),
    RECEIVER_PORT: String(await freePort()),
    RUNNER_PORT: String(await freePort()),
    LOG_LEVEL: "Warning",
    PARLEY_SEED_DEMO: "false",
    OUTBOUND_ALLOW_PRIVATE: "true",
    ...extra
  }
  const child = spawn(tsx, [cli, "serve", "--role", role], {
    cwd: root,
    env: { ...process.env, ...env },
    detached: true
  })
  let out = ""
  let lastOutput = Date.now()
  child.stdout!.on("data", (c: Buffer) => ((out += c.toString()), (lastOutput = Date.now())))
  child.stderr!.on("data", (c: Buffer) => ((out += c.toString()), (lastOutput = Date.now())))
  const proc = { role, child, env, output: () => out }
  procs.push(proc)
  const readyUrl = role === "api"
    ? `http://127.0.0.1:${env.PORT}/ready`
    : role === "receiver"
    ? `http://127.0.0.1:${env.RECEIVER_PORT}/ready`
    : undefined
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${role} exited:\n${out}`)
    if (Date.now() - lastOutput > START_SILENCE_MS) {
      throw new Error(`${role} printed nothing for ${START_SILENCE_MS} ms:\n${out}`)
    }
    if (readyUrl === undefined) {
      if (out.includes("Parley is running")) return proc
    } else {
      const status = await fetch(readyUrl).then((r) => r.status, () => 0)
      if (status === 200) return proc
    }
    await new Promise((r) => setTimeout(r, 100))
  }
}

const kill = (p: Proc, signal: NodeJS.Signals) => {
  try {
    process.kill(-p.child.pid!, signal)
  } catch {
    // already gone
  }
}

/** Backends holding shard locks (advisory locks are taken only by runners' lock connections). */
const lockHolders = async () =>
  new Set((await db.query<{ pid: number }>(
    `select distinct pid from pg_locks where locktype = 'advisory' and granted
     and database = (select oid from pg_database where datname = current_database())`
  )).rows.map((r) => r.pid))

const runners = async () =>
  (await db.query<{ address: string; healthy: boolean }>(
    "select address, healthy from cluster_runners order by address"
  )).rows

beforeAll(async () => {
  admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`create database ${database} template ${TEMPLATE_DATABASE}`)
  db = new pg.Client({ connectionString: url })
  await db.connect()
})

afterAll(async () => {
  for (const p of procs) kill(p, "SIGKILL")
  await db?.end()
  await admin?.query(`drop database if exists ${database} with (force)`)
  await admin?.end()
  Fs.rmSync(dataDir, { recursive: true, force: true })
})

describe("a cluster on native Postgres", () => {
  it(
    "loses nothing when a worker is killed mid-traffic, resumes within 10 s, logs every attempt, marks the dead runner and gives a restarted worker shards",
    async () => {
      // the first api process seeds the demo workspace (a web channel, credits); the rest join the same database
      const api = await start("api", { PARLEY_SEED_DEMO: "true" })
      await start("api")
      const receiver = await start("receiver")
      const w1 = await start("worker")
      await start("worker")
      const credentials = JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8"))
      // the channel's reply webhook: records every request (a duplicate delivery included), answers 200
      const webhook = await startReceiver(() => ({ status: 200, body: "{}" }))
      const channel = await fetch(`http://127.0.0.1:${api.env.PORT}/api/user/channels/${credentials.channel.id}`, {
        method: "PUT",
        headers: { authorization: `Bearer ${credentials.token}`, "content-type": "application/json" },
        body: JSON.stringify({ callback_url: webhook.url })
      })
      expect(channel.status).toBe(200)
      const basic = `Basic ${
        Buffer.from(`${credentials.channel.client_id}:${credentials.channel.client_secret}`).toString("base64")
      }`
      // each message its own reply, at once
      const tuned = await fetch(`http://127.0.0.1:${api.env.PORT}/api/user/pipelines/${credentials.pipeline_id}`, {
        method: "PUT",
        headers: { authorization: `Bearer ${credentials.token}`, "content-type": "application/json" },
        body: JSON.stringify({ reply_debounce_ms: 0 })
      })
      expect(tuned.status).toBe(200)
      await until("both workers registered and healthy", async () => {
        const rows = await runners()
        return rows.length === 2 && rows.every((r) => r.healthy) ? rows : undefined
      }, 60_000)

      // 200 messages from 50 contacts; the first worker is killed after the 60th is acknowledged
      const sent: Array<{ readonly id: string; readonly at: number }> = []
      let killedAt = 0
      for (let i = 0; i < 200; i++) {
        const response = await fetch(`http://127.0.0.1:${receiver.env.RECEIVER_PORT}/web-chat/message`, {
          method: "POST",
          headers: { authorization: basic, "content-type": "application/json" },
          body: JSON.stringify({ contact_id: `failover-${i % 50}`, message: `message ${i}` })
        })
        expect(response.status).toBe(200)
        sent.push({ id: ((await response.json()) as { data: { message_id: string } }).data.message_id, at: Date.now() })
        if (i === 59) {
          kill(w1, "SIGKILL")
          killedAt = Date.now()
        }
        await new Promise((r) => setTimeout(r, 20))
      }

      // nothing acknowledged is lost: every message is stored and handled (a reply made for it)
      const handled = await until("every message handled", async () => {
        const rows = (await db.query<{ id: string; handled_at: Date | null }>(
          "select id, handled_at from messages where id = any($1)",
          [sent.map((s) => s.id)]
        )).rows
        return rows.length === sent.length && rows.every((r) => r.handled_at !== null)
          ? new Map(rows.map((r) => [r.id, r.handled_at!.getTime()]))
          : undefined
      }, 120_000)
      expect(handled.size).toBe(200)
      const replies = (await db.query<{ n: number }>(
        `select count(distinct c.id)::int as n from conversations c
       where exists (select 1 from messages m where m.conversation_id = c.id and m.role = 'assistant' and m.created_at > to_timestamp($1 / 1000.0))`,
        [killedAt]
      )).rows[0]!.n
      expect(replies).toBe(50)

      // the dead worker's conversations resumed within 10 s of the kill
      const afterKill = sent.filter((s) => s.at > killedAt).map((s) => handled.get(s.id)! - Math.max(s.at, killedAt))
      expect(Math.max(...afterKill)).toBeLessThan(10_000)

      // every reply reached the webhook at least once; a duplicate delivery is the same reply (same
      // message_id, same text); every request the webhook got is an attempt in the delivery log, where no
      // attempt is left in progress
      const replyIds = (await db.query<{ id: string; message: string }>(
        `select m.id, m.message from messages m join conversations c on c.id = m.conversation_id
       where m.role = 'assistant' and c.channel_id = $1`,
        [credentials.channel.id]
      )).rows
      const delivered = await until("every reply delivered", () => {
        const byId = new Map<string, Array<{ text: string }>>()
        for (const hit of webhook.hits) {
          const body = JSON.parse(hit.rawBody) as { message_id: string; text: string }
          byId.set(body.message_id, [...(byId.get(body.message_id) ?? []), { text: body.text }])
        }
        return replyIds.every((r) => byId.has(r.id)) ? byId : undefined
      }, 60_000)
      expect(new Set(delivered.keys())).toEqual(new Set(replyIds.map((r) => r.id)))
      const texts = new Map(replyIds.map((r) => [r.id, r.message]))
      for (const [id, hits] of delivered) expect(new Set(hits.map((h) => h.text))).toEqual(new Set([texts.get(id)]))
      const log = await until("no attempt in progress", async () => {
        const rows = (await db.query<{ message_id: string; n: number; in_progress: number }>(
          `select message_id, count(*)::int as n, count(*) filter (where status_code is null and error = 'In progress')::int as in_progress
         from webhook_deliveries where channel_id = $1 group by message_id`,
          [credentials.channel.id]
        )).rows
        return rows.every((r) => r.in_progress === 0) ? new Map(rows.map((r) => [r.message_id, r.n])) : undefined
      }, 60_000)
      for (const [id, hits] of delivered) {
        expect(log.get(id) ?? 0, `attempts logged for ${id}`).toBeGreaterThanOrEqual(hits.length)
      }

      // the dead runner is marked unhealthy
      const dead = `127.0.0.1:${w1.env.RUNNER_PORT}`
      await until(
        "the killed worker marked unhealthy",
        async () => (await runners()).find((r) => r.address === dead)?.healthy === false || undefined,
        60_000
      )

      // a restarted worker registers as a healthy runner and takes shards: a lock connection other than
      // the surviving worker's holds shard locks
      const before = await lockHolders()
      expect(before.size).toBe(1)
      const w3 = await start("worker")
      const address = `127.0.0.1:${w3.env.RUNNER_PORT}`
      await until(
        "the restarted worker registered",
        async () => (await runners()).find((r) => r.address === address)?.healthy === true || undefined,
        60_000
      )
      await until(
        "the restarted worker holds shards",
        async () => [...await lockHolders()].some((pid) => !before.has(pid)) || undefined,
        60_000
      )

      // the receiver answers as soon as the message is stored: the hand-over to an entity on a worker is
      // not waited for (it would take the debounce window and the turn)
      const DEBOUNCE_MS = 10_000
      const slow = await fetch(`http://127.0.0.1:${api.env.PORT}/api/user/pipelines/${credentials.pipeline_id}`, {
        method: "PUT",
        headers: { authorization: `Bearer ${credentials.token}`, "content-type": "application/json" },
        body: JSON.stringify({ reply_debounce_ms: DEBOUNCE_MS })
      })
      expect(slow.status).toBe(200)
      const postedAt = Date.now()
      const probe = await fetch(`http://127.0.0.1:${receiver.env.RECEIVER_PORT}/web-chat/message`, {
        method: "POST",
        headers: { authorization: basic, "content-type": "application/json" },
        body: JSON.stringify({ contact_id: "handover-probe", message: "are you there?" })
      })
      expect(probe.status).toBe(200)
      expect(Date.now() - postedAt).toBeLessThan(DEBOUNCE_MS / 2)
      await webhook.close()
    },
    300_000
  )
})
