/**
 * The agent's replies as the reply benchmarks drive them (reply.ts, reply-soak.ts, compare.ts): a local
 * receiver for the channel's signed reply webhook, the demo pipeline answering at once through it, and
 * one exchange (a contact's message, then its reply at the webhook).
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { verifyServiceSignature } from "../packages/domain/src/Webhooks.js"
import { send, type Server } from "./support.js"

interface Waiter {
  readonly resolve: (hit: { at: number; messageId: string }) => void
}

export interface ReplyHook {
  readonly url: string
  readonly stats: { received: number; badSignatures: number; unexpected: number }
  /** Waits for the next reply to `contactId` (its arrival time and message id), failing after `timeoutMs`. */
  readonly next: (contactId: string, timeoutMs: number) => Promise<{ at: number; messageId: string }>
  readonly close: () => void
}

/**
 * The channel's reply webhook: verifies every signature (with the secret `secret` returns at the time)
 * and wakes whoever waits for that contact's reply. Contact ids must be unique across the servers it serves.
 */
export const startReplyHook = (secret: (contactId: string) => string) =>
  new Promise<ReplyHook>((resolve) => {
    const waiting = new Map<string, Waiter>()
    const stats = { received: 0, badSignatures: 0, unexpected: 0 }
    const server = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const at = Date.now()
        const rawBody = Buffer.concat(chunks).toString("utf8")
        stats.received++
        const body = JSON.parse(rawBody) as { contact_id: string; message_id: string }
        const valid = verifyServiceSignature(
          secret(body.contact_id),
          {
            signature: req.headers["x-service-signature"] as string,
            timestamp: req.headers["x-service-timestamp"] as string
          },
          rawBody
        )
        if (!valid) stats.badSignatures++
        const waiter = waiting.get(body.contact_id)
        if (waiter) {
          waiting.delete(body.contact_id)
          waiter.resolve({ at, messageId: body.message_id })
        } else {
          stats.unexpected++
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.keepAliveTimeout = 60_000
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
        stats,
        next: (contactId, timeoutMs) =>
          new Promise((resolve, reject) => {
            waiting.set(contactId, { resolve })
            setTimeout(() => reject(new Error(`no reply for ${contactId} within ${timeoutMs / 1000} s`)), timeoutMs)
              .unref()
          }),
        close: () => {
          server.closeAllConnections()
          server.close()
        }
      }))
  })

/** The server's environment for replies at a local receiver from the local model without its latency. */
export const replyServerEnv = { OUTBOUND_ALLOW_PRIVATE: "true", LOCAL_MODEL_LATENCY_MS: "0" }

export interface Exchange {
  readonly contactId: string
  readonly sentAt: number
  readonly answeredAt: number
  readonly webhookAt: number
  readonly inboundId: string
  readonly replyId: string
}

/**
 * Makes the demo pipeline answer at once (`reply_debounce_ms` 0) through the demo web channel to `hook`,
 * and returns one exchange on a server: a contact's message and its reply at the webhook.
 */
export const replyExchange = async (server: Server, hook: ReplyHook, timeoutMs = 30_000) => {
  const { client_id, client_secret } = server.demo.channel
  const basic = {
    authorization: `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString("base64")}`,
    "content-type": "application/json"
  }
  const bearer = { authorization: `Bearer ${server.demo.token}`, "content-type": "application/json" }
  for (
    const [path, body] of [
      [`/api/user/pipelines/${server.demo.pipeline_id}`, { reply_debounce_ms: 0 }],
      [`/api/user/channels/${server.demo.channel.id}`, { callback_url: hook.url }]
    ] as const
  ) {
    const r = await send({ method: "PUT", url: `${server.api}${path}`, headers: bearer, body: JSON.stringify(body) })
    if (r.status !== 200) throw new Error(`PUT ${path}: ${r.status} ${r.body}`)
  }
  return async (contactId: string, text: string): Promise<Exchange> => {
    const reply = hook.next(contactId, timeoutMs)
    const sentAt = Date.now()
    const r = await send({
      method: "POST",
      url: `${server.receiver}/web-chat/message`,
      headers: basic,
      body: JSON.stringify({ contact_id: contactId, message: text })
    })
    const answeredAt = Date.now()
    if (r.status !== 200) throw new Error(`POST /web-chat/message: ${r.status} ${r.body}`)
    const hit = await reply
    return {
      contactId,
      sentAt,
      answeredAt,
      webhookAt: hit.at,
      inboundId: JSON.parse(r.body).data.message_id,
      replyId: hit.messageId
    }
  }
}
