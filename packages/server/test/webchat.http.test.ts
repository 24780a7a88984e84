/**
 * The web-chat channel end to end (SPEC.md 2.4, 2.5, 2.8, 4.4, 5.4, 7, 8): Initiate and the history on the
 * api host, inbound messages on the receiver host, signed file URLs, all through `fetch` with Basic
 * credentials and real multipart bodies.
 */
import { describe, expect, layer } from "@effect/vitest"
import { conversationChannel, ReceiverAnswer, ReceiverRefusal, verifySocketToken } from "@parley/domain"
import { Effect, Schema } from "effect"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import { AppSecret } from "../src/config/AppSecret.js"
import { FileStorage } from "../src/files/FileStorage.js"
import { type ApiResponse, bodyAs, failure } from "./support/Contract.js"
import {
  type Caller,
  count,
  createPipeline,
  createStage,
  expect422,
  expectStatus,
  funnel,
  get,
  ok,
  post,
  put
} from "./support/Opportunities.js"
import { fetchJson, giveCredits, seedUser, TestServer, TestServerLive } from "./support/TestServer.js"
import { basic, basicAuth, type WebCredentials, webCredentials } from "./support/WebChat.js"

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/

const fetchReply = fetchJson

const authOf = (c: WebCredentials) => ({ authorization: basic(c) })
type Auth = Record<string, string>

const initiate = (auth: Auth, body: Record<string, unknown> = {}) =>
  Effect.flatMap(TestServer, ({ baseUrl }) =>
    fetchReply(`${baseUrl}/api/user/web-chat/initiate`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body)
    }))

/** A JSON body, or a FormData sent as multipart/form-data (fetch sets the boundary). */
const send = (auth: Auth, body: Record<string, unknown> | FormData, headers: Record<string, string> = {}) =>
  Effect.flatMap(TestServer, ({ receiverUrl }) =>
    fetchReply(`${receiverUrl}/web-chat/message`, {
      method: "POST",
      headers: body instanceof FormData
        ? { ...auth, ...headers }
        : { ...auth, ...headers, "content-type": "application/json" },
      body: body instanceof FormData ? body : JSON.stringify(body)
    }))

const history = (auth: Auth, query: Record<string, string | number>) =>
  Effect.flatMap(TestServer, ({ baseUrl }) =>
    fetchReply(
      `${baseUrl}/api/user/messages/webchat?${new URLSearchParams(
        Object.entries(query).map(([k, v]) => [k, String(v)])
      )}`,
      { headers: { ...auth, accept: "application/json" } }
    ))

/** A JSON object with all its keys, as sent (a decoded struct keeps only the fields it names). */
const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** The receiver's own envelope: exactly `{status, message, data}`. */
const received = (r: ApiResponse): string => {
  if (r.status !== 200) expect(r.body).toBe("a 200 answer")
  expect(Object.keys(bodyAs(r, JsonObject)).sort()).toEqual(["data", "message", "status"])
  const answer = bodyAs(r, ReceiverAnswer)
  expect(answer.status).toBe(true)
  expect(typeof answer.message).toBe("string")
  expect(Object.keys(bodyAs(r, Schema.Struct({ data: JsonObject })).data)).toEqual(["message_id"])
  expect(answer.data!.message_id).toMatch(ULID)
  return answer.data!.message_id
}

const refused = (r: ApiResponse, status: number, message?: string) => {
  expect(r.status).toBe(status)
  const refusal = bodyAs(r, ReceiverRefusal)
  expect(refusal.status).toBe(false)
  expect(r.body).not.toHaveProperty("code")
  if (message !== undefined) expect(refusal.message).toBe(message)
  return refusal
}

const pageOf = (r: ApiResponse) => ok(r, "webChat.history")

/** A web or widget channel: created with its client id and secret. */
const createChannel = (who: Caller, body: Record<string, unknown>) =>
  Effect.map(post(who, "/api/user/channels", body), (r) => webCredentials(ok(r, "channels.create")))

/** An owner with credits, the funnel pipeline ("Inbound" first by order) and a web channel on it. */
const webChannel = (channel: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const owner = yield* seedUser()
    yield* giveCredits(owner.workspace_id)
    const { inbound, pipeline } = yield* funnel(owner)
    const created = yield* createChannel(owner, { kind: "web", pipeline_id: pipeline.id, ...channel })
    return { owner, pipeline, inbound, channel: created, auth: authOf(created) }
  })

const opportunitiesOf = (who: Caller, pipelineId: number) =>
  Effect.map(
    get(who, `/api/user/opportunities?pipeline_id=${pipelineId}&per_page=100`),
    (r) => ok(r, "opportunities.list").data
  )

const opportunityOfContact = (who: Caller, pipelineId: number, contactKey: string) =>
  Effect.map(opportunitiesOf(who, pipelineId), (all) => {
    const mine = all.filter((o) => o.contact_identifier === contactKey)
    expect(mine).toHaveLength(1)
    return mine[0]!
  })

const file = (bytes: Uint8Array<ArrayBuffer> | string, type: string) => new Blob([bytes], { type })

const randomBytes = (n: number) => {
  const bytes = new Uint8Array(n)
  for (let i = 0; i < n; i++) bytes[i] = (i * 7919 + 13) % 251
  return bytes
}

const download = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    return {
      status: response.status,
      type: response.headers.get("content-type"),
      bytes: new Uint8Array(await response.arrayBuffer())
    }
  })

/** Files under the storage root for a channel's prefix. */
const storedUnder = (clientId: string) =>
  Effect.map(FileStorage, (storage) => {
    const dir = Path.join(storage.root, "uploads", clientId)
    return Fs.existsSync(dir)
      ? Fs.readdirSync(dir, { recursive: true }).filter((f) => Fs.statSync(Path.join(dir, String(f))).isFile())
      : []
  })

const filesRows = (channelId: number) => count`select count(*) as n from files where channel_id = ${channelId}`

layer(TestServerLive())("web chat", (it) => {
  describe("initiate", () => {
    it.effect("returns the web-chat session: echoed contact_id, conversation, receiver URL, socket channel and token", () =>
      Effect.gen(function*() {
        const { auth } = yield* webChannel()
        const { baseUrl, receiverUrl } = yield* TestServer
        const secrets = yield* AppSecret
        const r = yield* initiate(auth, { contact_id: "visitor-42" })
        expect(r.status).toBe(200)
        expect(r.body).toMatchObject({ status: true, code: 200, validation: [], message: "Conversation initiated." })
        const session = ok(r, "webChat.initiate")
        expect(Object.keys(session).sort()).toEqual(
          ["app_key", "channel", "contact_id", "conversation_id", "event", "messages_webhook", "socket_url", "token"]
        )
        expect(session.contact_id).toBe("visitor-42")
        expect(Number.isInteger(session.conversation_id)).toBe(true)
        expect(session.messages_webhook).toBe(receiverUrl)
        expect(session.channel).toBe(`conversation.${session.conversation_id}`)
        expect(session.channel).toBe(conversationChannel(session.conversation_id))
        expect(session.socket_url).toBe(baseUrl)
        expect(session.app_key).toBe(secrets.socketAppKey)
        expect(session.event).toBe("new_message")
        const now = Math.floor(Date.now() / 1000)
        expect(verifySocketToken(secrets.socketKey, session.token, session.channel, now)).toBe(session.conversation_id)
        expect(verifySocketToken(secrets.socketKey, session.token, `conversation.${session.conversation_id + 1}`, now))
          .toBeUndefined()
      }))

    it.effect("generates a ULID contact_id when none is sent, a new one each time", () =>
      Effect.gen(function*() {
        const { auth } = yield* webChannel()
        const a = ok(yield* initiate(auth), "webChat.initiate")
        const b = ok(yield* initiate(auth, {}), "webChat.initiate")
        expect(a.contact_id).toMatch(ULID)
        expect(b.contact_id).toMatch(ULID)
        expect(a.contact_id).not.toBe(b.contact_id)
        expect(a.conversation_id).not.toBe(b.conversation_id)
        const again = ok(yield* initiate(auth, { contact_id: a.contact_id }), "webChat.initiate")
        expect(again.conversation_id).toBe(a.conversation_id)
      }))

    it.effect("is idempotent per contact_id and creates one opportunity, in the pipeline's first stage", () =>
      Effect.gen(function*() {
        const { auth, owner, pipeline, inbound } = yield* webChannel()
        const first = ok(yield* initiate(auth, { contact_id: "same-visitor" }), "webChat.initiate")
        const second = ok(yield* initiate(auth, { contact_id: "same-visitor" }), "webChat.initiate")
        expect(second.conversation_id).toBe(first.conversation_id)
        expect(second.channel).toBe(first.channel)
        received(yield* send(auth, { contact_id: "same-visitor", message: "hi" }))
        const other = ok(yield* initiate(auth, { contact_id: "other-visitor" }), "webChat.initiate")
        expect(other.conversation_id).not.toBe(first.conversation_id)

        const all = yield* opportunitiesOf(owner, pipeline.id)
        expect(all).toHaveLength(2)
        const opportunity = yield* opportunityOfContact(owner, pipeline.id, "same-visitor")
        expect(opportunity).toMatchObject({
          pipeline_id: pipeline.id,
          stage_id: inbound.id,
          stage_name: "Inbound",
          status: "active",
          source: "web",
          source_id: "same-visitor"
        })
        expect(opportunity.conversations.map((c) => c.id)).toEqual([first.conversation_id])
      }))

    it.effect("name, email and phone fill only the contact's empty fields and never overwrite", () =>
      Effect.gen(function*() {
        const { auth, owner, pipeline } = yield* webChannel()
        ok(yield* initiate(auth, { contact_id: "ada", name: "Ada Lovelace" }), "webChat.initiate")
        let o = yield* opportunityOfContact(owner, pipeline.id, "ada")
        expect(o).toMatchObject({ contact_name: "Ada Lovelace", contact_email: null, contact_phone: null })

        ok(
          yield* initiate(auth, {
            contact_id: "ada",
            name: "Eve",
            email: "ada@example.com",
            phone: "+44 20 7946 0958"
          }),
          "webChat.initiate"
        )
        o = yield* opportunityOfContact(owner, pipeline.id, "ada")
        expect(o).toMatchObject({
          contact_name: "Ada Lovelace",
          contact_email: "ada@example.com",
          contact_phone: "442079460958"
        })

        ok(
          yield* initiate(auth, {
            contact_id: "ada",
            name: "Mallory",
            email: "mallory@example.com",
            phone: "+1 202 555 0100"
          }),
          "webChat.initiate"
        )
        o = yield* opportunityOfContact(owner, pipeline.id, "ada")
        expect(o).toMatchObject({
          contact_name: "Ada Lovelace",
          contact_email: "ada@example.com",
          contact_phone: "442079460958"
        })

        // a contact the receiver created (no identity at all) gets its name from a later Initiate
        received(yield* send(auth, { contact_id: "anon", message: "hello" }))
        expect(yield* opportunityOfContact(owner, pipeline.id, "anon")).toMatchObject({
          contact_name: null,
          contact_email: null
        })
        ok(yield* initiate(auth, { contact_id: "anon", name: "Grace", email: "grace@example.com" }), "webChat.initiate")
        expect(yield* opportunityOfContact(owner, pipeline.id, "anon")).toMatchObject({
          contact_name: "Grace",
          contact_email: "grace@example.com"
        })
        const contacts = ok(yield* get(owner, "/api/user/contacts?per_page=100"), "contacts.list").data
        expect(contacts.map((c) => c.identifier).sort()).toEqual(["ada", "anon"])
      }))

    it.effect("401 Invalid client credentials for a wrong secret, an unknown client id, no header and an inactive channel", () =>
      Effect.gen(function*() {
        const { owner, channel, auth } = yield* webChannel()
        const attempts: Array<Auth> = [
          { authorization: basicAuth(channel.client_id, `${channel.client_secret}x`) },
          { authorization: basicAuth(channel.client_id, "") },
          { authorization: basicAuth("wc_unknownclientid000000000000000000", channel.client_secret) },
          {},
          { authorization: `Bearer ${owner.token}` }
        ]
        for (const bad of attempts) {
          expectStatus(yield* initiate(bad, { contact_id: "x" }), 401, "Invalid client credentials")
        }
        ok(yield* put(owner, `/api/user/channels/${channel.id}`, { is_active: false }), "channels.update")
        expectStatus(yield* initiate(auth, { contact_id: "x" }), 401, "Invalid client credentials")
        expect(yield* count`select count(*) as n from contacts where workspace_id = ${owner.workspace_id}`).toBe(0)
      }))

    it.effect("422 This endpoint is only available for web channels for a widget channel's client id", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        yield* giveCredits(owner.workspace_id)
        const pipeline = yield* createPipeline(owner, "Widget")
        yield* createStage(owner, pipeline.id, "Inbound", 1)
        const widget = yield* createChannel(owner, { kind: "widget", pipeline_id: pipeline.id })
        // its secret signs webhooks; it never authenticates web-chat calls (browsers use /api/widget/session)
        const r = yield* initiate({ authorization: basicAuth(widget.client_id, widget.client_secret) }, {
          contact_id: "x"
        })
        expectStatus(r, 422, "This endpoint is only available for web channels.")
      }))

    it.effect("422 Channel is not linked to any pipeline", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        yield* giveCredits(owner.workspace_id)
        const channel = yield* createChannel(owner, { kind: "web" })
        expectStatus(
          yield* initiate(authOf(channel), { contact_id: "x" }),
          422,
          "Channel is not linked to any pipeline"
        )
      }))

    it.effect("400 No subscription found, No credits found and No stages found for this pipeline", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const pipeline = yield* createPipeline(owner, "Empty")
        const channel = yield* createChannel(owner, { kind: "web", pipeline_id: pipeline.id })
        const auth = authOf(channel)
        expectStatus(yield* initiate(auth, { contact_id: "x" }), 400, "No credits found")
        yield* giveCredits(owner.workspace_id, { credits: 5, is_subscription_active: false })
        expectStatus(yield* initiate(auth, { contact_id: "x" }), 400, "No subscription found")
        yield* giveCredits(owner.workspace_id, { is_subscription_active: true })
        expectStatus(yield* initiate(auth, { contact_id: "x" }), 400, "No stages found for this pipeline")
        yield* createStage(owner, pipeline.id, "Inbound", 1)
        expect(ok(yield* initiate(auth, { contact_id: "x" }), "webChat.initiate").contact_id).toBe("x")
      }))

    it.effect("422 naming the field for a bad email, a contact_id over 255 characters, a phone over 30 or not a phone", () =>
      Effect.gen(function*() {
        const { auth, owner } = yield* webChannel()
        expect422(yield* initiate(auth, { contact_id: "x", email: "not-an-email" }), ["email"])
        expect422(yield* initiate(auth, { contact_id: "c".repeat(256) }), ["contact_id"])
        expect422(yield* initiate(auth, { contact_id: "x", phone: "1".repeat(31) }), ["phone"])
        // opportunity create's rule: a phone that cannot be normalised is refused, not dropped
        for (const phone of ["1234567890123456", "+44 (0)20 7946-0958 ext 12", "call me"]) {
          const refused = yield* initiate(auth, { contact_id: "x", phone })
          expect422(refused, ["phone"])
          expect(failure(refused).validation[0]!.message).toContain("must be a valid phone number with country code")
        }
        expect422(yield* initiate(auth, { contact_id: "x", name: "n".repeat(256) }), ["name"])
        expect(yield* count`select count(*) as n from contacts where workspace_id = ${owner.workspace_id}`).toBe(0)
        expect(ok(yield* initiate(auth, { contact_id: "c".repeat(255) }), "webChat.initiate").contact_id).toBe(
          "c".repeat(255)
        )
      }))
  })

  describe("receiver", () => {
    it.effect("stores a JSON message and answers {status, message, data: {message_id}} without code or validation", () =>
      Effect.gen(function*() {
        const { auth } = yield* webChannel()
        const session = ok(yield* initiate(auth, { contact_id: "json-visitor" }), "webChat.initiate")
        const r = yield* send(auth, { contact_id: "json-visitor", message: "Hello there" })
        const id = received(r)
        const page = pageOf(yield* history(auth, { conversation_id: session.conversation_id }))
        expect(page.total).toBe(1)
        expect(page.data[0]).toMatchObject({
          id,
          role: "user",
          message: "Hello there",
          status: "received",
          files: [],
          conversation_id: session.conversation_id,
          error: null,
          sender_id: null,
          external_message_id: null
        })
        expect(Number.isInteger(page.data[0]!.opportunity_id)).toBe(true)
      }))

    it.effect("the first message without Initiate creates the contact, the conversation and the opportunity", () =>
      Effect.gen(function*() {
        const { auth, owner, pipeline, inbound } = yield* webChannel()
        const id = received(yield* send(auth, { contact_id: "cold-visitor", message: "Anyone there?" }))
        const opportunity = yield* opportunityOfContact(owner, pipeline.id, "cold-visitor")
        expect(opportunity).toMatchObject({ stage_id: inbound.id, source: "web", source_id: "cold-visitor" })
        expect(opportunity.conversations).toHaveLength(1)
        const page = pageOf(yield* history(auth, { contact_id: "cold-visitor" }))
        expect(page.data.map((m) => m.id)).toEqual([id])
        expect(page.data[0]).toMatchObject({
          conversation_id: opportunity.conversations[0]!.id,
          opportunity_id: opportunity.id
        })
        // SPEC.md 2.4's history record: no integer contact id next to the string contact_id of web chat
        expect(Object.keys(page.data[0]!).sort()).toEqual([
          "attachments",
          "conversation_id",
          "created_at",
          "error",
          "external_message_id",
          "files",
          "id",
          "message",
          "no_reply_reason",
          "opportunity_id",
          "role",
          "sender",
          "sender_id",
          "sender_name",
          "status"
        ])
        // Initiate afterwards resumes the same conversation, and no second opportunity appears
        expect(ok(yield* initiate(auth, { contact_id: "cold-visitor" }), "webChat.initiate").conversation_id).toBe(
          opportunity.conversations[0]!.id
        )
        received(yield* send(auth, { contact_id: "cold-visitor", message: "Hello?" }))
        expect(yield* opportunitiesOf(owner, pipeline.id)).toHaveLength(1)
      }))

    it.effect("stores multipart files[] under uploads/<client_id>/ with their 2.5 entries and signed URLs serving the exact bytes", () =>
      Effect.gen(function*() {
        const { auth, channel } = yield* webChannel()
        const png = randomBytes(2048)
        const pdf = new TextEncoder().encode("%PDF-1.4 fake document body")
        const form = new FormData()
        form.append("contact_id", "files-visitor")
        form.append("message", "Two files")
        form.append("files[]", file(png, "image/png"), "photo.png")
        form.append("files[]", file(pdf, "application/pdf"), "Quote 2024.pdf")
        const id = received(yield* send(auth, form))

        const page = pageOf(yield* history(auth, { contact_id: "files-visitor" }))
        expect(page.data).toHaveLength(1)
        const message = page.data[0]!
        expect(message).toMatchObject({ id, message: "Two files", role: "user" })
        expect(message.files).toHaveLength(2)
        const [image, document] = [message.files[0]!, message.files[1]!]
        expect(image).toMatchObject({ mimetype: "image/png", type: "image", size: png.length, name: "photo.png" })
        expect(document).toMatchObject({
          mimetype: "application/pdf",
          type: "document",
          size: pdf.length,
          name: "Quote 2024.pdf"
        })
        for (const entry of message.files) {
          expect(Object.keys(entry).sort()).toEqual(["mimetype", "name", "path", "size", "type", "url"])
          expect(entry.path.startsWith(`uploads/${channel.client_id}/`)).toBe(true)
          expect(entry.path).not.toContain("..")
        }
        expect(image.path).not.toBe(document.path)

        const gotImage = yield* download(image.url)
        expect(gotImage.status).toBe(200)
        expect(gotImage.type).toBe("image/png")
        expect(Buffer.from(gotImage.bytes).equals(Buffer.from(png))).toBe(true)
        const gotPdf = yield* download(document.url)
        expect(gotPdf.status).toBe(200)
        expect(gotPdf.type).toBe("application/pdf")
        expect(Buffer.from(gotPdf.bytes).equals(Buffer.from(pdf))).toBe(true)
        expect(yield* filesRows(channel.id)).toBe(2)
      }))

    it.effect("classifies files by MIME family: image, video, audio, document, file; field name files also works", () =>
      Effect.gen(function*() {
        const { auth } = yield* webChannel()
        const form = new FormData()
        form.append("contact_id", "types-visitor")
        form.append("message", "")
        const parts: Array<[string, string]> = [
          ["a.jpg", "image/jpeg"],
          ["b.mp4", "video/mp4"],
          ["c.mp3", "audio/mpeg"],
          ["d.zip", "application/zip"],
          ["e.txt", "text/plain"]
        ]
        for (const [name, type] of parts) form.append("files", file(`content of ${name}`, type), name)
        received(yield* send(auth, form))
        const message = pageOf(yield* history(auth, { contact_id: "types-visitor" })).data[0]!
        expect(message.message).toBe("")
        expect(message.files.map((f) => [f.name, f.type, f.size])).toEqual([
          ["a.jpg", "image", 16],
          ["b.mp4", "video", 16],
          ["c.mp3", "audio", 16],
          ["d.zip", "document", 16],
          ["e.txt", "file", 16]
        ])
        for (const f of message.files) {
          const got = yield* download(f.url)
          expect(new TextDecoder().decode(got.bytes)).toBe(`content of ${f.name}`)
        }
      }))

    it.effect("two files with the same name keep their own bytes", () =>
      Effect.gen(function*() {
        const { auth } = yield* webChannel()
        const form = new FormData()
        form.append("contact_id", "same-name")
        form.append("message", "two photos")
        form.append("files[]", file("first photo", "image/jpeg"), "image.jpg")
        form.append("files[]", file("the second photo", "image/jpeg"), "image.jpg")
        received(yield* send(auth, form))
        const message = pageOf(yield* history(auth, { contact_id: "same-name" })).data[0]!
        expect(message.files.map((f) => [f.name, f.size])).toEqual([["image.jpg", 11], ["image.jpg", 16]])
        const texts: Array<string> = []
        for (const f of message.files) texts.push(new TextDecoder().decode((yield* download(f.url)).bytes))
        expect(texts).toEqual(["first photo", "the second photo"])
      }))

    it.effect("file parts under other field names are ignored", () =>
      Effect.gen(function*() {
        const { auth, channel } = yield* webChannel()
        const form = new FormData()
        form.append("contact_id", "ignored-parts")
        form.append("message", "one real file")
        form.append("attachment", file("ignored", "text/plain"), "ignored.txt")
        form.append("files[]", file("kept", "text/plain"), "kept.txt")
        form.append("upload", file("ignored too", "image/png"), "ignored.png")
        received(yield* send(auth, form))
        const message = pageOf(yield* history(auth, { contact_id: "ignored-parts" })).data[0]!
        expect(message.files.map((f) => f.name)).toEqual(["kept.txt"])
        expect(yield* filesRows(channel.id)).toBe(1)
        expect(yield* storedUnder(channel.client_id)).toHaveLength(1)

        // only ignored parts and an empty message: nothing to store
        const empty = new FormData()
        empty.append("contact_id", "ignored-parts")
        empty.append("message", "")
        empty.append("file", file("ignored", "text/plain"), "x.txt")
        refused(yield* send(auth, empty), 400)
        expect(pageOf(yield* history(auth, { contact_id: "ignored-parts" })).total).toBe(1)
      }))

    it.effect("an empty message is allowed with files but is 400 without files or attachments", () =>
      Effect.gen(function*() {
        const { auth } = yield* webChannel()
        const session = ok(yield* initiate(auth, { contact_id: "empty-visitor" }), "webChat.initiate")
        const r = yield* send(auth, { contact_id: "empty-visitor", message: "" })
        expect(refused(r, 400, "The message field is required.").data!.validation.map((v) => v.field)).toEqual([
          "message"
        ])
        refused(yield* send(auth, { contact_id: "empty-visitor", message: "   " }), 400)
        refused(yield* send(auth, { contact_id: "empty-visitor" }), 400)
        const form = new FormData()
        form.append("contact_id", "empty-visitor")
        form.append("message", "")
        refused(yield* send(auth, form), 400, "The message field is required.")
        expect(pageOf(yield* history(auth, { conversation_id: session.conversation_id })).total).toBe(0)

        const withFile = new FormData()
        withFile.append("contact_id", "empty-visitor")
        withFile.append("message", "")
        withFile.append("files[]", file("bytes", "image/gif"), "a.gif")
        received(yield* send(auth, withFile))
        expect(pageOf(yield* history(auth, { conversation_id: session.conversation_id })).total).toBe(1)
      }))

    it.effect("a 6 MB file is 413 and stores nothing", () =>
      Effect.gen(function*() {
        const { auth, channel } = yield* webChannel()
        const session = ok(yield* initiate(auth, { contact_id: "big-visitor" }), "webChat.initiate")
        const form = new FormData()
        form.append("contact_id", "big-visitor")
        form.append("message", "too big")
        form.append("files[]", file("small", "text/plain"), "small.txt")
        form.append("files[]", file(randomBytes(6 * 1024 * 1024), "video/mp4"), "big.mp4")
        refused(yield* send(auth, form), 413)
        const justOver = new FormData()
        justOver.append("contact_id", "big-visitor")
        justOver.append("message", "one byte too many")
        justOver.append("files[]", file(randomBytes(5 * 1024 * 1024 + 1), "video/mp4"), "over.mp4")
        refused(yield* send(auth, justOver), 413)
        expect(pageOf(yield* history(auth, { conversation_id: session.conversation_id })).total).toBe(0)
        expect(yield* filesRows(channel.id)).toBe(0)
        expect(yield* storedUnder(channel.client_id)).toEqual([])
        // exactly 5 MB is within the limit, whatever the length of the file name
        const limit = new FormData()
        limit.append("contact_id", "big-visitor")
        limit.append("message", "at the limit")
        limit.append("files[]", file(randomBytes(5 * 1024 * 1024), "video/mp4"), `${"n".repeat(200)}.mp4`)
        received(yield* send(auth, limit))
        const message = pageOf(yield* history(auth, { conversation_id: session.conversation_id })).data[0]!
        expect(message.files[0]!.size).toBe(5 * 1024 * 1024)
        expect(yield* filesRows(channel.id)).toBe(1)
      }))

    it.effect("11 files are 413 and store nothing; 10 are accepted", () =>
      Effect.gen(function*() {
        const { auth, channel } = yield* webChannel()
        const session = ok(yield* initiate(auth, { contact_id: "many-visitor" }), "webChat.initiate")
        const form = (n: number) => {
          const f = new FormData()
          f.append("contact_id", "many-visitor")
          f.append("message", `${n} files`)
          for (let i = 0; i < n; i++) f.append("files[]", file(`file ${i}`, "text/plain"), `f${i}.txt`)
          return f
        }
        refused(yield* send(auth, form(11)), 413)
        expect(pageOf(yield* history(auth, { conversation_id: session.conversation_id })).total).toBe(0)
        expect(yield* filesRows(channel.id)).toBe(0)
        expect(yield* storedUnder(channel.client_id)).toEqual([])
        received(yield* send(auth, form(10)))
        const message = pageOf(yield* history(auth, { conversation_id: session.conversation_id })).data[0]!
        expect(message.files).toHaveLength(10)
        expect(yield* filesRows(channel.id)).toBe(10)
      }))

    it.effect("attachments are stored from JSON objects and from a multipart JSON string, and come back in history", () =>
      Effect.gen(function*() {
        const { auth } = yield* webChannel()
        const one = { type: "image", url: "https://cdn.example.com/a.png", name: "a.png" }
        const two = { type: "document", url: "http://files.example.com/b.pdf" }
        received(yield* send(auth, { contact_id: "attach-visitor", message: "see link", attachments: [one] }))
        const form = new FormData()
        form.append("contact_id", "attach-visitor")
        form.append("message", "")
        form.append("attachments", JSON.stringify([two, one]))
        received(yield* send(auth, form))
        const page = pageOf(yield* history(auth, { contact_id: "attach-visitor" }))
        expect(page.data.map((m) => [m.message, m.attachments, m.files])).toEqual([
          ["", [two, one], []],
          ["see link", [one], []]
        ])
        refused(
          yield* send(auth, {
            contact_id: "attach-visitor",
            message: "x",
            attachments: [{ type: "image", url: "ftp://x/y" }]
          }),
          400
        )
        const bad = new FormData()
        bad.append("contact_id", "attach-visitor")
        bad.append("message", "x")
        bad.append("attachments", "not json")
        refused(yield* send(auth, bad), 400)
        expect(pageOf(yield* history(auth, { contact_id: "attach-visitor" })).total).toBe(2)
      }))

    it.effect("JSON files[].path must be a file this channel stored: anything else is 400 Invalid file path", () =>
      Effect.gen(function*() {
        const { auth, channel, owner, pipeline } = yield* webChannel()
        const other = yield* createChannel(owner, { kind: "web", pipeline_id: pipeline.id })
        const stranger = yield* webChannel()

        const upload = (a: Auth, contact: string) => {
          const form = new FormData()
          form.append("contact_id", contact)
          form.append("message", "upload")
          form.append("files[]", file("stored bytes", "image/png"), "stored.png")
          return Effect.gen(function*() {
            received(yield* send(a, form))
            return pageOf(yield* history(a, { contact_id: contact })).data[0]!.files[0]!
          })
        }
        const mine = yield* upload(auth, "path-visitor")
        const siblings = yield* upload(authOf(other), "path-visitor")
        const strangers = yield* upload(stranger.auth, "path-visitor")
        const prefix = `uploads/${channel.client_id}/`
        const invalid = [
          siblings.path,
          strangers.path,
          `${prefix}../${other.client_id}/${siblings.path.slice(`uploads/${other.client_id}/`.length)}`,
          `${prefix}${mine.path.slice(prefix.length).split("/").slice(0, 2).join("/")}/../${
            mine.path.slice(prefix.length)
          }`,
          `${prefix}2024/01/not-stored.png`,
          "/etc/passwd",
          `../../${mine.path}`,
          mine.path.slice(prefix.length)
        ]
        for (const path of invalid) {
          refused(
            yield* send(auth, { contact_id: "path-visitor", message: "ref", files: [{ path }] }),
            400,
            "Invalid file path"
          )
        }
        refused(
          yield* send(auth, {
            contact_id: "path-visitor",
            message: "ref",
            files: [{ path: mine.path }, { path: siblings.path }]
          }),
          400,
          "Invalid file path"
        )
        expect(pageOf(yield* history(auth, { contact_id: "path-visitor" })).total).toBe(1)

        received(
          yield* send(auth, {
            contact_id: "path-visitor",
            message: "same file again",
            files: [{ path: mine.path, name: "renamed.png" }]
          })
        )
        const latest = pageOf(yield* history(auth, { contact_id: "path-visitor" })).data[0]!
        const { url: _u1, ...entry } = mine
        expect(latest.files).toHaveLength(1)
        const { url, ...again } = latest.files[0]!
        expect(again).toEqual(entry)
        expect(new TextDecoder().decode((yield* download(url)).bytes)).toBe("stored bytes")
      }))

    it.effect("unknown fields such as name and email are stripped", () =>
      Effect.gen(function*() {
        const { auth, owner, pipeline } = yield* webChannel()
        received(
          yield* send(auth, {
            contact_id: "strip-visitor",
            message: "hi",
            name: "Injected",
            email: "injected@example.com",
            phone: "+49 170 1234567",
            role: "assistant",
            status: "sent",
            conversation_id: 1
          })
        )
        const message = pageOf(yield* history(auth, { contact_id: "strip-visitor" })).data[0]!
        expect(message).toMatchObject({ role: "user", status: "received", message: "hi" })
        expect(yield* opportunityOfContact(owner, pipeline.id, "strip-visitor")).toMatchObject({
          contact_name: null,
          contact_email: null,
          contact_phone: null
        })
      }))

    it.effect("contact_id missing, empty or over 255 characters is 400 naming contact_id", () =>
      Effect.gen(function*() {
        const { auth, owner } = yield* webChannel()
        for (
          const body of [{ message: "hi" }, { contact_id: "", message: "hi" }, {
            contact_id: "c".repeat(256),
            message: "hi"
          }]
        ) {
          const r = yield* send(auth, body)
          expect(refused(r, 400).data!.validation.map((v) => v.field)).toEqual(["contact_id"])
        }
        expect(yield* count`select count(*) as n from messages where workspace_id = ${owner.workspace_id}`).toBe(0)
        received(yield* send(auth, { contact_id: "c".repeat(255), message: "hi" }))
      }))

    it.effect("bad credentials and an inactive channel are 401 and store nothing", () =>
      Effect.gen(function*() {
        const { auth, channel, owner } = yield* webChannel()
        const body = { contact_id: "locked-out", message: "hi" }
        for (
          const bad of [
            { authorization: basicAuth(channel.client_id, "wrong") },
            { authorization: basicAuth("wc_nobody", channel.client_secret) },
            {},
            { authorization: "Basic !!!not-base64" }
          ]
        ) refused(yield* send(bad, body), 401, "Invalid client credentials")
        ok(yield* put(owner, `/api/user/channels/${channel.id}`, { is_active: false }), "channels.update")
        refused(yield* send(auth, body), 401, "Invalid client credentials")
        expect(yield* count`select count(*) as n from messages where workspace_id = ${owner.workspace_id}`).toBe(0)
        ok(yield* put(owner, `/api/user/channels/${channel.id}`, { is_active: true }), "channels.update")
        received(yield* send(auth, body))
      }))

    it.effect("a widget channel's credentials are 422 on the receiver", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const widget = yield* createChannel(owner, { kind: "widget" })
        refused(
          yield* send({ authorization: basicAuth(widget.client_id, "x") }, { contact_id: "w", message: "hi" }),
          422,
          "This endpoint is only available for web channels."
        )
      }))

    it.effect("a foreign Origin is 403 when the channel has an origin allowlist; an allowed one passes", () =>
      Effect.gen(function*() {
        const { auth, owner, channel } = yield* webChannel({ allowed_origins: ["https://shop.example.com"] })
        const body = { contact_id: "origin-visitor", message: "hi" }
        refused(yield* send(auth, body, { origin: "https://evil.example.com" }), 403)
        refused(yield* send(auth, body, { origin: "https://shop.example.com:8443" }), 403)
        refused(yield* send(auth, body, { origin: "http://shop.example.com" }), 403)
        expect(yield* count`select count(*) as n from messages where workspace_id = ${owner.workspace_id}`).toBe(0)
        received(yield* send(auth, body, { origin: "https://shop.example.com" }))
        ok(yield* put(owner, `/api/user/channels/${channel.id}`, { allowed_origins: [] }), "channels.update")
        received(yield* send(auth, body, { origin: "https://evil.example.com" }))
      }))

    it.effect("a caller outside the IP allowlist is 403; one inside passes", () =>
      Effect.gen(function*() {
        const { auth, owner, channel } = yield* webChannel({ allowed_ips: ["203.0.113.0/24"] })
        const body = { contact_id: "ip-visitor", message: "hi" }
        refused(yield* send(auth, body), 403)
        expect(yield* count`select count(*) as n from messages where workspace_id = ${owner.workspace_id}`).toBe(0)
        ok(yield* put(owner, `/api/user/channels/${channel.id}`, { allowed_ips: ["127.0.0.0/8"] }), "channels.update")
        received(yield* send(auth, body))
        ok(
          yield* put(owner, `/api/user/channels/${channel.id}`, { allowed_ips: ["127.0.0.1", "2001:db8::/32"] }),
          "channels.update"
        )
        received(yield* send(auth, body))
      }))

    it.effect("the same Idempotency-Key twice answers the same message_id and stores one message", () =>
      Effect.gen(function*() {
        const { auth } = yield* webChannel()
        const body = { contact_id: "retry-visitor", message: "once" }
        const first = received(yield* send(auth, body, { "idempotency-key": "key-1" }))
        const second = received(yield* send(auth, body, { "idempotency-key": "key-1" }))
        expect(second).toBe(first)
        const third = received(yield* send(auth, body, { "idempotency-key": "key-2" }))
        expect(third).not.toBe(first)
        const fourth = received(yield* send(auth, body))
        const page = pageOf(yield* history(auth, { contact_id: "retry-visitor" }))
        expect(page.total).toBe(3)
        expect(page.data.map((m) => m.id).sort()).toEqual([first, third, fourth].sort())
      }))

    it.effect("an empty or over-long Idempotency-Key is 400 and stores nothing, rather than being cut to size", () =>
      Effect.gen(function*() {
        const { auth } = yield* webChannel()
        const body = { contact_id: "long-key-visitor", message: "hello" }
        refused(
          yield* send(auth, body, { "idempotency-key": "k".repeat(256) }),
          400,
          "The Idempotency-Key header must be 1 to 255 characters."
        )
        received(yield* send(auth, body, { "idempotency-key": "k".repeat(255) }))
        expect(pageOf(yield* history(auth, { contact_id: "long-key-visitor" })).total).toBe(1)
      }))

    it.effect("a repeated Idempotency-Key with files stores the files once", () =>
      Effect.gen(function*() {
        const { auth, channel } = yield* webChannel()
        const form = () => {
          const f = new FormData()
          f.append("contact_id", "retry-files")
          f.append("message", "with a file")
          f.append("files[]", file("once", "text/plain"), "once.txt")
          return f
        }
        const first = received(yield* send(auth, form(), { "idempotency-key": "upload-1" }))
        const second = received(yield* send(auth, form(), { "idempotency-key": "upload-1" }))
        expect(second).toBe(first)
        expect(pageOf(yield* history(auth, { contact_id: "retry-files" })).total).toBe(1)
        expect(yield* filesRows(channel.id)).toBe(1)
        expect(yield* storedUnder(channel.client_id)).toHaveLength(1)
      }))

    it.effect("two concurrent requests with one Idempotency-Key store one message", () =>
      Effect.gen(function*() {
        const { auth, owner, pipeline } = yield* webChannel()
        const body = { contact_id: "racing-visitor", message: "race" }
        const ids = yield* Effect.all(
          Array.from({ length: 4 }, () => send(auth, body, { "idempotency-key": "race-key" })),
          { concurrency: "unbounded" }
        ).pipe(Effect.map((replies) => replies.map(received)))
        expect(new Set(ids).size).toBe(1)
        const page = pageOf(yield* history(auth, { contact_id: "racing-visitor" }))
        expect(page.total).toBe(1)
        expect(page.data[0]!.id).toBe(ids[0])
        expect(yield* opportunitiesOf(owner, pipeline.id)).toHaveLength(1)
        expect(yield* count`select count(*) as n from conversations where workspace_id = ${owner.workspace_id}`).toBe(1)
      }))

    it.effect("concurrent first messages of one new contact make one contact, conversation and opportunity", () =>
      Effect.gen(function*() {
        const { auth, owner, pipeline } = yield* webChannel()
        const replies = yield* Effect.all(
          Array.from({ length: 4 }, (_, i) => send(auth, { contact_id: "burst-visitor", message: `burst ${i}` })),
          { concurrency: "unbounded" }
        )
        replies.forEach(received)
        expect(pageOf(yield* history(auth, { contact_id: "burst-visitor" })).total).toBe(4)
        expect(yield* opportunitiesOf(owner, pipeline.id)).toHaveLength(1)
        expect(yield* count`select count(*) as n from contacts where workspace_id = ${owner.workspace_id}`).toBe(1)
        expect(yield* count`select count(*) as n from conversations where workspace_id = ${owner.workspace_id}`).toBe(1)
      }))
  })

  describe("history", () => {
    it.effect("pages newest first, 10 per page by default, with Laravel pagination fields", () =>
      Effect.gen(function*() {
        const { auth } = yield* webChannel()
        const session = ok(yield* initiate(auth, { contact_id: "paging-visitor" }), "webChat.initiate")
        const ids: Array<string> = []
        for (let i = 1; i <= 12; i++) {
          ids.push(received(yield* send(auth, { contact_id: "paging-visitor", message: `message ${i}` })))
        }

        const first = pageOf(yield* history(auth, { conversation_id: session.conversation_id }))
        expect(first).toMatchObject({
          current_page: 1,
          per_page: 10,
          total: 12,
          last_page: 2,
          from: 1,
          to: 10,
          prev_page_url: null
        })
        expect(first.data.map((m) => m.message)).toEqual(Array.from({ length: 10 }, (_, i) => `message ${12 - i}`))
        expect(first.data.map((m) => m.id)).toEqual(ids.slice(2).reverse())
        expect(first.next_page_url).not.toBeNull()
        expect(new URL(first.next_page_url!).searchParams.get("page")).toBe("2")
        expect(new URL(first.next_page_url!).searchParams.get("conversation_id")).toBe(String(session.conversation_id))
        expect(new URL(first.next_page_url!).pathname).toBe("/api/user/messages/webchat")

        const second = pageOf(yield* history(auth, { conversation_id: session.conversation_id, page: 2 }))
        expect(second).toMatchObject({
          current_page: 2,
          per_page: 10,
          total: 12,
          last_page: 2,
          from: 11,
          to: 12,
          next_page_url: null
        })
        expect(second.data.map((m) => m.message)).toEqual(["message 2", "message 1"])
        expect(second.prev_page_url).not.toBeNull()
        expect(new URL(second.prev_page_url!).searchParams.get("page")).toBe("1")

        const small = pageOf(yield* history(auth, { contact_id: "paging-visitor", per_page: 5, page: 3 }))
        expect(small).toMatchObject({ current_page: 3, per_page: 5, total: 12, last_page: 3, from: 11, to: 12 })
        expect(small.data.map((m) => m.message)).toEqual(["message 2", "message 1"])
        const beyond = pageOf(yield* history(auth, { contact_id: "paging-visitor", page: 4 }))
        expect(beyond).toMatchObject({ data: [], total: 12, from: null, to: null })
      }))

    it.effect("finds the conversation by contact_id, which wins over a disagreeing conversation_id", () =>
      Effect.gen(function*() {
        const { auth } = yield* webChannel()
        const a = ok(yield* initiate(auth, { contact_id: "visitor-a" }), "webChat.initiate")
        const b = ok(yield* initiate(auth, { contact_id: "visitor-b" }), "webChat.initiate")
        received(yield* send(auth, { contact_id: "visitor-a", message: "from a" }))
        received(yield* send(auth, { contact_id: "visitor-b", message: "from b" }))
        const byContact = pageOf(yield* history(auth, { contact_id: "visitor-a" }))
        expect(byContact.data.map((m) => [m.message, m.conversation_id])).toEqual([["from a", a.conversation_id]])
        const byId = pageOf(yield* history(auth, { conversation_id: b.conversation_id }))
        expect(byId.data.map((m) => m.message)).toEqual(["from b"])
        const both = pageOf(yield* history(auth, { conversation_id: b.conversation_id, contact_id: "visitor-a" }))
        expect(both.data.map((m) => m.message)).toEqual(["from a"])
        expectStatus(
          yield* history(auth, { conversation_id: a.conversation_id, contact_id: "nobody" }),
          403,
          "Unauthorized"
        )
      }))

    it.effect("another channel's conversation and an unknown contact_id are both 403 Unauthorized", () =>
      Effect.gen(function*() {
        const { auth, owner, pipeline } = yield* webChannel()
        const sibling = yield* createChannel(owner, { kind: "web", pipeline_id: pipeline.id })
        const theirs = ok(yield* initiate(authOf(sibling), { contact_id: "sibling-visitor" }), "webChat.initiate")
        received(yield* send(authOf(sibling), { contact_id: "sibling-visitor", message: "secret" }))
        const denied = [
          yield* history(auth, { conversation_id: theirs.conversation_id }),
          yield* history(auth, { contact_id: "sibling-visitor" }),
          yield* history(auth, { contact_id: "never-seen" }),
          yield* history(auth, { conversation_id: 987654321 })
        ]
        for (const r of denied) {
          expectStatus(r, 403, "Unauthorized")
          expect(JSON.stringify(r.body)).not.toContain("secret")
        }
        expect(denied.map((r) => r.body)).toEqual(denied.map(() => denied[0]!.body))
        expect(pageOf(yield* history(authOf(sibling), { conversation_id: theirs.conversation_id })).total).toBe(1)
      }))

    it.effect("neither id is 422; a widget channel is 422; bad credentials are 401", () =>
      Effect.gen(function*() {
        const { auth, owner, channel } = yield* webChannel()
        expect422(yield* history(auth, {}), ["contact_id", "conversation_id"])
        expect422(yield* history(auth, { per_page: 20 }), ["contact_id", "conversation_id"])
        const widget = yield* createChannel(owner, { kind: "widget" })
        expectStatus(
          yield* history({ authorization: basicAuth(widget.client_id, "whatever") }, { contact_id: "x" }),
          422,
          "This endpoint is only available for web channels."
        )
        for (
          const bad of [
            { authorization: basicAuth(channel.client_id, "wrong") },
            { authorization: basicAuth("wc_nobody", "x") },
            {},
            { authorization: `Bearer ${owner.token}` }
          ]
        ) expectStatus(yield* history(bad, { contact_id: "x" }), 401, "Invalid client credentials")
      }))
  })

  describe("signed file URLs", () => {
    const uploaded = Effect.gen(function*() {
      const { auth } = yield* webChannel()
      const form = new FormData()
      form.append("contact_id", "signed-visitor")
      form.append("message", "")
      form.append("files[]", file("signed content", "audio/ogg"), "voice.ogg")
      received(yield* send(auth, form))
      const message = pageOf(yield* history(auth, { contact_id: "signed-visitor" })).data[0]!
      return message.files[0]!
    })

    it.effect("a valid URL serves the file with its content type; a tampered signature is 404", () =>
      Effect.gen(function*() {
        const entry = yield* uploaded
        const good = yield* download(entry.url)
        expect(good.status).toBe(200)
        expect(good.type).toBe("audio/ogg")
        expect(new TextDecoder().decode(good.bytes)).toBe("signed content")

        const url = new URL(entry.url)
        const signature = url.searchParams.get("signature")!
        const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === "0" ? "1" : "0") + s.slice(i + 1)
        const variants: Array<URL> = []
        for (
          const sig of [flip(signature, 0), flip(signature, 63), signature.slice(0, 62), "", signature.toUpperCase()]
        ) {
          const u = new URL(url)
          u.searchParams.set("signature", sig)
          variants.push(u)
        }
        const noSignature = new URL(url)
        noSignature.searchParams.delete("signature")
        const laterExpiry = new URL(url)
        laterExpiry.searchParams.set("expires", String(Number(url.searchParams.get("expires")) + 1))
        const otherKey = new URL(url)
        otherKey.pathname = otherKey.pathname.replace(/voice\.ogg$/, "voice2.ogg")
        for (const u of [...variants, noSignature, laterExpiry, otherKey]) {
          const r = yield* download(u.toString())
          expect(r.status).toBe(404)
          expect(new TextDecoder().decode(r.bytes)).not.toContain("signed content")
        }
      }))

    it.effect("an expired URL is 404 even with a valid signature", () =>
      Effect.gen(function*() {
        const entry = yield* uploaded
        const storage = yield* FileStorage
        const { baseUrl } = yield* TestServer
        const now = Math.floor(Date.now() / 1000)
        const expired = yield* download(baseUrl + storage.signedPath(entry.path, now - 2 * 60 * 60))
        expect(expired.status).toBe(404)
        const fresh = yield* download(baseUrl + storage.signedPath(entry.path, now))
        expect(fresh.status).toBe(200)
        expect(new TextDecoder().decode(fresh.bytes)).toBe("signed content")
      }))

    it.effect("a key with .. is 404 even when signed and resolving to a stored file", () =>
      Effect.gen(function*() {
        const entry = yield* uploaded
        const storage = yield* FileStorage
        const { baseUrl } = yield* TestServer
        const segments = entry.path.split("/")
        // uploads/<client>/<yyyy>/<mm>/<ulid>/voice.ogg -> uploads/<client>/<yyyy>/<mm>/x/../<ulid>/voice.ogg
        const dotted = [...segments.slice(0, 4), "x", "..", ...segments.slice(4)].join("/")
        const signed = new URL(baseUrl + storage.signedPath(dotted))
        const query = signed.search
        // fetch would normalise a literal `..`: send it encoded in one segment, and raw over node:http
        const encoded = yield* download(`${baseUrl}/files/${encodeURIComponent(dotted)}${query}`)
        expect(encoded.status).toBe(404)
        const raw = yield* Effect.promise(() =>
          new Promise<number>((resolve, reject) => {
            const u = new URL(baseUrl)
            const req = Http.request(
              { host: u.hostname, port: u.port, path: `/files/${dotted}${query}`, method: "GET" },
              (res) => {
                res.resume()
                res.on("end", () => resolve(res.statusCode ?? 0))
              }
            )
            req.on("error", reject)
            req.end()
          })
        )
        expect(raw).toBe(404)
        const escape = new URL(baseUrl + storage.signedPath("../../etc/passwd"))
        expect((yield* download(`${baseUrl}/files/${encodeURIComponent("../../etc/passwd")}${escape.search}`)).status)
          .toBe(404)
        // the undotted key signed the same way is served, so the 404s above are the `..`
        expect((yield* download(baseUrl + storage.signedPath(entry.path))).status).toBe(200)
      }))
  })

  describe("conversation summary", () => {
    it.effect("inbound messages update messages_count and last_message_content, [Attachment] for files only", () =>
      Effect.gen(function*() {
        const { auth, owner, pipeline } = yield* webChannel()
        const session = ok(yield* initiate(auth, { contact_id: "summary-visitor" }), "webChat.initiate")
        const opportunity = yield* opportunityOfContact(owner, pipeline.id, "summary-visitor")
        const summary = () =>
          Effect.map(get(owner, `/api/user/opportunities/${opportunity.id}`), (r) => {
            const conversations = ok(r, "opportunities.get").conversations
            expect(conversations).toHaveLength(1)
            expect(conversations[0]!.id).toBe(session.conversation_id)
            return conversations[0]!
          })
        expect(yield* summary()).toMatchObject({ messages_count: 0, last_message_content: null, last_message_at: null })

        received(yield* send(auth, { contact_id: "summary-visitor", message: "First question" }))
        const afterText = yield* summary()
        expect(afterText).toMatchObject({
          messages_count: 1,
          last_message_content: "First question",
          pivot: { opportunity_id: opportunity.id, conversation_id: session.conversation_id }
        })
        expect(afterText.last_message_at).not.toBeNull()

        const form = new FormData()
        form.append("contact_id", "summary-visitor")
        form.append("message", "")
        form.append("files[]", file("pic", "image/png"), "pic.png")
        received(yield* send(auth, form))
        expect(yield* summary()).toMatchObject({ messages_count: 2, last_message_content: "[Attachment]" })

        received(yield* send(auth, { contact_id: "summary-visitor", message: "And another" }))
        expect(yield* summary()).toMatchObject({ messages_count: 3, last_message_content: "And another" })

        // links only (attachments, no files) preview the same way
        received(
          yield* send(auth, {
            contact_id: "summary-visitor",
            message: "",
            attachments: [{ type: "link", url: "https://example.com/order/7" }]
          })
        )
        expect(yield* summary()).toMatchObject({ messages_count: 4, last_message_content: "[Attachment]" })
      }))
  })

  describe("tenant isolation", () => {
    it.effect("one workspace's channel credentials never read or write another workspace's conversations", () =>
      Effect.gen(function*() {
        const alice = yield* webChannel()
        const bob = yield* webChannel()
        const a = ok(yield* initiate(alice.auth, { contact_id: "shared-visitor" }), "webChat.initiate")
        const b = ok(yield* initiate(bob.auth, { contact_id: "shared-visitor" }), "webChat.initiate")
        expect(b.conversation_id).not.toBe(a.conversation_id)
        received(yield* send(alice.auth, { contact_id: "shared-visitor", message: "alice's secret" }))
        received(yield* send(bob.auth, { contact_id: "shared-visitor", message: "bob's note" }))

        expectStatus(yield* history(bob.auth, { conversation_id: a.conversation_id }), 403, "Unauthorized")
        expectStatus(yield* history(alice.auth, { conversation_id: b.conversation_id }), 403, "Unauthorized")
        const bobs = pageOf(yield* history(bob.auth, { contact_id: "shared-visitor" }))
        expect(bobs.data.map((m) => [m.message, m.conversation_id])).toEqual([["bob's note", b.conversation_id]])
        const alices = pageOf(
          yield* history(alice.auth, { contact_id: "shared-visitor", conversation_id: b.conversation_id })
        )
        expect(alices.data.map((m) => [m.message, m.conversation_id])).toEqual([[
          "alice's secret",
          a.conversation_id
        ]])

        // mixed credentials (alice's id, bob's secret) are refused everywhere
        const mixed = { authorization: basicAuth(alice.channel.client_id, bob.channel.client_secret) }
        expectStatus(yield* history(mixed, { conversation_id: a.conversation_id }), 401, "Invalid client credentials")
        refused(yield* send(mixed, { contact_id: "shared-visitor", message: "x" }), 401)
        expectStatus(yield* initiate(mixed, { contact_id: "shared-visitor" }), 401, "Invalid client credentials")

        expect((yield* opportunitiesOf(alice.owner, alice.pipeline.id))[0]!.conversations.map((c) => c.id)).toEqual(
          [a.conversation_id]
        )
        expect(yield* opportunitiesOf(alice.owner, bob.pipeline.id)).toEqual([])
        expect((yield* opportunitiesOf(bob.owner, bob.pipeline.id))[0]!.conversations[0]!.messages_count).toBe(1)
      }))
  })
})
