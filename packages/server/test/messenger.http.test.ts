/**
 * Issue 39, Messenger and Instagram: through the real server against a local fake of Meta's Messenger Platform that
 * checks the bearer token and the Send API's shapes, keeps the 24-hour window and the HUMAN_AGENT tag's 7 days, and
 * echoes what the page sent, signed. Connecting a page and an account, signed and unsigned webhooks, every event
 * type, profiles, attachments from Meta's CDN, replies, echoes of Parley's own sends and of the Page inbox's,
 * receipts by watermark and by id, the window, and Meta's errors by meaning.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { connectChannel } from "./support/Channels.js"
import {
  API_VERSION,
  cdnLink,
  deliver,
  fakeMessenger,
  type FakeMessengerState,
  fromContact,
  invalidToken,
  messaging,
  messengerState,
  sentTo,
  tooManyCalls,
  unavailable
} from "./support/FakeMessenger.js"
import { expect422, get, ok, post, sqlRows } from "./support/Opportunities.js"
import { seedUser, TestServer, TestServerLive } from "./support/TestServer.js"
import { eventually } from "./support/WebhookReceiver.js"

const APP_SECRET = "meta-app-secret-for-messenger-tests"
const page = messengerState("page", "104729915033421", APP_SECRET)
const instagram = messengerState("instagram", "17841400008460056", `${APP_SECRET}-ig`)

const FakeMeta = Layer.unwrapScoped(
  Effect.gen(function*() {
    // one Graph API serves both the page and the Instagram account
    const url = yield* fakeMessenger([page, instagram])
    return TestServerLive({
      META_GRAPH_API_URL: url,
      ENGINE_SWEEP_INTERVAL_MS: "1000",
      WEBHOOK_RETRY_DELAY_MS: "200"
    })
  })
)

interface MetaChannel {
  readonly id: number
  readonly webhook_url: string
  readonly verify_token: string
}

const DAY = 24 * 3_600_000
let psids = 0
const freshPsid = () => String(6_100_000_000_000_000n + BigInt(process.pid) * 1000n + BigInt(++psids))

interface Row {
  readonly id: string
  readonly role: string
  readonly message: string | null
  readonly status: string
  readonly is_manual: boolean
  readonly call_type: string | null
  readonly files: ReadonlyArray<{ mimetype: string; type: string; size: number; name: string }>
  readonly attachments: ReadonlyArray<Record<string, unknown>>
  readonly external_message_id: string | null
  readonly delivery_status: string | null
  readonly handled_reason: string | null
  readonly error: string | null
  readonly conversation_id: number
  readonly contact_id: number
}

const messagesOf = (psid: string) =>
  sqlRows<Row>`
    select m.id, m.role, m.message, m.status, m.is_manual, m.call_type, m.files, m.attachments, m.external_message_id,
           m.delivery_status, m.handled_reason, m.error, m.conversation_id::int, m.contact_id::int
    from messages m join conversations c on c.id = m.conversation_id
    where c.external_chat_id = ${psid} order by m.created_at, m.id`

/** Waits until the contact's thread holds a message `pick` finds. */
const waitFor = (psid: string, pick: (rows: ReadonlyArray<Row>) => Row | undefined) =>
  eventually(Effect.map(messagesOf(psid), pick), 20_000)

const settledReply = (rows: ReadonlyArray<Row>) =>
  rows.find((r) => r.role === "assistant" && !r.is_manual && r.status !== "ai_generated" && r.status !== "sending")

const connectPage = (state: FakeMessengerState) =>
  Effect.gen(function*() {
    const made = yield* connectChannel<MetaChannel>(
      state.object === "page"
        ? {
          kind: "messenger",
          name: "Facebook page",
          credentials: { page_id: state.account, page_access_token: state.token, app_secret: state.appSecret }
        }
        : {
          kind: "instagram",
          name: "Instagram",
          credentials: { instagram_account_id: state.account, access_token: state.token, app_secret: state.appSecret }
        }
    )
    state.webhookUrl = made.channel.webhook_url
    return made
  })

layer(FakeMeta, { excludeTestServices: true })("Messenger and Instagram channels", (it) => {
  it.effect("connect: secrets never returned, the verify handshake, bad input named, other workspaces see nothing", () =>
    Effect.gen(function*() {
      const { channel, owner } = yield* connectPage(page)
      expect(channel.verify_token).toMatch(/^pvt_/)
      const shown = ok(yield* get(owner, `/api/user/channels/${channel.id}`), "channels.get")
      expect(shown).toMatchObject({ kind: "messenger", status: "connected" })
      expect(JSON.stringify(shown)).not.toContain(page.token)
      expect(JSON.stringify(shown)).not.toContain(APP_SECRET)
      const [row] = yield* sqlRows<
        { c: string }
      >`select credentials_ciphertext as c from channels where id = ${channel.id}`
      expect(row!.c).not.toContain(page.token)
      const checked = ok(yield* post(owner, `/api/user/channels/${channel.id}/check`, {}), "channels.check")
      expect(checked).toMatchObject({ ok: true, account: { name: "Acme Store" } })

      const challenge = yield* Effect.promise(() =>
        fetch(`${channel.webhook_url}?hub.mode=subscribe&hub.verify_token=${channel.verify_token}&hub.challenge=42`)
          .then(async (r) => ({ status: r.status, text: await r.text() }))
      )
      expect(challenge).toEqual({ status: 200, text: "42" })
      const wrong = yield* Effect.promise(() =>
        fetch(`${channel.webhook_url}?hub.mode=subscribe&hub.verify_token=pvt_wrongwrong&hub.challenge=42`)
      )
      expect(wrong.status).toBe(403)

      const bad = yield* post(owner, "/api/user/channels", {
        kind: "instagram",
        name: "Bad",
        credentials: { instagram_account_id: "not digits", access_token: "", app_secret: "s" }
      })
      expect422(bad, ["credentials.instagram_account_id", "credentials.access_token"])

      const stranger = yield* seedUser()
      expect((yield* get(stranger, `/api/user/channels/${channel.id}`)).status).toBe(404)
      expect((yield* post(stranger, `/api/user/channels/${channel.id}/check`, {})).status).toBe(404)
    }))

  it.effect("inbound: unsigned refused, each event type stored once, a profile name, files from the CDN, replies", () =>
    Effect.gen(function*() {
      const { channel } = yield* connectPage(page)
      const psid = freshPsid()
      page.profiles.set(psid, { first_name: "Ana", last_name: "Lima" })
      const hello = fromContact(page, psid, Date.now(), { text: "Hi, do you ship to Porto?" })
      const body = messaging(page, [hello])
      expect((yield* deliver(channel.webhook_url, page, body, null)).status).toBe(401)
      expect((yield* deliver(channel.webhook_url, page, body, "sha256=00")).status).toBe(401)
      expect(yield* messagesOf(psid)).toEqual([])
      expect((yield* deliver(channel.webhook_url, page, body)).status).toBe(200)
      expect((yield* deliver(channel.webhook_url, page, body)).status).toBe(200)

      const reply = yield* waitFor(psid, settledReply)
      expect(reply.status).toBe("sent_to_user")
      const rows = yield* messagesOf(psid)
      expect(rows.filter((r) => r.role === "user")).toHaveLength(1)
      const [contact] = yield* sqlRows<{ name: string }>`select name from contacts where id = ${rows[0]!.contact_id}`
      expect(contact).toMatchObject({ name: "Ana Lima" })
      const sent = sentTo(page, psid)
      expect(sent.at(-1)).toMatchObject({ messaging_type: "RESPONSE", metadata: `parley:${reply.id}` })
      // the page was seen typing (beside the turn: it may land after the reply)
      yield* eventually(
        Effect.sync(() =>
          page.requests.find((r) => r.body?.sender_action === "typing_on" && r.body.recipient.id === psid)
        ),
        20_000
      )
      // Meta echoes the page's own send: it is known for Parley's, not stored again
      yield* eventually(Effect.sync(() => page.echoes.find((e) => e.mid === reply.external_message_id)), 20_000)
      expect((yield* messagesOf(psid)).filter((r) => r.role === "assistant")).toHaveLength(1)

      // every other event type, in one batch
      const photo = cdnLink(page, "photo.jpg", Buffer.from("jpeg-bytes"), "image/jpeg")
      const t = Date.now()
      const events = [
        fromContact(page, psid, t + 1, { attachments: [{ type: "image", payload: { url: photo } }] }),
        fromContact(page, psid, t + 2, {
          attachments: [{ type: "location", payload: { coordinates: { lat: 41.15, long: -8.61 } } }]
        }),
        fromContact(page, psid, t + 3, { text: "Yes please", quick_reply: { payload: "SHIP_YES" } }),
        {
          sender: { id: psid },
          recipient: { id: page.account },
          timestamp: t + 4,
          postback: { mid: `m_pb_${psid}`, title: "Talk to sales", payload: "SALES" }
        },
        {
          sender: { id: psid },
          recipient: { id: page.account },
          timestamp: t + 5,
          reaction: { mid: reply.external_message_id, action: "react", reaction: "love", emoji: "❤" }
        },
        { sender: { id: psid }, recipient: { id: page.account }, timestamp: t + 6, optin: { ref: "landing" } }
      ]
      expect((yield* deliver(channel.webhook_url, page, messaging(page, events))).status).toBe(200)
      const stored = (yield* messagesOf(psid)).filter((r) => r.role === "user")
      expect(stored.map((r) => r.message)).toEqual([
        "Hi, do you ship to Porto?",
        "",
        "[location] 41.15, -8.61",
        "Yes please",
        "Talk to sales",
        "[reaction] ❤"
      ])
      expect(stored[1]!.files).toMatchObject([{ mimetype: "image/jpeg", type: "image", size: 10 }])
      expect(stored[3]!.attachments).toEqual([{ type: "quick_reply", payload: "SHIP_YES" }])
      expect(stored[4]!.attachments).toEqual([{ type: "postback", title: "Talk to sales", payload: "SALES" }])
      const [recorded] = yield* sqlRows<{ reason: string }>`
        select reason from channel_events where channel_id = ${channel.id} order by id desc limit 1`
      expect(recorded!.reason).toMatch(/optin event/)

      // receipts by watermark: everything the page sent up to it (once the batch's reply went out)
      yield* eventually(
        Effect.map(messagesOf(psid), (rows) => {
          const replies = rows.filter((r) => r.role === "assistant")
          return replies.length >= 2 && replies.every((r) => r.status === "sent_to_user") ? true : undefined
        }),
        20_000
      )
      const watermark = Date.now() + 1000
      const receipts = [
        { sender: { id: psid }, recipient: { id: page.account }, timestamp: watermark, delivery: { watermark } },
        { sender: { id: psid }, recipient: { id: page.account }, timestamp: watermark, read: { watermark } }
      ]
      expect((yield* deliver(channel.webhook_url, page, messaging(page, receipts))).status).toBe(200)
      const replies = (yield* messagesOf(psid)).filter((r) => r.role === "assistant" && r.status === "sent_to_user")
      expect(replies.length).toBeGreaterThanOrEqual(2)
      expect(new Set(replies.map((r) => r.delivery_status))).toEqual(new Set(["read"]))
    }))

  it.effect("an echo from the Page inbox is an operator's message, never answered; the window and HUMAN_AGENT", () =>
    Effect.gen(function*() {
      const { channel, owner } = yield* connectPage(page)
      // the contact wrote two days ago: the AI makes no reply, a person may answer with the HUMAN_AGENT tag
      const psid = freshPsid()
      const old = fromContact(page, psid, Date.now() - 2 * DAY, { text: "Is the blue one back in stock?" })
      expect((yield* deliver(channel.webhook_url, page, messaging(page, [old]))).status).toBe(200)
      const handled = yield* waitFor(psid, (rows) => rows.find((r) => r.handled_reason !== null))
      expect(handled.handled_reason).toBe("outside_service_window")
      const operator = ok(
        yield* post(owner, `/api/user/${handled.conversation_id}/messages`, { message: "It is, since this morning!" }),
        "messages.send"
      )
      expect(operator.status).toBe("sent_to_user")
      expect(sentTo(page, psid).at(-1)).toMatchObject({ messaging_type: "MESSAGE_TAG", tag: "HUMAN_AGENT" })

      // someone answers in the Page inbox: kept as the page's message, the AI does not answer it
      const echo = {
        sender: { id: page.account },
        recipient: { id: psid },
        timestamp: Date.now(),
        message: { is_echo: true, app_id: 263902037430900, mid: `m_inbox_${psid}`, text: "Reserved one for you." }
      }
      for (let i = 0; i < 2; i++) {
        expect((yield* deliver(channel.webhook_url, page, messaging(page, [echo]))).status).toBe(200)
      }
      const kept = (yield* messagesOf(psid)).filter((r) => r.call_type === "echo")
      expect(kept).toMatchObject([{
        role: "assistant",
        is_manual: true,
        message: "Reserved one for you.",
        external_message_id: `m_inbox_${psid}`,
        delivery_status: "sent"
      }])

      // after 7 days nothing may be sent: refused before any call
      const gone = freshPsid()
      const older = fromContact(page, gone, Date.now() - 8 * DAY, { text: "Hello?" })
      expect((yield* deliver(channel.webhook_url, page, messaging(page, [older]))).status).toBe(200)
      const quiet = yield* waitFor(gone, (rows) => rows.find((r) => r.handled_reason !== null))
      const refused = yield* post(owner, `/api/user/${quiet.conversation_id}/messages`, { message: "Still there?" })
      expect422(refused, ["message"])
      expect(JSON.stringify(refused.body)).toMatch(
        /168 hours after the contact's latest message\): nothing can be sent/
      )
      expect(sentTo(page, gone)).toEqual([])
    }))

  it.effect("Meta's errors by meaning, and Instagram: its own account, text limit and read receipts by id", () =>
    Effect.gen(function*() {
      const { channel, owner } = yield* connectPage(page)
      const psid = freshPsid()
      expect(
        (yield* deliver(
          channel.webhook_url,
          page,
          messaging(page, [fromContact(page, psid, Date.now(), { text: "Hi" })])
        ))
          .status
      ).toBe(200)
      const first = yield* waitFor(psid, settledReply)
      const conversation = first.conversation_id

      // a file goes by signed link as its own message after the text; the link serves the file
      const { baseUrl } = yield* TestServer
      const form = new FormData()
      form.append("message", "Here is the brochure")
      form.append("files[]", new Blob([Buffer.from("%PDF-1.4 brochure")], { type: "application/pdf" }), "brochure.pdf")
      const withFile = yield* Effect.promise(() =>
        fetch(`${baseUrl}/api/user/${conversation}/messages`, {
          method: "POST",
          headers: { authorization: `Bearer ${owner.token}` },
          body: form
        }).then((r) => r.status)
      )
      expect(withFile).toBe(200)
      const [text, file] = sentTo(page, psid).slice(-2)
      expect(text).toMatchObject({ text: "Here is the brochure", messaging_type: "RESPONSE" })
      expect(file!.attachment).toMatchObject({ type: "file", payload: { is_reusable: false } })
      const fetched = yield* Effect.promise(() => fetch(file!.attachment.payload.url).then((r) => r.text()))
      expect(fetched).toBe("%PDF-1.4 brochure")

      page.failures.push({ status: 400, body: unavailable })
      const refused = yield* post(owner, `/api/user/${conversation}/messages`, { message: "Are you there?" })
      expect(refused.status).toBe(500)
      expect(JSON.stringify(refused.body)).toContain("This person isn't available right now.")

      page.failures.push({ status: 400, body: tooManyCalls })
      const limited = ok(
        yield* post(owner, `/api/user/${conversation}/messages`, { message: "After the limit" }),
        "messages.send"
      )
      yield* eventually(
        Effect.map(
          sqlRows<{ status: string }>`select status from messages where id = ${limited._id}`,
          (rows) => rows[0]?.status === "sent_to_user" ? true : undefined
        ),
        20_000
      )

      const token = page.token
      page.token = "EAAGrevokedrevokedrevoked"
      const revoked = yield* post(owner, `/api/user/${conversation}/messages`, { message: "Hello again" })
      expect(revoked.status).toBe(500)
      expect(ok(yield* get(owner, `/api/user/channels/${channel.id}`), "channels.get")).toMatchObject({
        status: "disconnected"
      })
      expect(JSON.stringify(invalidToken)).not.toContain(token)
      page.token = token

      // Instagram: the account's own id, 1,000 characters a message, and `read` naming the message
      const ig = yield* connectPage(instagram)
      const igsid = freshPsid()
      instagram.profiles.set(igsid, { name: "Rui Costa", username: "rui.c" })
      const igHello = fromContact(instagram, igsid, Date.now(), { text: "Olá!" })
      expect((yield* deliver(ig.channel.webhook_url, instagram, messaging(instagram, [igHello]))).status).toBe(200)
      const igReply = yield* waitFor(igsid, settledReply)
      const long = `${"palavra ".repeat(150)}\n\n${"mais ".repeat(80)}`.trim()
      ok(yield* post(ig.owner, `/api/user/${igReply.conversation_id}/messages`, { message: long }), "messages.send")
      const parts = sentTo(instagram, igsid).slice(-2)
      expect(parts.every((p) => typeof p.text === "string" && p.text.length <= 1000)).toBe(true)
      expect(instagram.requests.every((r) => r.path.startsWith(`/${API_VERSION}/`) || r.path.startsWith("/cdn/"))).toBe(
        true
      )
      const seen = {
        sender: { id: igsid },
        recipient: { id: instagram.account },
        timestamp: Date.now(),
        read: { mid: igReply.external_message_id }
      }
      expect((yield* deliver(ig.channel.webhook_url, instagram, messaging(instagram, [seen]))).status).toBe(200)
      const [read] = yield* sqlRows<{ delivery_status: string; name: string }>`
        select m.delivery_status, c.name from messages m join contacts c on c.id = m.contact_id where m.id = ${igReply.id}`
      expect(read).toEqual({ delivery_status: "read", name: "Rui Costa" })
    }))

  it.effect("the simulator Parley ships plays the page and the contact: no Meta app needed", () =>
    Effect.gen(function*() {
      const { owner, pipeline } = yield* connectChannel<MetaChannel>({
        kind: "instagram",
        name: "Simulated account",
        credentials: { simulator: true }
      })
      const created = ok(
        yield* post(owner, "/api/user/channels", {
          kind: "messenger",
          name: "Simulated page",
          pipeline_id: pipeline.id,
          credentials: { simulator: true }
        }),
        "channels.create"
      ) as unknown as MetaChannel & { simulator_url: string }
      expect(created.simulator_url).toMatch(/\/simulator\/messenger\/wh_\w+$/)
      const checked = ok(yield* post(owner, `/api/user/channels/${created.id}/check`, {}), "channels.check")
      expect(checked).toMatchObject({ ok: true, account: { name: "Parley simulator" } })
      const phone = yield* Effect.promise(() =>
        fetch(created.simulator_url).then(async (r) => [r.status, await r.text()])
      )
      expect(phone).toEqual([200, expect.stringContaining("Messenger simulator")])

      const psid = freshPsid()
      const said = yield* Effect.promise(() =>
        fetch(`${created.simulator_url}/messages`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ psid, name: "Sim Contact", text: "Hello from the simulator" })
        }).then(async (r) => ({ status: r.status, body: await r.json() as { webhook_status: number } }))
      )
      expect(said).toMatchObject({ status: 200, body: { webhook_status: 200 } })
      // the reply reaches the simulated contact and is read there; Parley hears it by watermark
      const reply = yield* waitFor(
        psid,
        (rows) => rows.find((r) => r.role === "assistant" && r.delivery_status === "read")
      )
      expect(reply.status).toBe("sent_to_user")
      const [contact] = yield* sqlRows<{ name: string }>`select name from contacts where id = ${reply.contact_id}`
      expect(contact!.name).toBe("Sim Contact")
      const thread = yield* Effect.promise(() =>
        fetch(`${created.simulator_url}/thread?psid=${psid}`).then((r) =>
          r.json() as Promise<{ messages: Array<{ direction: string; text: string; status: string }> }>
        )
      )
      expect(thread.messages[0]).toMatchObject({ direction: "in", text: "Hello from the simulator" })
      expect(thread.messages.some((m) => m.direction === "out" && m.status === "read")).toBe(true)
      // nothing of it went to the Graph API the server is configured with
      expect(page.requests.some((r) => r.body?.recipient?.id === psid)).toBe(false)
    }))
})
