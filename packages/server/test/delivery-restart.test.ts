/**
 * SPEC.md 6.2 and 8: a process restart between the two attempts of the reply webhook does not lose the
 * delivery. The real `parley serve` runs as a child process on a temporary data dir (its embedded
 * database, or DATABASE_URL in the postgres project); the receiver fails attempt 1 with a 503, the server
 * is killed hard (SIGKILL, no shutdown) during the durable wait before attempt 2, and a second `parley
 * serve` on the same database must send attempt 2 (same message_id,
 * valid signature), at the original deadline rather than a full retry delay after the restart, and
 * never a third; the receiver's message_id ends up on the message.
 */
import { describe, expect, it } from "@effect/vitest"
import { verifyServiceSignature } from "@parley/domain"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import {
  call,
  type ChildDatabase,
  childDatabase,
  crash,
  type Running,
  serve,
  sleep,
  startReceiver,
  stop,
  until
} from "./support/ChildServer.js"
import { ok } from "./support/Contract.js"

/** Long enough that the kill surely lands inside the wait, and that a restarted-from-zero timer shows. */
const RETRY_DELAY_MS = 12_000

const OPERATOR_TEXT = "Your demo is booked for Tuesday."

/** 503 to the first delivery of the operator's message, 200 with a message_id to every later one. */
const startOperatorReceiver = () =>
  startReceiver((rawBody, hits) =>
    // the demo's opening message (sent when Initiate creates the opportunity) is not this test's delivery
    JSON.parse(rawBody).text !== OPERATOR_TEXT
      ? { status: 200, body: "{}", record: false }
      : hits.length === 1
      ? { status: 503, body: "unavailable" }
      : { status: 200, body: JSON.stringify({ message_id: "ext-after-restart" }) }
  )

const serveWithRetry = (dataDir: string, database: ChildDatabase) =>
  serve(dataDir, { ...database.env, WEBHOOK_TIMEOUT_MS: "10000", WEBHOOK_RETRY_DELAY_MS: String(RETRY_DELAY_MS) })

interface Demo {
  readonly token: string
  readonly channel: { readonly id: number; readonly client_id: string; readonly client_secret: string }
}

describe("reply webhook across a process restart", () => {
  it(
    "a SIGKILL during the wait before attempt 2 does not lose the delivery: the restarted server sends it, once",
    async () => {
      const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-restart-"))
      const database = await childDatabase(dataDir)
      const lock = Path.join(dataDir, "lock")
      const receiver = await startOperatorReceiver()
      let first: Running | undefined
      let second: Running | undefined
      try {
        first = await serveWithRetry(dataDir, database)
        const demo = JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8")) as Demo
        expect(first.output()).toContain(`export PARLEY_TOKEN=${demo.token}`)
        const { token, channel } = demo

        const updated = await call(`${first.api}/api/user/channels/${channel.id}`, {
          method: "PUT",
          token,
          body: JSON.stringify({ callback_url: receiver.url })
        })
        expect(updated.status).toBe(200)
        expect(ok(updated, "channels.update").callback_url).toBe(receiver.url)

        const session = await call(`${first.api}/api/user/web-chat/initiate`, {
          method: "POST",
          basic: [channel.client_id, channel.client_secret],
          body: JSON.stringify({ contact_id: "visitor-restart" })
        })
        expect(session.status).toBe(200)
        const conversationId = ok(session, "webChat.initiate").conversation_id

        const sent = await call(`${first.api}/api/user/${conversationId}/messages`, {
          method: "POST",
          token,
          body: JSON.stringify({ message: OPERATOR_TEXT })
        })
        expect(sent.status).toBe(200)
        const message = ok(sent, "messages.send")
        const messageId = message._id
        expect(message.status).toBe("sent_to_user")

        const deliveries = async (api: string) => {
          const r = await call(`${api}/api/user/channels/${channel.id}/deliveries?message_id=${messageId}`, { token })
          expect(r.status).toBe(200)
          // the attempts with their outcome (one is logged "In progress" before it is sent)
          return ok(r, "channels.deliveries").filter((d) => !(d.status_code === null && d.error === "In progress"))
            .sort((a, b) => a.attempt - b.attempt)
        }

        // attempt 1 fails with a 503 and is recorded; the workflow is now in its durable wait
        await until("attempt 1 at the receiver", () => receiver.hits.length >= 1 ? true : undefined, 15_000)
        const attempt1At = receiver.hits[0]!.at
        await until(
          "attempt 1 in the delivery log",
          async () => (await deliveries(first!.api)).length >= 1 ? true : undefined,
          5_000
        )
        // let the activity's result and the durable clock be stored before pulling the plug
        await sleep(Math.max(0, attempt1At + 2_000 - Date.now()))
        expect(receiver.hits).toHaveLength(1)
        const killedAt = Date.now()
        expect(killedAt - attempt1At).toBeLessThan(RETRY_DELAY_MS - 3_000)
        const servingPid = await crash(first, dataDir)
        first = undefined
        // embedded: the crash left its lock behind (a dead pid), the restart must take it over
        if (database.mode === "embedded") {
          expect(Fs.readFileSync(lock, "utf8").trim()).toBe(String(servingPid))
        }
        expect(receiver.hits).toHaveLength(1)

        const spawnedAt = Date.now()
        second = await serveWithRetry(dataDir, database)
        const restartedAt = Date.now()
        if (database.mode === "embedded") expect(Number(Fs.readFileSync(lock, "utf8").trim())).not.toBe(servingPid)

        await until(
          "attempt 2 at the receiver after the restart",
          () => receiver.hits.length >= 2 ? true : undefined,
          20_000
        )
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
          {
            signature: hit.headers["x-service-signature"] as string,
            timestamp: hit.headers["x-service-timestamp"] as string
          },
          hit.rawBody
        )).toBe(true)

        // the timer is durable: attempt 2 comes at the original deadline (or at boot, if that was later),
        // not a whole retry delay after the restarted engine began (that would be after spawnedAt + delay)
        const deadline = attempt1At + RETRY_DELAY_MS
        console.log(
          `after attempt 1: kill at ${killedAt - attempt1At} ms, respawn at ${spawnedAt - attempt1At} ms, ` +
            `banner at ${restartedAt - attempt1At} ms, attempt 2 at ${
              hit.at - attempt1At
            } ms (retry delay ${RETRY_DELAY_MS} ms)`
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
        expect(log[1]!.response_excerpt).toBe(JSON.stringify({ message_id: "ext-after-restart" }))

        // the schedule is over: no third attempt
        await sleep(3_000)
        expect(receiver.hits).toHaveLength(2)
        expect(await deliveries(second.api)).toHaveLength(2)

        // with the server stopped, the database itself: the message kept the receiver's message_id
        const stopping = second
        await stop(second)
        second = undefined
        // seen once in CI under load: the lock still there after an orderly stop; say whose it was
        if (Fs.existsSync(lock)) {
          console.log(
            `DIAG lock ${Fs.readFileSync(lock, "utf8")} after stop (exit ${
              stopping.child.exitCode ?? stopping.child.signalCode
            }):\n${stopping.output().slice(-3000)}`
          )
        }
        expect(Fs.existsSync(lock)).toBe(false)
        const stored = await database.query<{ external_message_id: string | null; status: string }>(
          "select external_message_id, status from messages where id = $1",
          [messageId]
        )
        expect(stored).toEqual([{ external_message_id: "ext-after-restart", status: "sent_to_user" }])
      } finally {
        await stop(first)
        await stop(second)
        await receiver.close()
        await database.drop()
        Fs.rmSync(dataDir, { recursive: true, force: true })
      }
    },
    120_000
  )
})
