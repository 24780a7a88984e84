/**
 * Operator send, `POST /api/user/{conversation}/messages` (SPEC.md 2.4, 2.5, 3.4, 4.2, 5, 6.1, 6.2, 8),
 * end to end with real clients: `fetch` with JSON and multipart bodies, a socket.io client joined with
 * Initiate's token, and a local HTTP receiver standing in for the channel's callback URL.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { type Scope, verifyServiceSignature, WorkspaceId } from "@parley/domain"
import { Effect, Schema } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { io, type Socket } from "socket.io-client"
import { FileStorage } from "../src/files/FileStorage.js"
import { Identity } from "../src/identity/Identity.js"
import { type ApiResponse, bodyAs, failure } from "./support/Contract.js"
import {
  type Caller,
  count,
  expect422,
  expectStatus,
  funnel,
  get,
  ok,
  post,
  put,
  sqlRows,
  storedChannel,
  TIMESTAMP
} from "./support/Opportunities.js"
import { fetchJson, giveCredits, seedUser, TestServer, TestServerLive, tokenFor } from "./support/TestServer.js"
import { basic, webCredentials } from "./support/WebChat.js"
import { eventually, webhookReceiver } from "./support/WebhookReceiver.js"

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/
const MB = 1024 * 1024

const fetchReply = fetchJson

/** A success envelope's message, whatever it holds (the test checks its type). */
const Enveloped = Schema.Struct({ message: Schema.Unknown })

/** The messages a socket's `new_message` event carries, as far as these tests read them. */
const SocketMessages = Schema.Array(Schema.Struct({ message: Schema.NullOr(Schema.String) }))

/** The send endpoint: a JSON body, or a FormData sent as multipart/form-data (fetch sets the boundary). */
const send = (
  who: Caller,
  conversation: number | string,
  body: Record<string, unknown> | FormData,
  headers: Record<string, string> = {}
) =>
  Effect.flatMap(TestServer, ({ baseUrl }) =>
    fetchReply(`${baseUrl}/api/user/${conversation}/messages`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${who.token}`,
        accept: "application/json",
        ...(body instanceof FormData ? {} : { "content-type": "application/json" }),
        ...headers
      },
      body: body instanceof FormData ? body : JSON.stringify(body)
    }))

const download = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    return {
      status: response.status,
      type: response.headers.get("content-type"),
      bytes: Buffer.from(await response.arrayBuffer())
    }
  })

const file = (bytes: Uint8Array<ArrayBuffer> | string, type: string) => new Blob([bytes], { type })

/** `n` bytes, cheap to build at 25 MB: a fill, with a pattern at both ends so a truncation or shift shows. */
const bytesOf = (n: number, seed = 1) => {
  const bytes = new Uint8Array(n).fill(0x61 + (seed % 20))
  for (let i = 0; i < Math.min(n, 4096); i++) {
    bytes[i] = (i * 31 + seed) % 251
    bytes[n - 1 - i] = (i * 17 + seed) % 253
  }
  return bytes
}

/**
 * An owner with credits, a pipeline ("Inbound" first by order), a web channel on it and one web-chat
 * conversation opened through Initiate (which also gives the socket token).
 */
const webConversation = (channel: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const user = yield* seedUser()
    yield* giveCredits(user.workspace_id)
    const { pipeline, inbound } = yield* funnel(user)
    const created = webCredentials(ok(
      yield* post(user, "/api/user/channels", { kind: "web", pipeline_id: pipeline.id, ...channel }),
      "channels.create"
    ))
    const { baseUrl } = yield* TestServer
    const contactKey = `visitor-${Date.now()}-${Math.floor(Math.random() * 1e6)}`
    const session = yield* fetchReply(`${baseUrl}/api/user/web-chat/initiate`, {
      method: "POST",
      headers: {
        authorization: basic(created),
        "content-type": "application/json",
        accept: "application/json"
      },
      body: JSON.stringify({ contact_id: contactKey })
    })
    const data = ok(session, "webChat.initiate")
    const [link] = yield* sqlRows<{ opportunity_id: number; contact_id: number }>`
      select co.opportunity_id::int as opportunity_id, c.contact_id::int as contact_id
      from conversation_opportunity co join conversations c on c.id = co.conversation_id
      where co.conversation_id = ${data.conversation_id}`
    return {
      owner: user,
      pipeline,
      inbound,
      channel: created,
      session: data,
      contactKey,
      conversationId: data.conversation_id,
      opportunityId: link!.opportunity_id,
      contactId: link!.contact_id
    }
  })

const messagesIn = (conversationId: number) =>
  count`select count(*) as n from messages where conversation_id = ${conversationId}`

const storedRow = (id: string) =>
  Effect.map(
    sqlRows<
      {
        status: string
        error: string | null
        message: string | null
        external_message_id: string | null
        sender_id: number | null
      }
    >`
      select status, error, message, external_message_id, sender_id::int as sender_id from messages where id = ${id}`,
    (rows) => rows[0]
  )

/** Files under the storage root for this workspace's operator uploads. */
const operatorFiles = (workspaceId: number) =>
  Effect.map(FileStorage, (storage) => {
    const dir = Path.join(storage.root, "messages", String(workspaceId))
    return Fs.existsSync(dir)
      ? Fs.readdirSync(dir, { recursive: true }).filter((f) => Fs.statSync(Path.join(dir, String(f))).isFile())
      : []
  })

const filesRows = (workspaceId: number) => count`select count(*) as n from files where workspace_id = ${workspaceId}`

/** A 422 naming exactly `field`, after which the conversation holds no more messages and no files than before. */
const refusedWithNothingStored = (
  r: ApiResponse,
  field: string,
  before: { readonly conversationId: number; readonly messages: number; readonly workspaceId: number }
) =>
  Effect.gen(function*() {
    expect422(r, [field])
    expect(failure(r).validation[0]!.message).toContain(field)
    expect(yield* messagesIn(before.conversationId)).toBe(before.messages)
    expect(yield* operatorFiles(before.workspaceId)).toEqual([])
    expect(yield* filesRows(before.workspaceId)).toBe(0)
  })

/** A socket.io client joined to Initiate's channel, recording `new_message` payloads; closed with the scope. */
const joinedSocket = (session: { socket_url: string; channel: string; app_key: string; token: string }) =>
  Effect.gen(function*() {
    const received: Array<unknown> = []
    const socket = yield* Effect.acquireRelease(
      Effect.sync(() => io(session.socket_url, { forceNew: true, reconnection: false, transports: ["websocket"] })),
      (socket) => Effect.sync(() => socket.close())
    )
    socket.on("new_message", (payload: unknown) => received.push(payload))
    yield* Effect.promise(() =>
      new Promise<void>((resolve, reject) => {
        if (socket.connected) return resolve()
        socket.once("connect", () => resolve())
        socket.once("connect_error", reject)
      })
    )
    const ack = yield* Effect.promise(() =>
      (socket as Socket).timeout(5_000).emitWithAck("join-channel", {
        channel: session.channel,
        app_key: session.app_key,
        token: session.token
      })
    )
    expect(ack).toEqual({ status: true, channel: session.channel })
    return { socket, received }
  })

layer(
  TestServerLive({ OUTBOUND_ALLOW_PRIVATE: "true", WEBHOOK_TIMEOUT_MS: "2000", WEBHOOK_RETRY_DELAY_MS: "2000" }),
  { excludeTestServices: true }
)("operator send", (it) => {
  describe("text as JSON", () => {
    it.effect("answers 200 with the 2.4 record: assistant, sent_to_user, the conversation's context and the sender", () =>
      Effect.gen(function*() {
        const { owner, conversationId, opportunityId, contactId, channel, pipeline, inbound, contactKey } =
          yield* webConversation()
        const before = yield* messagesIn(conversationId)
        const started = Date.now()
        const r = yield* send(owner, conversationId, { message: "Hello from an operator" })
        expect(r.status).toBe(200)
        expect(r.body).toMatchObject({ status: true, code: 200, validation: [] })
        expect(typeof bodyAs(r, Enveloped).message).toBe("string")
        const record = ok(r, "messages.send")
        expect(Object.keys(record).sort()).toEqual([
          "_id",
          "call_type",
          "channel_id",
          "contact_id",
          "conversation_id",
          "cost_for_user",
          "created_at",
          "error",
          "external_chat_id",
          "external_message_id",
          "files",
          "message",
          "opportunity_id",
          "pipeline_id",
          "role",
          "sender_id",
          "stage_id",
          "status",
          "updated_at"
        ])
        expect(record._id).toMatch(ULID)
        expect(record).toMatchObject({
          role: "assistant",
          status: "sent_to_user",
          message: "Hello from an operator",
          files: [],
          cost_for_user: 0,
          external_chat_id: contactKey,
          conversation_id: conversationId,
          opportunity_id: opportunityId,
          contact_id: contactId,
          channel_id: channel.id,
          stage_id: inbound.id,
          pipeline_id: pipeline.id,
          sender_id: owner.user_id,
          error: null,
          // no callback URL on this channel: nothing to take an external id from
          external_message_id: null
        })
        expect(typeof record.call_type).toBe("string")
        expect(record.call_type!.length).toBeGreaterThan(0)
        expect(record.created_at).toMatch(TIMESTAMP)
        expect(record.updated_at).toMatch(TIMESTAMP)
        expect(Math.abs(Date.parse(record.created_at) - started)).toBeLessThan(60_000)
        expect(Date.parse(record.updated_at)).toBeGreaterThanOrEqual(Date.parse(record.created_at))

        expect(yield* messagesIn(conversationId)).toBe(before + 1)
        expect(yield* storedRow(record._id)).toEqual({
          status: "sent_to_user",
          error: null,
          message: "Hello from an operator",
          external_message_id: null,
          sender_id: owner.user_id
        })
      }))

    it.scoped("broadcasts new_message on conversation.<id> to a socket joined with Initiate's token", () =>
      Effect.gen(function*() {
        const { owner, session, conversationId } = yield* webConversation()
        expect(session.channel).toBe(`conversation.${conversationId}`)
        const client = yield* joinedSocket(session)
        const r = yield* send(owner, conversationId, { message: "Live over the socket" })
        expect(r.status).toBe(200)
        const payload = yield* eventually(Effect.sync(() => client.received[0]), 5_000)
        expect(Array.isArray(payload)).toBe(true)
        const items: ReadonlyArray<unknown> = Array.isArray(payload) ? payload : []
        expect(items[0]).toMatchObject({ message: "Live over the socket", cost: 0 })
        expect(client.received).toHaveLength(1)
      }))

    it.scoped("a socket joined to another conversation receives nothing", () =>
      Effect.gen(function*() {
        const mine = yield* webConversation()
        const other = yield* webConversation()
        const bystander = yield* joinedSocket(other.session)
        const listener = yield* joinedSocket(mine.session)
        expect((yield* send(mine.owner, mine.conversationId, { message: "only for mine" })).status).toBe(200)
        yield* eventually(Effect.sync(() => listener.received.length === 1), 5_000)
        // a marker on the bystander's own conversation: once it arrives, an earlier stray emit would have too
        expect((yield* send(other.owner, other.conversationId, { message: "marker" })).status).toBe(200)
        yield* eventually(Effect.sync(() => bystander.received.length === 1), 5_000)
        expect(Schema.decodeUnknownSync(SocketMessages)(bystander.received[0])[0]!.message).toBe("marker")
        expect(listener.received).toHaveLength(1)
      }))

    it.effect("with a callback URL: one signed POST carrying the record's _id and text; its message_id becomes external_message_id", () =>
      Effect.scoped(Effect.gen(function*() {
        const receiver = yield* webhookReceiver(() => "ok")
        const { owner, channel, conversationId, contactKey } = yield* webConversation({ callback_url: receiver.url })
        const r = yield* send(owner, conversationId, { message: "Your order has shipped" })
        expect(r.status).toBe(200)
        const record = ok(r, "messages.send")
        expect(record.status).toBe("sent_to_user")

        yield* eventually(Effect.sync(() => receiver.received.length === 1))
        const [hit] = receiver.received
        const body = JSON.parse(hit!.rawBody)
        expect(body).toEqual({
          event: "message",
          client_id: channel.client_id,
          contact_id: contactKey,
          message_id: record._id,
          text: "Your order has shipped",
          timestamp: hit!.headers["x-service-timestamp"],
          sender: "operator",
          // the operator's display name, so the contact's side can show who answers (docs/web-chat.md)
          sender_name: expect.stringMatching(/^User \d+$/)
        })
        expect(hit!.headers["content-type"]).toBe("application/json")
        const headers = {
          signature: hit!.headers["x-service-signature"] as string,
          timestamp: hit!.headers["x-service-timestamp"] as string
        }
        expect(headers.signature).toMatch(/^sha256=[0-9a-f]{64}$/)
        expect(verifyServiceSignature(channel.client_secret, headers, hit!.rawBody)).toBe(true)
        expect(verifyServiceSignature(channel.client_secret, headers, hit!.rawBody.replace("shipped", "shipped!")))
          .toBe(false)
        expect(verifyServiceSignature("wcs_not-the-secret", headers, hit!.rawBody)).toBe(false)

        const external = yield* eventually(
          Effect.map(storedRow(record._id), (row) => row?.external_message_id ?? undefined)
        )
        expect(external).toBe("ext-1")
        // delivered once: no second POST arrives after the first succeeded
        yield* Effect.sleep("500 millis")
        expect(receiver.received).toHaveLength(1)
        expect((yield* storedRow(record._id))!.status).toBe("sent_to_user")
      })))

    it.effect("updates the conversation's last_message_content and last_message_at (seen on the opportunity)", () =>
      Effect.gen(function*() {
        const { owner, conversationId, opportunityId } = yield* webConversation()
        const r = yield* send(owner, conversationId, { message: "Latest words" })
        expect(r.status).toBe(200)
        const opportunity = ok(yield* get(owner, `/api/user/opportunities/${opportunityId}`), "opportunities.get")
        const summary = opportunity.conversations.find((c) => c.id === conversationId)
        expect(summary).toBeDefined()
        expect(summary!.last_message_content).toBe("Latest words")
        expect(summary!.last_message_at).toMatch(TIMESTAMP)
        expect(Date.parse(summary!.last_message_at!)).toBe(Date.parse(ok(r, "messages.send").created_at))
        expect(summary!.messages_count).toBe(yield* messagesIn(conversationId))
      }))

    it.effect("accepts exactly 10,000 characters, as JSON and as a multipart message field", () =>
      Effect.gen(function*() {
        const { owner, conversationId } = yield* webConversation()
        const text = "x".repeat(9_999) + "y"
        const r = yield* send(owner, conversationId, { message: text })
        expect(r.status).toBe(200)
        const record = ok(r, "messages.send")
        expect(record.message).toBe(text)
        expect((yield* storedRow(record._id))!.message).toHaveLength(10_000)
        // a multipart body may carry text only, too
        const form = new FormData()
        form.append("message", text)
        const multipart = yield* send(owner, conversationId, form)
        expect(multipart.status).toBe(200)
        expect(ok(multipart, "messages.send")).toMatchObject({ message: text, files: [], status: "sent_to_user" })
      }))
  })

  describe("files as multipart", () => {
    it.effect("stores two files[] with 2.5 entries whose signed URLs download the exact bytes", () =>
      Effect.gen(function*() {
        const { owner, conversationId, opportunityId } = yield* webConversation()
        const png = bytesOf(3000, 7)
        const pdf = new TextEncoder().encode("%PDF-1.4 an operator's quote")
        const form = new FormData()
        form.append("message", "Here are the documents")
        form.append("files[]", file(png, "image/png"), "photo.png")
        form.append("files[]", file(pdf, "application/pdf"), "Quote 2024.pdf")
        const r = yield* send(owner, conversationId, form)
        expect(r.status).toBe(200)
        const record = ok(r, "messages.send")
        expect(record).toMatchObject({ message: "Here are the documents", status: "sent_to_user", role: "assistant" })
        expect(record.files).toHaveLength(2)
        const [image, document] = [record.files[0]!, record.files[1]!]
        expect(image).toMatchObject({ mimetype: "image/png", type: "image", size: png.length, name: "photo.png" })
        expect(document).toMatchObject({
          mimetype: "application/pdf",
          type: "document",
          size: pdf.length,
          name: "Quote 2024.pdf"
        })
        for (const entry of record.files) {
          expect(Object.keys(entry).sort()).toEqual(["mimetype", "name", "path", "size", "type", "url"])
          expect(entry.path).not.toContain("..")
          expect(entry.url).toContain("signature=")
        }
        expect(image.path).not.toBe(document.path)

        const gotImage = yield* download(image.url)
        expect(gotImage.status).toBe(200)
        expect(gotImage.type).toBe("image/png")
        expect(gotImage.bytes.equals(Buffer.from(png))).toBe(true)
        const gotPdf = yield* download(document.url)
        expect(gotPdf.status).toBe(200)
        expect(gotPdf.bytes.equals(Buffer.from(pdf))).toBe(true)

        // private: the storage key alone, or a tampered signature, serves nothing
        const { baseUrl } = yield* TestServer
        expect((yield* download(`${baseUrl}/files/${image.path}`)).status).toBe(404)
        expect((yield* download(image.url.replace(/signature=[0-9a-f]{64}/, `signature=${"0".repeat(64)}`))).status)
          .toBe(404)

        const stored = yield* sqlRows<
          { files: ReadonlyArray<{ path: string; name: string; size: number; type: string }> }
        >`select files from messages where id = ${record._id}`
        expect(stored[0]!.files.map((f) => [f.path, f.name, f.size, f.type])).toEqual(
          record.files.map((f) => [f.path, f.name, f.size, f.type])
        )
        const opportunity = ok(yield* get(owner, `/api/user/opportunities/${opportunityId}`), "opportunities.get")
        expect(opportunity.conversations.find((c) => c.id === conversationId)!.last_message_content).toBe(
          "Here are the documents"
        )
      }))

    it.effect("files without a message are accepted and preview as [Attachment]", () =>
      Effect.gen(function*() {
        const { owner, conversationId, opportunityId } = yield* webConversation()
        const form = new FormData()
        form.append("files[]", file("plain words", "text/plain"), "notes.txt")
        const r = yield* send(owner, conversationId, form)
        expect(r.status).toBe(200)
        const record = ok(r, "messages.send")
        expect(record.message).toBeNull()
        expect(record.files.map((f) => [f.name, f.type, f.size, f.mimetype])).toEqual([
          ["notes.txt", "file", 11, expect.stringMatching(/^text\/plain/)]
        ])
        expect((yield* download(record.files[0]!.url)).bytes.toString("utf8")).toBe("plain words")
        const opportunity = ok(yield* get(owner, `/api/user/opportunities/${opportunityId}`), "opportunities.get")
        const summary = opportunity.conversations.find((c) => c.id === conversationId)!
        expect(summary.last_message_content).toBe("[Attachment]")
        expect(Date.parse(summary.last_message_at!)).toBe(Date.parse(record.created_at))
      }))

    it.effect("accepts 10 files and a file of exactly 25 MB", () =>
      Effect.gen(function*() {
        const { owner, conversationId } = yield* webConversation()
        const ten = new FormData()
        for (let i = 0; i < 10; i++) ten.append("files[]", file(`file number ${i}`, "text/plain"), `f${i}.txt`)
        const r10 = yield* send(owner, conversationId, ten)
        expect(r10.status).toBe(200)
        expect(ok(r10, "messages.send").files.map((f) => f.name)).toEqual(
          Array.from({ length: 10 }, (_, i) => `f${i}.txt`)
        )

        const exact = bytesOf(25 * MB, 3)
        const big = new FormData()
        big.append("message", "the big one")
        big.append("files[]", file(exact, "video/mp4"), "exact.mp4")
        const r = yield* send(owner, conversationId, big)
        expect(r.status).toBe(200)
        const record = ok(r, "messages.send")
        expect(record.files).toHaveLength(1)
        expect(record.files[0]).toMatchObject({
          size: 25 * MB,
          type: "video",
          mimetype: "video/mp4",
          name: "exact.mp4"
        })
        const got = yield* download(record.files[0]!.url)
        expect(got.status).toBe(200)
        expect(got.bytes.length).toBe(25 * MB)
        expect(got.bytes.equals(Buffer.from(exact))).toBe(true)
      }))
  })

  describe("422: the field is named and nothing is stored", () => {
    const fresh = Effect.gen(function*() {
      const c = yield* webConversation()
      return {
        ...c,
        before: {
          conversationId: c.conversationId,
          messages: yield* messagesIn(c.conversationId),
          workspaceId: c.owner.workspace_id
        }
      }
    })

    it.effect("neither message nor files: {} and {message: \"\"}, as JSON and as multipart", () =>
      Effect.gen(function*() {
        const { owner, conversationId, before } = yield* fresh
        yield* refusedWithNothingStored(yield* send(owner, conversationId, {}), "message", before)
        yield* refusedWithNothingStored(yield* send(owner, conversationId, { message: "" }), "message", before)
        yield* refusedWithNothingStored(yield* send(owner, conversationId, { message: null }), "message", before)
        const emptyForm = new FormData()
        emptyForm.append("message", "")
        yield* refusedWithNothingStored(yield* send(owner, conversationId, emptyForm), "message", before)
      }))

    it.effect("text over 10,000 characters, as JSON and as multipart", () =>
      Effect.gen(function*() {
        const { owner, conversationId, before } = yield* fresh
        yield* refusedWithNothingStored(
          yield* send(owner, conversationId, { message: "x".repeat(10_001) }),
          "message",
          before
        )
        const form = new FormData()
        form.append("message", "x".repeat(10_001))
        form.append("files[]", file("fine", "text/plain"), "fine.txt")
        yield* refusedWithNothingStored(yield* send(owner, conversationId, form), "message", before)
      }))

    it.effect("more than 10 files (11)", () =>
      Effect.gen(function*() {
        const { owner, conversationId, before } = yield* fresh
        const form = new FormData()
        form.append("message", "too many")
        for (let i = 0; i < 11; i++) form.append("files[]", file(`file ${i}`, "text/plain"), `f${i}.txt`)
        yield* refusedWithNothingStored(yield* send(owner, conversationId, form), "files", before)
      }))

    it.effect("a file of 25 MB + 1 byte, also behind a file that is fine; and one well over the limit, after which the connection still serves", () =>
      Effect.gen(function*() {
        const { owner, conversationId, before } = yield* fresh
        const over = new FormData()
        over.append("message", "one byte too many")
        over.append("files[]", file("small and fine", "text/plain"), "fine.txt")
        over.append("files[]", file(bytesOf(25 * MB + 1, 5), "video/mp4"), "over.mp4")
        yield* refusedWithNothingStored(yield* send(owner, conversationId, over), "files", before)

        const wayOver = new FormData()
        wayOver.append("message", "far too big")
        wayOver.append("files[]", file(bytesOf(26 * MB, 9), "video/mp4"), "huge.mp4")
        yield* refusedWithNothingStored(yield* send(owner, conversationId, wayOver), "files", before)

        // the refused body is drained: the client's kept-alive connection serves the next request at once
        const started = Date.now()
        const next = yield* send(owner, conversationId, { message: "still connected" })
        expect(next.status).toBe(200)
        expect(Date.now() - started).toBeLessThan(2_000)
      }))
  })

  describe("access", () => {
    it.effect("403 `Missing required scope: messages:send` for a token without the scope", () =>
      Effect.gen(function*() {
        const { owner, conversationId } = yield* webConversation()
        const before = yield* messagesIn(conversationId)
        const scopes: ReadonlyArray<Scope> = ["opportunities:read", "opportunities:write", "conversations:write"]
        const narrow = yield* tokenFor(owner.email, scopes)
        const r = yield* send({ token: narrow.token }, conversationId, { message: "not allowed" })
        expectStatus(r, 403, "Missing required scope: messages:send")
        expect(yield* messagesIn(conversationId)).toBe(before)
        // the same user with the scope may
        const full = yield* tokenFor(owner.email, ["messages:send"])
        expect((yield* send({ token: full.token }, conversationId, { message: "allowed" })).status).toBe(200)
      }))

    it.effect("403 for another workspace's conversation, for text and files, and nothing is stored there", () =>
      Effect.gen(function*() {
        const { conversationId, owner } = yield* webConversation()
        const stranger = yield* seedUser()
        const before = yield* messagesIn(conversationId)
        const r = yield* send(stranger, conversationId, { message: "intrusion" })
        expectStatus(r, 403)
        const form = new FormData()
        form.append("files[]", file("intrusion", "text/plain"), "x.txt")
        expectStatus(yield* send(stranger, conversationId, form), 403)
        // even an invalid body does not reveal more than the 403
        expectStatus(yield* send(stranger, conversationId, { message: "" }), 403)
        expect(yield* messagesIn(conversationId)).toBe(before)
        expect(yield* operatorFiles(owner.workspace_id)).toEqual([])
        expect(yield* filesRows(owner.workspace_id)).toBe(0)
        expect(yield* operatorFiles(stranger.workspace_id)).toEqual([])
      }))

    it.effect("a manager of the workspace may send; the sender is the manager", () =>
      Effect.gen(function*() {
        const { conversationId, owner } = yield* webConversation()
        const manager = yield* seedUser()
        expectStatus(yield* send(manager, conversationId, { message: "before the grant" }), 403)
        yield* Effect.flatMap(
          Identity,
          (identity) => identity.grantManager(manager.email, WorkspaceId.make(owner.workspace_id))
        )
          .pipe(Effect.orDie)
        const r = yield* send(manager, conversationId, { message: "as a manager" })
        expect(r.status).toBe(200)
        expect(ok(r, "messages.send").sender_id).toBe(manager.user_id)
      }))

    it.effect("404 for a conversation id that does not exist; 422 naming the path for a non-numeric id", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const r = yield* send(owner, 2_000_000_000, { message: "nobody there" })
        expectStatus(r, 404)
        const bad = yield* send(owner, "abc", { message: "not an id" })
        expect(bad.status).toBe(422)
        expect(bad.body).toMatchObject({ status: false, code: 422, data: null })
        expect(failure(bad).validation.map((v) => v.field)).toEqual(["conversation"])
        expect(yield* count`select count(*) as n from messages where sender_id = ${owner.user_id}`).toBe(0)
      }))

    it.effect("a super user acting as another user sends as that user", () =>
      Effect.gen(function*() {
        const { conversationId, owner } = yield* webConversation()
        const admin = yield* seedUser()
        yield* Effect.flatMap(Identity, (identity) => identity.makeSuper(admin.email)).pipe(Effect.orDie)
        // not their workspace without impersonation
        expectStatus(yield* send(admin, conversationId, { message: "as myself" }), 403)
        const r = yield* send(admin, conversationId, { message: "on behalf" }, {
          "x-act-as-user": String(owner.user_id)
        })
        expect(r.status).toBe(200)
        const record = ok(r, "messages.send")
        expect(record.sender_id).toBe(owner.user_id)
        expect((yield* storedRow(record._id))!.sender_id).toBe(owner.user_id)
        // a user who is not super may not impersonate
        const plain = yield* seedUser()
        const refused = yield* send(plain, conversationId, { message: "pretend" }, {
          "x-act-as-user": String(owner.user_id)
        })
        expectStatus(refused, 403)
        // acting as a user of another workspace does not reach this conversation either
        const elsewhere = yield* send(admin, conversationId, { message: "wrong user" }, {
          "x-act-as-user": String(plain.user_id)
        })
        expectStatus(elsewhere, 403)
        expect(
          yield* count`select count(*) as n from messages where conversation_id = ${conversationId} and message in ('pretend', 'wrong user', 'as myself')`
        )
          .toBe(0)
      }))
  })

  describe("500 when the channel cannot carry it: the record is kept as failed", () => {
    it.scoped("an inactive channel: 500 naming the problem, status failed with the error, no broadcast, no webhook", () =>
      Effect.gen(function*() {
        const receiver = yield* webhookReceiver(() => "ok")
        const { owner, channel, conversationId, session } = yield* webConversation({ callback_url: receiver.url })
        const client = yield* joinedSocket(session)
        ok(yield* put(owner, `/api/user/channels/${channel.id}`, { is_active: false }), "channels.update")
        const before = yield* messagesIn(conversationId)
        const r = yield* send(owner, conversationId, { message: "into the void" })
        expectStatus(r, 500)
        expect(failure(r).message).toMatch(/inactive/i)
        expect(yield* messagesIn(conversationId)).toBe(before + 1)
        const [row] = yield* sqlRows<{ id: string; status: string; error: string | null; message: string }>`
          select id, status, error, message from messages where conversation_id = ${conversationId} and message = 'into the void'`
        expect(row).toMatchObject({ status: "failed", message: "into the void" })
        expect(row!.error).toBe(failure(r).message)
        yield* Effect.sleep("500 millis")
        expect(client.received).toEqual([])
        expect(receiver.received).toEqual([])
        // active again: the next one goes through
        ok(yield* put(owner, `/api/user/channels/${channel.id}`, { is_active: true }), "channels.update")
        const again = yield* send(owner, conversationId, { message: "back" })
        expect(again.status).toBe(200)
        expect(ok(again, "messages.send").status).toBe("sent_to_user")
      }))

    it.effect("a conversation on a non-web channel: 500 naming the channel kind, status failed with the error", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const whatsapp = yield* storedChannel(owner.workspace_id, "whatsapp")
        const sql = yield* SqlClient.SqlClient
        const [contact] = yield* sql<{ id: number }>`
          insert into contacts (workspace_id, phone) values (${owner.workspace_id}, '4915550001111') returning id`
        const [conversation] = yield* sql<{ id: number }>`
          insert into conversations (workspace_id, contact_id, channel_id, external_chat_id)
          values (${owner.workspace_id}, ${contact!.id}, ${whatsapp.id}, '4915550001111') returning id::int as id`
        const conversationId = Number(conversation!.id)
        const r = yield* send(owner, conversationId, { message: "hola" })
        expectStatus(r, 500)
        expect(failure(r).message).toMatch(/whatsapp/)
        const rows = yield* sqlRows<{ status: string; error: string | null; sender_id: number }>`
          select status, error, sender_id::int as sender_id from messages where conversation_id = ${conversationId}`
        expect(rows).toEqual([{ status: "failed", error: failure(r).message, sender_id: owner.user_id }])
      }))

    it.effect("a conversation without a channel: 500, status failed with the error", () =>
      Effect.gen(function*() {
        const owner = yield* seedUser()
        const sql = yield* SqlClient.SqlClient
        const [contact] = yield* sql<{ id: number }>`
          insert into contacts (workspace_id, email) values (${owner.workspace_id}, 'nochannel@example.com') returning id`
        const [conversation] = yield* sql<{ id: number }>`
          insert into conversations (workspace_id, contact_id) values (${owner.workspace_id}, ${
          contact!.id
        }) returning id::int as id`
        const conversationId = Number(conversation!.id)
        const r = yield* send(owner, conversationId, { message: "anyone?" })
        expectStatus(r, 500)
        expect(failure(r).message.length).toBeGreaterThan(0)
        const rows = yield* sqlRows<{ status: string; error: string | null }>`
          select status, error from messages where conversation_id = ${conversationId}`
        expect(rows).toEqual([{ status: "failed", error: failure(r).message }])
      }))
  })
})
