/**
 * The WhatsApp simulator Parley ships (docs/channels.md, "Try it without an account"): for a channel created with
 * `credentials: {"simulator": true}`, this process answers as Meta's Graph API does (`/simulator/graph/...`: the
 * bearer token, the request shapes, the 24-hour window, Meta's bodies and error codes) and plays the contact's phone
 * (`/simulator/whatsapp/{webhook key}`): a message typed there is posted to the channel's webhook correctly signed,
 * and what Parley sends back gets `sent`, `delivered` and `read` receipts as webhooks. Its threads are kept in
 * memory by the process that serves the API and sends (the `all` role: the embedded default).
 */
import { ulid } from "@parley/domain"
import { Duration, Effect, FiberSet, Option } from "effect"
import { createHmac } from "node:crypto"
import { ProviderCredentials } from "../channels/ProviderCredentials.js"
import { ChannelProviders } from "../channels/Providers.js"
import type { WhatsAppCredentials } from "../channels/whatsapp/WhatsApp.js"
import { AppConfig, receiverBaseUrl } from "../config/AppConfig.js"
import { BoundAddresses } from "../http/Listener.js"
import { makeSimulatedChannels, type Simulated } from "./SimulatedChannels.js"
import { templateListing, templateSent } from "./SimulatedTemplates.js"

export interface SimulatedMessage {
  readonly id: string
  readonly direction: "in" | "out"
  readonly text: string
  readonly at: string
  status: "sent" | "delivered" | "read"
}

type SimulatedChannel = Simulated<WhatsAppCredentials>

const DAY = 24 * 3_600_000
const MAX_THREAD = 200
const MAX_THREADS = 1_000

const metaError = (code: number, message: string, details: string) => ({
  error: {
    message: `(#${code}) ${message}`,
    type: "OAuthException",
    code,
    error_data: { messaging_product: "whatsapp", details },
    fbtrace_id: `sim${ulid().slice(-10)}`
  }
})
const expiredToken = {
  error: {
    message: "Error validating access token: the token is not this phone number's.",
    type: "OAuthException",
    code: 190
  }
}

export class WhatsAppSimulator extends Effect.Service<WhatsAppSimulator>()("@parley/server/WhatsAppSimulator", {
  dependencies: [AppConfig.Default, BoundAddresses.Default, ChannelProviders.Default, ProviderCredentials.Default],
  scoped: Effect.gen(function*() {
    const lookup = yield* makeSimulatedChannels
    const config = yield* AppConfig
    const bound = yield* BoundAddresses
    const receipts = yield* FiberSet.make()
    /** Threads by channel key and contact: what the contact sent and what Parley sent back. */
    const threads = new Map<string, Array<SimulatedMessage>>()
    const lastInbound = new Map<string, number>()

    const simulated = (where: "key" | "phone", value: string) =>
      lookup<WhatsAppCredentials>(
        ["whatsapp"],
        where === "key" ? { key: value } : { matches: (c) => c.phone_number_id === value }
      )

    const threadOf = (key: string, waId: string) => {
      const id = `${key}/${waId}`
      let thread = threads.get(id)
      if (thread === undefined) {
        if (threads.size >= MAX_THREADS) threads.delete(threads.keys().next().value!)
        thread = []
        threads.set(id, thread)
      }
      return thread
    }
    const append = (thread: Array<SimulatedMessage>, message: SimulatedMessage) => {
      thread.push(message)
      if (thread.length > MAX_THREAD) thread.splice(0, thread.length - MAX_THREAD)
    }

    /** Posts a webhook body to the channel's webhook URL, signed with its app secret as Meta signs. */
    const post = (channel: SimulatedChannel, body: unknown) =>
      Effect.gen(function*() {
        const receiver = receiverBaseUrl(config, yield* bound.receiver)
        const raw = JSON.stringify(body)
        const signature = createHmac("sha256", channel.credentials.app_secret).update(raw).digest("hex")
        // aborted when the fiber is interrupted (a receipt still on its way when the server stops)
        return yield* Effect.promise((signal) =>
          fetch(`${receiver}/channels/${channel.key}/webhook`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-hub-signature-256": `sha256=${signature}` },
            body: raw,
            signal
          }).then(async (r) => ({ status: r.status, body: await r.text() }))
        )
      })

    const envelope = (channel: SimulatedChannel, value: Record<string, unknown>) => ({
      object: "whatsapp_business_account",
      entry: [{
        id: "0",
        changes: [{
          field: "messages",
          value: {
            messaging_product: "whatsapp",
            metadata: { display_phone_number: "15550100000", phone_number_id: channel.credentials.phone_number_id },
            ...value
          }
        }]
      }]
    })

    /** The contact writes: the message is posted to Parley as Meta would post it. */
    const contactSays = Effect.fn("WhatsAppSimulator.contactSays")(
      function*(key: string, input: { readonly wa_id: string; readonly name: string; readonly text: string }) {
        const channel = yield* simulated("key", key)
        if (Option.isNone(channel)) return Option.none()
        const id = `wamid.sim${ulid()}`
        const now = Date.now()
        lastInbound.set(`${key}/${input.wa_id}`, now)
        append(threadOf(key, input.wa_id), {
          id,
          direction: "in",
          text: input.text,
          at: new Date(now).toISOString(),
          status: "sent"
        })
        const answer = yield* post(
          channel.value,
          envelope(channel.value, {
            contacts: [{ profile: { name: input.name }, wa_id: input.wa_id }],
            messages: [{
              from: input.wa_id,
              id,
              timestamp: String(Math.floor(now / 1000)),
              type: "text",
              text: { body: input.text }
            }]
          })
        )
        return Option.some({ message_id: id, webhook_status: answer.status })
      }
    )

    const thread = (key: string, waId: string) => threads.get(`${key}/${waId}`) ?? []

    /** Receipts for a message Parley sent: `sent` at once, then `delivered` and `read` as a phone would. */
    const receiptsFor = (channel: SimulatedChannel, waId: string, message: SimulatedMessage) =>
      FiberSet.run(
        receipts,
        Effect.forEach(
          [["sent", 0], ["delivered", 700], ["read", 1_500]] as const,
          ([status, after]) =>
            Effect.sleep(Duration.millis(after)).pipe(
              Effect.zipRight(Effect.sync(() => void (message.status = status))),
              Effect.zipRight(post(
                channel,
                envelope(channel, {
                  statuses: [{
                    id: message.id,
                    status,
                    timestamp: String(Math.floor(Date.now() / 1000)),
                    recipient_id: waId
                  }]
                })
              ))
            ),
          { discard: true }
        ).pipe(Effect.catchAllCause((cause) => Effect.logWarning("The simulator's receipts failed", cause)))
      )

    /** `POST /simulator/graph/{version}/{phone_number_id}/messages`, as Meta answers it. */
    const graphSend = Effect.fn("WhatsAppSimulator.graphSend")(
      function*(phoneNumberId: string, token: string | undefined, body: any) {
        const channel = yield* simulated("phone", phoneNumberId)
        if (Option.isNone(channel) || token !== channel.value.credentials.access_token) {
          return { status: 401, body: expiredToken }
        }
        if (body?.messaging_product !== "whatsapp") {
          return { status: 400, body: metaError(100, "Invalid parameter", "messaging_product must be whatsapp") }
        }
        const key = channel.value.key
        if (body.status === "read") {
          for (const [id, messages] of threads) {
            if (id.startsWith(`${key}/`)) { for (const m of messages) if (m.id === body.message_id) m.status = "read" }
          }
          return { status: 200, body: { success: true } }
        }
        const waId = String(body.to ?? "")
        const opened = lastInbound.get(`${key}/${waId}`)
        if (body.type !== "template" && (opened === undefined || Date.now() - opened > DAY)) {
          return {
            status: 400,
            body: metaError(
              131047,
              "Re-engagement message",
              "More than 24 hours have passed since the customer last replied."
            )
          }
        }
        const template = body.type === "template" ? templateSent(body.template) : undefined
        if (template !== undefined && "code" in template) {
          return { status: 400, body: metaError(template.code, template.message, template.details) }
        }
        const text = template !== undefined
          ? template.text
          : body.type === "text"
          ? String(body.text?.body ?? "")
          : `[${body.type}] ${body[body.type]?.link ?? ""}`
        const message: SimulatedMessage = {
          id: `wamid.sim${ulid()}`,
          direction: "out",
          text,
          at: new Date().toISOString(),
          status: "sent"
        }
        append(threadOf(key, waId), message)
        yield* receiptsFor(channel.value, waId, message)
        return {
          status: 200,
          body: {
            messaging_product: "whatsapp",
            contacts: [{ input: waId, wa_id: waId }],
            messages: [{ id: message.id }]
          }
        }
      }
    )

    /**
     * `GET /simulator/graph/{version}/{phone_number_id}`: the phone number's record; with `/message_templates`, the
     * account's templates (a simulated channel's account id is its phone number id).
     */
    const graphPhone = Effect.fn("WhatsAppSimulator.graphPhone")(
      function*(phoneNumberId: string, token: string | undefined, templates = false) {
        const channel = yield* simulated("phone", phoneNumberId)
        if (Option.isNone(channel) || token !== channel.value.credentials.access_token) {
          return { status: 401, body: expiredToken }
        }
        if (templates) return { status: 200, body: templateListing() }
        return {
          status: 200,
          body: {
            verified_name: "Parley simulator",
            display_phone_number: "+1 555-010-0000",
            quality_rating: "GREEN",
            id: phoneNumberId
          }
        }
      }
    )

    return { contactSays, thread, graphSend, graphPhone, simulated }
  })
}) {}
