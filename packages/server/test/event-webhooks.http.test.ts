/**
 * Workspace event webhooks (issue 19, docs/handoff.md "Events") through the real server: registered over
 * REST (secret shown once, another workspace's id is 404), `message.created` for every message and the
 * handoff events posted to a real HTTP receiver with Standard Webhooks signatures checked here with
 * node:crypto, each delivery id delivered exactly once, a failed attempt retried with the same id and
 * logged, and a webhook that asked for some event types gets only those.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHmac } from "node:crypto"
import { failure } from "./support/Contract.js"
import { createStage, del, get, linkWebChannel, ok, post, put } from "./support/Opportunities.js"
import { giveCredits, seedUser } from "./support/TestServer.js"
import { TestServerLive } from "./support/TestServer.js"
import { say } from "./support/WebChat.js"
import { type Behaviour, eventually, type Received, webhookReceiver } from "./support/WebhookReceiver.js"

type Caller = { readonly token: string; readonly workspace_id: number; readonly user_id: number }

const agent = (owner: Caller) =>
  Effect.gen(function*() {
    yield* giveCredits(owner.workspace_id, { credits: 100, is_subscription_active: true })
    const pipeline = ok(
      yield* post(owner, "/api/user/pipelines", {
        name: `Events ${Math.random().toString(36).slice(2, 8)}`,
        agent_type_id: 1,
        ai_model_id: 1,
        language_id: 1,
        reply_debounce_ms: 0
      }),
      "pipelines.create"
    )
    yield* createStage(owner, pipeline.id, "Open", 1)
    return yield* linkWebChannel(owner, pipeline.id)
  })

/** Standard Webhooks: HMAC-SHA256 of "<id>.<timestamp>.<body>" keyed with the base64 bytes after `whsec_`. */
const verified = (secret: string, hit: Received) => {
  const id = hit.headers["webhook-id"] as string
  const timestamp = hit.headers["webhook-timestamp"] as string
  const expected = createHmac("sha256", Buffer.from(secret.slice("whsec_".length), "base64")).update(
    `${id}.${timestamp}.${hit.rawBody}`
  ).digest("base64")
  return (hit.headers["webhook-signature"] as string).split(" ").includes(`v1,${expected}`) &&
    Math.abs(Number(timestamp) - Date.now() / 1000) < 300
}

const bodies = (hits: ReadonlyArray<Received>) => hits.map((h) => JSON.parse(h.rawBody))

layer(TestServerLive({ OUTBOUND_ALLOW_PRIVATE: "true", WEBHOOK_RETRY_DELAY_MS: "500" }), { excludeTestServices: true })(
  "workspace event webhooks",
  (it) => {
    describe("registration", () => {
      it.effect("shows the secret once; lists and gets never; another workspace's id is 404; bad input is 422", () =>
        Effect.gen(function*() {
          const owner = (yield* seedUser()) as Caller
          const other = (yield* seedUser()) as Caller
          const created = ok(
            yield* post(owner, "/api/user/webhooks", {
              url: "https://crm.example.com/parley",
              events: ["conversation.taken"]
            }),
            "eventWebhooks.create"
          )
          expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/)
          expect(created).toMatchObject({
            workspace_id: owner.workspace_id,
            events: ["conversation.taken"],
            is_active: true
          })
          const listed = ok(yield* get(owner, "/api/user/webhooks"), "eventWebhooks.list")
          expect(listed).toHaveLength(1)
          expect(listed[0]).not.toHaveProperty("secret")
          expect(ok(yield* get(owner, `/api/user/webhooks/${created.id}`), "eventWebhooks.get")).not.toHaveProperty(
            "secret"
          )
          for (
            const r of [
              yield* get(other, `/api/user/webhooks/${created.id}`),
              yield* put(other, `/api/user/webhooks/${created.id}`, { is_active: false }),
              yield* del(other, `/api/user/webhooks/${created.id}`),
              yield* get(other, `/api/user/webhooks/${created.id}/deliveries`)
            ]
          ) expect(r.status).toBe(404)
          expect(ok(yield* get(other, "/api/user/webhooks"), "eventWebhooks.list")).toHaveLength(0)
          const bad = yield* post(owner, "/api/user/webhooks", { url: "ftp://x", events: ["message.deleted"] })
          expect(bad.status).toBe(422)
          expect(failure(bad).validation.map((v) => v.field).sort()).toEqual(["events.0", "url"])
          expect(
            ok(yield* put(owner, `/api/user/webhooks/${created.id}`, { events: [] }), "eventWebhooks.update").events
          ).toEqual([])
          expect(ok(yield* del(owner, `/api/user/webhooks/${created.id}`), "eventWebhooks.delete")).toEqual({
            id: created.id,
            deleted: true
          })
          expect((yield* get(owner, `/api/user/webhooks/${created.id}`)).status).toBe(404)
        }))
    })

    describe("delivery", () => {
      it.scoped("posts message and handoff events, signed, each delivery id once; a failure is retried with the same id and logged", () =>
        Effect.gen(function*() {
          let behaviour: Behaviour = "ok"
          // what each hit was answered, in the order of receiver.received
          const answered: Array<Behaviour> = []
          const receiver = yield* webhookReceiver(() => {
            answered.push(behaviour)
            return behaviour
          })
          const filtered = yield* webhookReceiver(() => "ok")
          const owner = (yield* seedUser()) as Caller
          const channel = yield* agent(owner)
          const hook = ok(
            yield* post(owner, "/api/user/webhooks", { url: receiver.url, description: "CRM" }),
            "eventWebhooks.create"
          )
          const handoffOnly = ok(
            yield* post(owner, "/api/user/webhooks", {
              url: filtered.url,
              events: ["conversation.handoff_requested", "conversation.taken", "conversation.returned"]
            }),
            "eventWebhooks.create"
          )

          yield* say(channel, "events-1", "Hello there")
          const first = yield* eventually(
            Effect.sync(() => {
              const seen = bodies(receiver.received).filter((b) => b.type === "message.created")
              return seen.length >= 2
                ? seen.sort((a, b) => a.data.created_at.localeCompare(b.data.created_at))
                : undefined
            }),
            20_000
          )
          expect(first.map((b) => b.data.sender)).toEqual(["contact", "ai"])
          expect(first[0]).toMatchObject({ type: "message.created", data: { role: "user", text: "Hello there" } })
          const conversationId = first[0].data.conversation_id

          ok(
            yield* post(owner, `/api/user/conversations/${conversationId}/handoff`, { action: "take" }),
            "conversations.handoff"
          )
          behaviour = "fail"
          ok(
            yield* post(owner, `/api/user/${conversationId}/messages`, { message: "An operator here." }),
            "messages.send"
          )
          const failedOnce = yield* eventually(
            Effect.sync(() => receiver.received.find((h) => JSON.parse(h.rawBody).data?.text === "An operator here.")),
            20_000
          )
          behaviour = "ok"
          ok(
            yield* post(owner, `/api/user/conversations/${conversationId}/handoff`, { action: "return", note: "Done" }),
            "conversations.handoff"
          )

          const types = [
            "message.created",
            "message.created",
            "conversation.taken",
            "message.created",
            "conversation.returned"
          ]
          const accepted = () => receiver.received.filter((_, i) => answered[i] === "ok")
          yield* eventually(Effect.sync(() => (accepted().length >= types.length ? true : undefined)), 30_000)
          for (const hit of receiver.received) expect(verified(hook.secret, hit)).toBe(true)
          // every id accepted exactly once; what was refused came again with the same id
          const acceptedIds = accepted().map((h) => h.headers["webhook-id"])
          expect(new Set(acceptedIds).size).toBe(acceptedIds.length)
          expect(bodies(accepted()).map((b) => b.type).sort()).toEqual([...types].sort())
          for (const [i, hit] of receiver.received.entries()) {
            if (answered[i] !== "ok") expect(acceptedIds).toContain(hit.headers["webhook-id"])
          }
          const retried = receiver.received.filter((h) => h.headers["webhook-id"] === failedOnce.headers["webhook-id"])
          expect(retried.length).toBe(2)
          const operatorEvent = bodies(retried)[1]
          expect(operatorEvent.data).toMatchObject({
            sender: "operator",
            sender_id: owner.user_id,
            conversation_id: conversationId
          })
          const returned = bodies(receiver.received).find((b) => b.type === "conversation.returned")
          expect(returned.data).toMatchObject({
            conversation_id: conversationId,
            action: "return",
            note: "Done",
            to_state: "ai"
          })

          // the sender logs an attempt after its answer arrives, so the receiver can see the retry first
          const retriedLog = yield* eventually(
            Effect.map(get(owner, `/api/user/webhooks/${hook.id}/deliveries`), (r) => {
              const entry = ok(r, "eventWebhooks.deliveries").find((d) =>
                d.event_id === failedOnce.headers["webhook-id"]
              )
              return entry?.status === "delivered" ? entry : undefined
            }),
            20_000
          )
          expect(retriedLog).toMatchObject({
            status: "delivered",
            attempts: 2,
            last_status_code: 200,
            type: "message.created"
          })

          // the handoff-only webhook got the two handoff events and no message
          yield* eventually(Effect.sync(() => (filtered.received.length >= 2 ? true : undefined)), 20_000)
          expect(bodies(filtered.received).map((b) => b.type).sort()).toEqual([
            "conversation.returned",
            "conversation.taken"
          ])
          for (const hit of filtered.received) expect(verified(handoffOnly.secret, hit)).toBe(true)
        }))
    })
  }
)
