/**
 * Issue 38, "try it without a Meta account": a WhatsApp channel created with `credentials: {"simulator": true}` talks
 * to the simulator the server ships. Through the real server only: the contact's phone page, a message typed there
 * reaching Parley as a signed webhook, the agent's reply reaching the simulated Graph API, and the receipts the
 * simulator sends back moving the reply to `read`.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createStage, expect422, get, ok, post, put, sqlRows } from "./support/Opportunities.js"
import { fetchJson, giveCredits, seedUser, TestServerLive } from "./support/TestServer.js"
import { eventually } from "./support/WebhookReceiver.js"

interface SimulatedChannel {
  readonly id: number
  readonly simulator_url: string
  readonly webhook_url: string
}

layer(TestServerLive(), { excludeTestServices: true })("the WhatsApp simulator", (it) => {
  it.effect("plays the contact's phone: signed webhooks in, the agent's reply out, receipts back to read", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      yield* giveCredits(owner.workspace_id)
      const pipeline = ok(
        yield* post(owner, "/api/user/pipelines", { name: "Demo", agent_type_id: 1, ai_model_id: 1, language_id: 1 }),
        "pipelines.create"
      )
      ok(yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { reply_debounce_ms: 0 }), "pipelines.update")
      yield* createStage(owner, pipeline.id, "New", 1)
      expect422(
        yield* post(owner, "/api/user/channels", { kind: "whatsapp", credentials: { simulator: false } }),
        ["credentials.simulator"]
      )
      const channel = ok(
        yield* post(owner, "/api/user/channels", {
          kind: "whatsapp",
          pipeline_id: pipeline.id,
          credentials: { simulator: true }
        }),
        "channels.create"
      ) as unknown as SimulatedChannel
      expect(channel.simulator_url).toMatch(/\/simulator\/whatsapp\/wh_[A-Za-z0-9]+$/)
      const checked = ok(yield* post(owner, `/api/user/channels/${channel.id}/check`, {}), "channels.check")
      expect(checked).toMatchObject({ ok: true, account: { verified_name: "Parley simulator" } })

      const page = yield* Effect.promise(() => fetch(channel.simulator_url))
      expect(page.status).toBe(200)
      expect(page.headers.get("content-type")).toContain("text/html")
      expect((yield* Effect.promise(() => fetch(channel.simulator_url.replace(/wh_\w+$/, "wh_none")))).status).toBe(404)

      const said = yield* fetchJson(`${channel.simulator_url}/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ wa_id: "4915112345678", name: "Jane", text: "What does the annual plan cost?" })
      })
      expect(said.status).toBe(200)
      expect(said.body).toMatchObject({ webhook_status: 200 })
      const bad = yield* fetchJson(`${channel.simulator_url}/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ wa_id: "+49 151", text: "" })
      })
      expect(bad.status).toBe(422)

      // the reply reaches the simulated phone and is read there
      const thread = yield* eventually(
        Effect.map(
          fetchJson(`${channel.simulator_url}/thread?wa_id=4915112345678`),
          (r) => {
            const messages =
              (r.body as { messages: Array<{ direction: string; status: string; text: string }> }).messages
            return messages.some((m) => m.direction === "out" && m.status === "read") ? messages : undefined
          }
        ),
        20_000
      )
      expect(thread[0]).toMatchObject({ direction: "in", text: "What does the annual plan cost?" })
      const reply = thread.find((m) => m.direction === "out")!
      const rows = yield* eventually(
        Effect.map(
          sqlRows<{ role: string; message: string; delivery_status: string | null; external_chat_id: string }>`
            select role, message, delivery_status, external_chat_id from messages
            where channel_id = ${channel.id} order by created_at, id`,
          (rows) => rows[1]?.delivery_status === "read" ? rows : undefined
        ),
        20_000
      )
      expect(rows.map((r) => [r.role, r.external_chat_id])).toEqual([["user", "4915112345678"], [
        "assistant",
        "4915112345678"
      ]])
      expect(rows[1]!.message).toBe(reply.text)

      // the simulated account's templates: listed as Meta lists them, and one sent shows on the phone as its body
      const templates = ok(yield* get(owner, `/api/user/channels/${channel.id}/templates`), "channels.templates")
      expect(templates.filter((t) => t.status === "APPROVED").map((t) => [t.name, t.language, t.parameters])).toEqual([
        ["hello_world", "en_US", 0],
        ["checking_in", "en", 1],
        ["we_are_on_it", "en", 1]
      ])
      const conversation = yield* sqlRows<{ id: number }>`
        select conversation_id::int as id from messages where channel_id = ${channel.id} limit 1`
      const sent = ok(
        yield* post(owner, `/api/user/${conversation[0]!.id}/messages`, {
          template: { name: "checking_in", language: "en", parameters: ["Jane"] }
        }),
        "messages.send"
      )
      const text = "Hi Jane, just checking in: is there anything else I can help you with?"
      expect(sent).toMatchObject({ status: "sent_to_user", message: text })
      yield* eventually(
        Effect.map(
          fetchJson(`${channel.simulator_url}/thread?wa_id=4915112345678`),
          // read on the phone: no receipt is still on its way when the suite stops the server
          (r) =>
            (r.body as { messages: Array<{ text: string; status: string }> }).messages.some((m) =>
              m.text === text && m.status === "read"
            ) || undefined
        ),
        20_000
      )
    }))
})
