/**
 * Connection loss (issue 21): Postgres is restarted under traffic. A real `parley serve` (all roles, one
 * process) runs with DATABASE_URL on a Postgres cluster of this suite's own (the shared one serves other
 * suites); four senders post web-chat messages to the receiver without pause while the server is stopped
 * (fast shutdown: every session is cut) and, once the receiver has refused a few messages, started again
 * on the same port. While the database is away the receiver answers 503 with Retry-After (not a 500, not
 * a hang); afterwards it accepts messages again without a restart of ours; every message it acknowledged
 * with a 200 is stored, answered by the agent and its reply delivered to the channel's webhook. And LISTEN
 * (db/PgListener.ts, what caches across processes hear changes by) connects again by itself.
 * Runs in the `postgres` project only (vitest.config.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import pg from "pg"
import { makePgListener } from "../src/db/PgListener.js"
import { call, type Running, serve, startReceiver, stop, until } from "./support/ChildServer.js"
import { type Cluster, startCluster } from "./support/NativePostgres.js"

const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-connection-loss-"))
// a request that takes this long is a hang (the pool gives up on a connection after 10 s)
const HANG_MS = 30_000

interface Sent {
  readonly status: number
  readonly ms: number
  readonly id?: string
  readonly retryAfter?: string | null
  readonly body: string
}

let cluster: Cluster
let server: Running | undefined
let db: pg.Client | undefined

beforeAll(async () => {
  cluster = await startCluster()
  cluster.psql("postgres", "create database parley")
})

afterAll(async () => {
  await db?.end()
  await stop(server)
  cluster?.stop()
  Fs.rmSync(dataDir, { recursive: true, force: true })
})

describe("Postgres restarted under traffic", () => {
  it(
    "the receiver answers 503 while the database is away, then accepts again, and loses nothing it acknowledged",
    async () => {
      const webhook = await startReceiver(() => ({ status: 200, body: "{}" }))
      server = await serve(dataDir, {
        DATABASE_URL: cluster.url("parley"),
        APP_SECRET: "connection-loss-secret",
        ENGINE_SWEEP_INTERVAL_MS: "2000"
      })
      const running = server
      const demo = JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8"))
      const { channel, token } = demo
      expect(
        (await call(`${running.api}/api/user/pipelines/${demo.pipeline_id}`, {
          method: "PUT",
          token,
          body: JSON.stringify({ reply_debounce_ms: 0 })
        })).status
      ).toBe(200)
      expect(
        (await call(`${running.api}/api/user/channels/${channel.id}`, {
          method: "PUT",
          token,
          body: JSON.stringify({ callback_url: webhook.url })
        })).status
      ).toBe(200)
      const basic = `Basic ${Buffer.from(`${channel.client_id}:${channel.client_secret}`).toString("base64")}`

      const sent: Array<Sent> = []
      let sending = true
      const sender = async (n: number) => {
        for (let i = 0; sending; i++) {
          const started = Date.now()
          try {
            const response = await fetch(`${running.receiver}/web-chat/message`, {
              method: "POST",
              headers: { authorization: basic, "content-type": "application/json" },
              body: JSON.stringify({ contact_id: `loss-${n}-${i % 3}`, message: `message ${n}.${i}` }),
              signal: AbortSignal.timeout(HANG_MS)
            })
            const body = await response.text()
            sent.push({
              status: response.status,
              ms: Date.now() - started,
              body,
              retryAfter: response.headers.get("retry-after"),
              ...(response.status === 200
                ? { id: (JSON.parse(body) as { data: { message_id: string } }).data.message_id }
                : {})
            })
          } catch (error) {
            sent.push({ status: 0, ms: Date.now() - started, body: String(error) })
          }
          // a client told to retry waits a little, as Retry-After asks (shortened here)
          if (sent.at(-1)!.status !== 200) await new Promise((r) => setTimeout(r, 100))
        }
      }
      const senders = [0, 1, 2, 3].map(sender)
      const accepted = () => sent.filter((s) => s.status === 200).length
      const refused = () => sent.filter((s) => s.status === 503).length

      // on a failure, what the senders got and what the server said
      const explain = (error: unknown) => {
        const counts = sent.reduce<Record<number, number>>(
          (acc, s) => ({ ...acc, [s.status]: (acc[s.status] ?? 0) + 1 }),
          {}
        )
        const odd = sent.filter((s) => s.status !== 200).slice(0, 5).map((s) =>
          `${s.status} in ${s.ms} ms: ${s.body.slice(0, 300)}`
        )
        return new Error(
          `${String(error)}\nanswers ${JSON.stringify(counts)}, slowest ${Math.max(0, ...sent.map((s) => s.ms))} ms\n${
            odd.join("\n")
          }\n${running.output().slice(-4000)}`
        )
      }
      try {
        await until("20 messages accepted", () => accepted() >= 20 || undefined, 60_000)
        cluster.stopServer()
        await until("the receiver refusing while Postgres is down", () => refused() >= 5 || undefined, 60_000)
        const acceptedWhileDown = accepted()
        cluster.startServer()
        await until(
          "20 messages accepted after the restart",
          () => accepted() >= acceptedWhileDown + 20 || undefined,
          60_000
        )
      } catch (error) {
        throw explain(error)
      } finally {
        sending = false
        await Promise.all(senders)
      }

      // only 200 and 503, none hung; every 503 asks to retry in the receiver's envelope
      expect(
        sent.filter((s) => s.status !== 200 && s.status !== 503),
        "answers other than 200 or 503"
      ).toEqual([])
      for (const s of sent.filter((s) => s.status === 503)) {
        expect(s.retryAfter).toBe("1")
        expect(JSON.parse(s.body)).toEqual({
          status: false,
          message: "The database is unavailable; try again in a moment.",
          data: null
        })
      }
      expect(running.child.exitCode).toBeNull()

      // nothing acknowledged is lost: stored, handled with a reply, the reply delivered
      db = new pg.Client({ connectionString: cluster.url("parley") })
      // the next test restarts Postgres under this connection
      db.on("error", () => {})
      await db.connect()
      const ids = sent.flatMap((s) => (s.id === undefined ? [] : [s.id]))
      const client = db
      await until("every acknowledged message handled", async () => {
        const rows = (await client.query<{ id: string; handled_at: Date | null }>(
          "select id, handled_at from messages where id = any($1)",
          [ids]
        )).rows
        return rows.length === ids.length && rows.every((r) => r.handled_at !== null) || undefined
      }, 120_000)
      const replies = (await db.query<{ id: string }>(
        "select r.id from messages r join messages m on m.id = r.in_reply_to where m.id = any($1) and r.role = 'assistant'",
        [ids]
      )).rows.map((r) => r.id)
      expect(replies.length).toBeGreaterThan(0)
      await until("every reply delivered", () => {
        const delivered = new Set(webhook.hits.map((h) => (JSON.parse(h.rawBody) as { message_id: string }).message_id))
        return replies.every((id) => delivered.has(id)) || undefined
      }, 60_000)
      // every acknowledged message was answered: by its own reply, or by the reply to a later message of
      // the same contact that took it in (messages that arrive while a reply is composed are answered together)
      const unanswered = (await db.query<{ n: number }>(
        `select count(*)::int as n from messages m where m.id = any($1) and not exists (
         select 1 from messages r where r.conversation_id = m.conversation_id and r.role = 'assistant' and r.created_at >= m.created_at)`,
        [ids]
      )).rows[0]!.n
      expect(unanswered).toBe(0)
      await webhook.close()
    },
    300_000
  )

  it(
    "LISTEN connects again after the restart: its subscriber is told to look again, then hears new notifications",
    async () => {
      const received: Array<string> = []
      const notify = (payload: string) => cluster.psql("parley", `notify parley_test, '${payload}'`)
      await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const listener = yield* makePgListener(cluster.url("parley"))
        yield* listener.listen("parley_test").pipe(
          Stream.runForEach((payload) => Effect.sync(() => received.push(payload))),
          Effect.forkScoped
        )
        // listening once a notification arrives
        yield* Effect.promise(() =>
          until("listening", () => (notify("before"), received.includes("before") || undefined), 30_000)
        )
        expect(received).not.toContain("")
        cluster.stopServer()
        cluster.startServer()
        yield* Effect.promise(() =>
          until("told to look again after the reconnect", () => received.includes("") || undefined, 30_000)
        )
        yield* Effect.promise(() =>
          until(
            "a notification after the restart",
            () => (notify("after"), received.includes("after") || undefined),
            30_000
          )
        )
      })))
    },
    120_000
  )
})
