/**
 * Exactly once across a crash: killing the process in the middle of a reply and restarting produces the
 * reply once, not zero or two times. The real `parley serve` runs as a child process on a temporary data
 * dir (its embedded database, or DATABASE_URL in the postgres project) with a local model that takes 4 s
 * per call; a contact writes, and 1.5 s later (inside the model
 * call, nothing stored yet) the server is killed hard (SIGKILL, no shutdown). A second `parley serve` on
 * the same database, with an instant model, must store one reply to that message and deliver it to the
 * channel's webhook once, and nothing more may arrive afterwards.
 */
import { describe, expect, it } from "@effect/vitest"
import { ReceiverAnswer, verifyServiceSignature } from "@parley/domain"
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
import { bodyAs, ok } from "./support/Contract.js"

const MODEL_LATENCY_MS = 4_000
const KILL_AFTER_MS = 1_500

/** The channel's reply webhook: records every request, answers 200. */
const startWebhook = () =>
  startReceiver((_, hits) => ({ status: 200, body: JSON.stringify({ message_id: `ext-${hits.length}` }) }))

const serveWithModel = (dataDir: string, database: ChildDatabase, modelLatencyMs: number) =>
  serve(dataDir, { ...database.env, LOCAL_MODEL_LATENCY_MS: String(modelLatencyMs), ENGINE_SWEEP_INTERVAL_MS: "2000" })

interface Demo {
  readonly token: string
  readonly pipeline_id: number
  readonly workspace_id: number
  readonly channel: { readonly id: number; readonly client_id: string; readonly client_secret: string }
}

describe("a reply across a process restart", () => {
  it(
    "killing the process in the middle of a reply and restarting produces the reply once, not zero or two times",
    async () => {
      const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-reply-restart-"))
      const database = await childDatabase(dataDir)
      const receiver = await startWebhook()
      let first: Running | undefined
      let second: Running | undefined
      try {
        first = await serveWithModel(dataDir, database, MODEL_LATENCY_MS)
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
        expect(ok(pipeline, "pipelines.update").reply_debounce_ms).toBe(0)
        const updated = await call(`${first.api}/api/user/channels/${channel.id}`, {
          method: "PUT",
          token,
          body: JSON.stringify({ callback_url: receiver.url })
        })
        expect(updated.status).toBe(200)
        expect(ok(updated, "channels.update").callback_url).toBe(receiver.url)
        const me = await call(`${first.api}/api/user/me`, { token })
        expect(me.status).toBe(200)

        const contactId = "visitor-reply-restart"
        const history = async (api: string) => {
          const r = await call(`${api}/api/user/messages/webchat?contact_id=${contactId}&per_page=100`, {
            basic: client
          })
          expect(r.status).toBe(200)
          return ok(r, "webChat.history").data
        }

        const t0 = Date.now()
        const sent = await call(`${first.receiver}/web-chat/message`, {
          method: "POST",
          basic: client,
          body: JSON.stringify({
            contact_id: contactId,
            message: "Hello, what does Parley do and can I book a demo call?"
          })
        })
        expect(sent.status).toBe(200)
        const answer = bodyAs(sent, ReceiverAnswer).data
        expect(answer).not.toBeNull()
        const messageId = answer!.message_id
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
        second = await serveWithModel(dataDir, database, 0)
        const restartedAt = Date.now()

        await until(
          "the reply at the webhook after the restart",
          () => receiver.hits.length >= 1 ? true : undefined,
          15_000
        )
        const hit = receiver.hits[0]!
        console.log(
          `after the message was stored: kill at ${killedAt - storedAt} ms, respawn at ${spawnedAt - storedAt} ms, ` +
            `banner at ${restartedAt - storedAt} ms, webhook at ${hit.at - storedAt} ms (POST took ${storedAt - t0} ms)`
        )
        const body = JSON.parse(hit.rawBody)
        expect(body).toMatchObject({ event: "message", client_id: channel.client_id, contact_id: contactId })
        expect(verifyServiceSignature(
          channel.client_secret,
          {
            signature: hit.headers["x-service-signature"] as string,
            timestamp: hit.headers["x-service-timestamp"] as string
          },
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

        // with the server stopped, the database itself: one reply, to that message, delivered once
        await stop(second)
        second = undefined
        const replies = await database.query<
          { id: string; status: string; in_reply_to: string | null; call_type: string }
        >(
          `select m.id, m.status, m.in_reply_to, m.call_type from messages m
         where m.conversation_id = (select conversation_id from messages where id = $1) and m.role = 'assistant'
         order by m.created_at, m.id`,
          [messageId]
        )
        expect(replies).toEqual([{
          id: body.message_id,
          status: "sent_to_user",
          in_reply_to: messageId,
          call_type: "ai"
        }])
        const contact = await database.query<{ handled_reason: string | null }>(
          "select handled_reason from messages where id = $1",
          [messageId]
        )
        expect(contact).toEqual([{ handled_reason: "replied" }])
        const attempts = await database.query<{ attempt: number; status_code: number | null }>(
          "select attempt, status_code from webhook_deliveries where message_id = $1 order by run, attempt",
          [body.message_id]
        )
        expect(attempts).toEqual([{ attempt: 1, status_code: 200 }])
      } finally {
        await stop(first)
        await stop(second)
        await receiver.close()
        await database.drop()
        Fs.rmSync(dataDir, { recursive: true, force: true })
      }
    },
    180_000
  )
})
