/**
 * Issue 38, WhatsApp message templates: against the local fake Graph API, which lists the business account's
 * templates with Meta's paging and refuses a template send as Meta does (132001 unknown or not approved, 132000 the
 * wrong parameter count). The listing (cached, scoped to the caller's workspace), an operator's template outside
 * the 24-hour window with `{{variables}}` in its parameters, each bad template refused with 422 naming its field,
 * and a handoff bridge after the window closed sent as the pipeline's template. Followup steps and openings as
 * templates: followups-whatsapp.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { API_VERSION, fakeGraph, graphState, inbound, postWebhook, sends, webhookFor } from "./support/FakeGraph.js"
import {
  type Caller,
  createStage,
  expect422,
  freshPhone,
  get,
  ok,
  post,
  put,
  sqlRows
} from "./support/Opportunities.js"
import { giveCredits, seedUser, TestServerLive } from "./support/TestServer.js"
import { eventually } from "./support/WebhookReceiver.js"

const APP_SECRET = "templates-app-secret"
const graph = graphState("106540352242931", "EAAG-templates-token")

const Server = Layer.unwrapScoped(
  Effect.map(fakeGraph(graph), (url) => TestServerLive({ META_GRAPH_API_URL: url, ENGINE_SWEEP_INTERVAL_MS: "1000" }))
)

type Owner = Caller & { readonly workspace_id: number }
interface WhatsAppChannel {
  readonly id: number
  readonly webhook_url: string
}

const credentials = (extra: Record<string, unknown> = {}) => ({
  phone_number_id: graph.phoneNumberId,
  access_token: graph.token,
  app_secret: APP_SECRET,
  api_version: API_VERSION,
  business_account_id: graph.businessAccountId,
  ...extra
})

const connect = (pipelineSettings: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const owner: Owner = yield* seedUser()
    yield* giveCredits(owner.workspace_id)
    const pipeline = ok(
      yield* post(owner, "/api/user/pipelines", { name: "Support", agent_type_id: 1, ai_model_id: 1, language_id: 1 }),
      "pipelines.create"
    )
    ok(
      yield* put(owner, `/api/user/pipelines/${pipeline.id}`, { reply_debounce_ms: 0, ...pipelineSettings }),
      "pipelines.update"
    )
    yield* createStage(owner, pipeline.id, "New", 1)
    const channel = yield* whatsappChannel(owner, pipeline.id)
    return { owner, pipeline, channel }
  })

/** A WhatsApp channel of `owner`'s on the fake, its credentials changed by `extra`. */
const whatsappChannel = (owner: Owner, pipelineId: number, extra: Record<string, unknown> = {}) =>
  Effect.map(
    post(owner, "/api/user/channels", { kind: "whatsapp", pipeline_id: pipelineId, credentials: credentials(extra) }),
    (created) => ok(created, "channels.create") as unknown as WhatsAppChannel
  )

/**
 * A contact whose latest message Meta sent 25 hours ago (delivered late): the window has closed. Waits for the turn to
 * be handled with `reason` (no reply).
 */
const lateContact = (channel: WhatsAppChannel, reason: string) =>
  Effect.gen(function*() {
    const waId = freshPhone()
    const said = yield* postWebhook(
      channel.webhook_url,
      APP_SECRET,
      webhookFor(graph, [{
        messages: [inbound(waId, `wamid.${waId}.1`, Date.now() - 25 * 3_600_000, {
          type: "text",
          text: { body: "Hello? I need a refund" }
        })],
        names: { [waId]: "Dana" }
      }])
    )
    expect(said.status).toBe(200)
    const [row] = yield* eventually(
      Effect.map(
        sqlRows<{ conversation_id: number; handled_reason: string | null }>`
          select conversation_id::int, handled_reason from messages where external_message_id = ${`wamid.${waId}.1`}`,
        (rows) => rows[0]?.handled_reason ? rows : undefined
      ),
      20_000
    )
    expect(row!.handled_reason).toBe(reason)
    return { waId, conversationId: row!.conversation_id }
  })

const templateSends = (waId: string) =>
  sends(graph).filter((r) => r.body.to === waId && r.body.type === "template").map((r) => r.body.template)

const listings = () => graph.requests.filter((r) => r.path.endsWith("/message_templates")).length

layer(Server, { excludeTestServices: true })("WhatsApp templates", (it) => {
  it.effect("lists the account's templates (cached), for the caller's workspace only, and says what is missing", () =>
    Effect.gen(function*() {
      const { channel, owner, pipeline } = yield* connect()
      const before = listings()
      const listed = ok(yield* get(owner, `/api/user/channels/${channel.id}/templates`), "channels.templates")
      expect(listed).toEqual([
        {
          name: "hello_world",
          language: "en_US",
          status: "APPROVED",
          category: "UTILITY",
          body:
            "Welcome and congratulations!! This message demonstrates your ability to send a WhatsApp message notification.",
          parameters: 0
        },
        {
          name: "order_followup",
          language: "en",
          status: "APPROVED",
          category: "UTILITY",
          body: "Hi {{1}}, your order {{2}} is waiting. Reply here to finish it.",
          parameters: 2
        },
        {
          name: "spring_sale",
          language: "en",
          status: "PENDING",
          category: "MARKETING",
          body: "Our spring sale starts today, {{1}}!",
          parameters: 1
        }
      ])
      const call = graph.requests.filter((r) => r.path.endsWith("/message_templates")).at(-1)!
      expect(call).toMatchObject({
        method: "GET",
        path: `/${API_VERSION}/${graph.businessAccountId}/message_templates`,
        token: graph.token
      })
      // the second read is served from the cache
      ok(yield* get(owner, `/api/user/channels/${channel.id}/templates`), "channels.templates")
      expect(listings()).toBe(before + 1)

      // every page is read (Meta's paging link carries the token; Parley sends it as the bearer header only)
      graph.templates.push(...Array.from({ length: 120 }, (_, i) => ({
        id: String(5000 + i),
        name: `bulk_${i}`,
        language: "en",
        status: "APPROVED" as const,
        category: "UTILITY" as const,
        components: [{ type: "BODY", text: "Hello" }]
      })))
      const other = yield* whatsappChannel(owner, pipeline.id, { verify_token: "another-verify-token" })
      const paged = ok(yield* get(owner, `/api/user/channels/${other.id}/templates`), "channels.templates")
      expect(paged).toHaveLength(123)
      const pages = graph.requests.filter((r) => r.path.endsWith("/message_templates")).slice(-2)
      expect(pages).toHaveLength(2)
      expect(pages.every((r) => r.token === graph.token)).toBe(true)
      expect(pages[1]!.query).toMatch(/after=/)
      expect(pages[1]!.query).not.toMatch(/access_token/)
      graph.templates.splice(3)

      // another workspace cannot read them
      const stranger: Owner = yield* seedUser()
      expect((yield* get(stranger, `/api/user/channels/${channel.id}/templates`)).status).toBe(404)

      // a channel without the business account's id, a web channel, a token Meta refuses
      const noAccount = yield* whatsappChannel(owner, pipeline.id, { business_account_id: undefined })
      const missing = yield* get(owner, `/api/user/channels/${noAccount.id}/templates`)
      expect422(missing, ["credentials"])
      expect(JSON.stringify(missing.body)).toMatch(/business_account_id/)
      const web = ok(
        yield* post(owner, "/api/user/channels", { kind: "web", pipeline_id: pipeline.id }),
        "channels.create"
      )
      expect422(yield* get(owner, `/api/user/channels/${web.id}/templates`), ["kind"])
      const refused = yield* whatsappChannel(owner, pipeline.id, { access_token: "EAAG-revoked" })
      const failed = yield* get(owner, `/api/user/channels/${refused.id}/templates`)
      expect(failed.status).toBe(502)
      expect(JSON.stringify(failed.body)).toMatch(/could not list the templates: .*access token/)
    }))

  it.effect("an operator sends a template outside the window, with {{variables}} filled; a bad one gets a 422", () =>
    Effect.gen(function*() {
      const { channel, owner, pipeline } = yield* connect()
      ok(
        yield* post(owner, `/api/user/pipelines/${pipeline.id}/variables`, {
          name: "order_ref",
          value: "A-17",
          type: "fixed",
          is_required: false
        }),
        "automation.createVariable"
      )
      const { conversationId, waId } = yield* lateContact(channel, "outside_service_window")
      const path = `/api/user/${conversationId}/messages`

      // refused before anything is stored or sent: each problem names its field
      const template = (t: Record<string, unknown>) => post(owner, path, { template: t })
      expect422(yield* template({ name: "Bad Name!", language: "english" }), ["template.name", "template.language"])
      expect422(yield* template({ name: "no_such_template", language: "en" }), ["template.name"])
      expect422(yield* template({ name: "spring_sale", language: "en", parameters: ["Dana"] }), ["template.name"])
      expect422(yield* template({ name: "order_followup", language: "en", parameters: ["Dana"] }), [
        "template.parameters"
      ])
      expect422(yield* template({ name: "order_followup", language: "en", parameters: ["{{nothing}}", "x"] }), [
        "template.parameters"
      ])
      expect422(
        yield* post(owner, path, { message: "Hi", template: { name: "hello_world", language: "en_US" } }),
        ["message"]
      )
      const stranger: Owner = yield* seedUser()
      expect((yield* post(stranger, path, { template: { name: "hello_world", language: "en_US" } })).status).toBe(403)
      expect(templateSends(waId)).toEqual([])

      const sent = ok(
        yield* template({ name: "order_followup", language: "en", parameters: ["Dana", "{{order_ref}}"] }),
        "messages.send"
      )
      expect(sent).toMatchObject({
        status: "sent_to_user",
        message: "Hi Dana, your order A-17 is waiting. Reply here to finish it.",
        external_message_id: expect.stringMatching(/^wamid\.fake/)
      })
      expect(templateSends(waId)).toEqual([{
        name: "order_followup",
        language: { code: "en" },
        components: [{ type: "body", parameters: [{ type: "text", text: "Dana" }, { type: "text", text: "A-17" }] }]
      }])
    }))

  it.effect("a handoff bridge after the window closed goes as the pipeline's template; without one, none goes", () =>
    Effect.gen(function*() {
      const { channel } = yield* connect({
        handoff_keywords: ["refund"],
        handoff_bridge_template: { name: "hello_world", language: "en_US" }
      })
      const { conversationId, waId } = yield* lateContact(channel, "waiting_for_person")
      const bridge = yield* eventually(
        Effect.map(
          sqlRows<{ message: string; status: string }>`
            select message, status from messages where conversation_id = ${conversationId} and call_type = 'handoff_bridge'`,
          (rows) => rows[0]?.status === "sent_to_user" ? rows[0] : undefined
        ),
        20_000
      )
      expect(bridge.message).toMatch(/^Welcome and congratulations!!/)
      expect(templateSends(waId).map((t) => t.name)).toEqual(["hello_world"])
      expect(sends(graph).filter((r) => r.body.to === waId && r.body.type !== "template")).toEqual([])

      // the same without a template: the contact is not told to wait (no free-form message may go)
      const plain = yield* connect({ handoff_keywords: ["refund"] })
      const other = yield* lateContact(plain.channel, "waiting_for_person")
      // the handoff's summary is written after its bridge was decided on
      yield* eventually(
        Effect.map(
          sqlRows<{ summary: string | null }>`
            select handoff_summary as summary from conversations where id = ${other.conversationId}`,
          (rows) => rows[0]?.summary ? true : undefined
        ),
        20_000
      )
      expect(
        yield* sqlRows`select 1 from messages where conversation_id = ${other.conversationId} and role = 'assistant'`
      ).toEqual([])
      expect(sends(graph).filter((r) => r.body.to === other.waId)).toEqual([])
    }))
})
