/**
 * Issue 38, nothing lost on WhatsApp: the real `parley serve` as a child process, against the fake Graph API. The
 * agent's reply is stored and its send is on its way to the Graph API (which takes it and never answers) when the
 * server is killed hard (SIGKILL). A second `parley serve` on the same database sends that reply, once more, and the
 * delivery log holds both attempts: the first marked interrupted, the second answered.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { call, childDatabase, crash, type Running, serve, stop, until } from "./support/ChildServer.js"
import { ok } from "./support/Contract.js"
import { API_VERSION, fakeGraph, graphState, inbound, postWebhook, sends, webhookFor } from "./support/FakeGraph.js"

const APP_SECRET = "restart-app-secret"

describe("a WhatsApp reply across a process restart", () => {
  it("killed between storing the reply and the Graph API's answer, the reply is sent after the restart", async () => {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-whatsapp-restart-"))
    const database = await childDatabase(dataDir)
    const graph = graphState("106540352242924", "EAAG-restart-token")
    const scope = Effect.runSync(Scope.make())
    const graphUrl = await Effect.runPromise(Scope.extend(fakeGraph(graph), scope))
    const env = { ...database.env, META_GRAPH_API_URL: graphUrl, ENGINE_SWEEP_INTERVAL_MS: "2000" }
    let first: Running | undefined
    let second: Running | undefined
    try {
      first = await serve(dataDir, env)
      const demo = JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8")) as {
        token: string
        pipeline_id: number
      }
      const { token } = demo
      const pipeline = await call(`${first.api}/api/user/pipelines/${demo.pipeline_id}`, {
        method: "PUT",
        token,
        body: JSON.stringify({ reply_debounce_ms: 0 })
      })
      expect(pipeline.status).toBe(200)
      const created = await call(`${first.api}/api/user/channels`, {
        method: "POST",
        token,
        body: JSON.stringify({
          kind: "whatsapp",
          pipeline_id: demo.pipeline_id,
          credentials: {
            phone_number_id: graph.phoneNumberId,
            access_token: graph.token,
            app_secret: APP_SECRET,
            api_version: API_VERSION
          }
        })
      })
      expect(created.status).toBe(200)
      const channel = ok(created, "channels.create") as unknown as { webhook_url: string }

      // the Graph API takes the send and never answers: the reply is stored, its attempt logged, in flight
      graph.hang = true
      const waId = "4915198765432"
      const posted = await Effect.runPromise(postWebhook(
        channel.webhook_url,
        APP_SECRET,
        webhookFor(graph, [{
          messages: [
            inbound(waId, "wamid.restart.1", Date.now(), { type: "text", text: { body: "Can I host it myself?" } })
          ]
        }])
      ))
      expect(posted.status).toBe(200)
      await until("the reply's send at the Graph API", () => sends(graph).length >= 1 ? true : undefined, 20_000)
      const inFlight = sends(graph)[0]!.body.text.body as string
      await crash(first, dataDir)
      first = undefined

      graph.hang = false
      second = await serve(dataDir, env)
      await until("the reply sent again after the restart", () => sends(graph).length >= 2 ? true : undefined, 30_000)
      expect(sends(graph).map((r) => r.body.text.body)).toEqual([inFlight, inFlight])

      await until("the reply recorded as sent", async () => {
        const rows = await database.query<{ status: string }>(
          "select status from messages where role = 'assistant' and external_chat_id = $1",
          [waId]
        )
        return rows[0]?.status === "sent_to_user" ? true : undefined
      }, 20_000)
      await stop(second)
      second = undefined
      const replies = await database.query<{ id: string; message: string; external_message_id: string }>(
        "select id, message, external_message_id from messages where role = 'assistant' and external_chat_id = $1",
        [waId]
      )
      expect(replies).toHaveLength(1)
      expect(replies[0]!.message).toBe(inFlight)
      expect(replies[0]!.external_message_id).toMatch(/^wamid\.fake/)
      const attempts = await database.query<{ status_code: number | null; error: string | null }>(
        "select status_code, error from webhook_deliveries where message_id = $1 order by id",
        [replies[0]!.id]
      )
      expect(attempts).toEqual([
        { status_code: null, error: expect.stringMatching(/^Interrupted/) },
        { status_code: 200, error: null }
      ])
    } finally {
      await stop(first)
      await stop(second)
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await database.drop()
      Fs.rmSync(dataDir, { recursive: true, force: true })
    }
  }, 180_000)
})
