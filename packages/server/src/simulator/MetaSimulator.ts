/**
 * The Messenger and Instagram simulator Parley ships (docs/channels.md, "Try it without an account"): for a channel
 * created with `credentials: {"simulator": true}`, this process answers as the Messenger Platform's Send API does
 * (`/simulator/messaging-graph/{version}/{account}/messages`: the bearer token, the shapes, Meta's bodies and error
 * codes, the contact's profile) and plays the contact's app (`/simulator/messenger/{key}`, `/simulator/instagram/
 * {key}`): a message typed there is posted to the channel's webhook signed with its app secret, and what Parley sends
 * back is delivered and read by watermark, as Messenger reports it. Threads live in the process's memory, like the
 * other simulators'.
 */
import { ulid } from "@parley/domain"
import { Duration, Effect, FiberSet, Option } from "effect"
import { createHmac } from "node:crypto"
import { accountOf, type MessagingCredentials } from "../channels/meta/MetaMessaging.js"
import { ProviderCredentials } from "../channels/ProviderCredentials.js"
import { ChannelProviders } from "../channels/Providers.js"
import { AppConfig, receiverBaseUrl } from "../config/AppConfig.js"
import { BoundAddresses } from "../http/Listener.js"
import type { PhoneOptions } from "./PhonePage.js"
import { makeSimulatedChannels } from "./SimulatedChannels.js"
import { SimulatedThreads } from "./SimulatedThreads.js"

export type MetaKind = "messenger" | "instagram"

export const messengerPhone: PhoneOptions = {
  app: "Messenger",
  colour: "#0866ff",
  field: "psid",
  idLabel: "Your page-scoped id",
  newId: `String(6100000000000000 + Math.floor(Math.random() * 1e9))`,
  intro: "Write to the page: your message goes to Parley as a signed Messenger webhook."
}

export const instagramPhone: PhoneOptions = {
  app: "Instagram",
  colour: "#c13584",
  field: "psid",
  idLabel: "Your Instagram-scoped id",
  newId: `String(6100000000000000 + Math.floor(Math.random() * 1e9))`,
  intro: "Write to the account: your message goes to Parley as a signed Instagram webhook."
}

interface SimulatedAccount {
  readonly key: string
  readonly kind: MetaKind
  readonly credentials: MessagingCredentials
}

const metaError = (status: number, code: number, message: string, subcode?: number) => ({
  status,
  body: {
    error: {
      message: `(#${code}) ${message}`,
      type: "OAuthException",
      code,
      ...(subcode === undefined ? {} : { error_subcode: subcode }),
      fbtrace_id: "SimulatorTrace"
    }
  }
})

const tokenOf = (a: SimulatedAccount) =>
  a.kind === "messenger" ? a.credentials.page_access_token : a.credentials.access_token

export class MetaSimulator extends Effect.Service<MetaSimulator>()("@parley/server/MetaSimulator", {
  dependencies: [AppConfig.Default, BoundAddresses.Default, ChannelProviders.Default, ProviderCredentials.Default],
  scoped: Effect.gen(function*() {
    const lookup = yield* makeSimulatedChannels
    const config = yield* AppConfig
    const bound = yield* BoundAddresses
    const receipts = yield* FiberSet.make()
    const threads = new SimulatedThreads()
    const names = new Map<string, string>()

    /** The simulated page or account with this webhook key, or this account id. */
    const simulated = (where: "key" | "account", value: string) =>
      Effect.map(
        lookup<MessagingCredentials>(
          ["messenger", "instagram"],
          where === "key" ? { key: value } : { matches: (c, kind) => accountOf(kind as MetaKind, c) === value }
        ),
        Option.map((a): SimulatedAccount => ({ ...a, kind: a.kind as MetaKind }))
      )

    /** Posts `messaging` events to the channel's webhook, signed with its app secret as Meta signs. */
    const post = (a: SimulatedAccount, events: ReadonlyArray<Record<string, unknown>>) =>
      Effect.gen(function*() {
        const receiver = receiverBaseUrl(config, yield* bound.receiver)
        const raw = JSON.stringify({
          object: a.kind === "messenger" ? "page" : "instagram",
          entry: [{ id: accountOf(a.kind, a.credentials), time: Date.now(), messaging: events }]
        })
        const signature = createHmac("sha256", a.credentials.app_secret).update(raw).digest("hex")
        return yield* Effect.promise((signal) =>
          fetch(`${receiver}/channels/${a.key}/webhook`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-hub-signature-256": `sha256=${signature}` },
            body: raw,
            signal
          }).then((r) => r.status)
        )
      })

    /** The contact writes: posted to Parley as Meta posts a message event. */
    const contactSays = Effect.fn("MetaSimulator.contactSays")(
      function*(key: string, input: { readonly psid: string; readonly name: string; readonly text: string }) {
        const account = yield* simulated("key", key)
        if (Option.isNone(account)) return Option.none()
        const mid = `m_sim${ulid()}`
        const now = Date.now()
        names.set(input.psid, input.name)
        threads.append(key, input.psid, {
          id: mid,
          direction: "in",
          text: input.text,
          at: new Date(now).toISOString(),
          status: "read"
        })
        const status = yield* post(account.value, [{
          sender: { id: input.psid },
          recipient: { id: accountOf(account.value.kind, account.value.credentials) },
          timestamp: now,
          message: { mid, text: input.text }
        }])
        return Option.some({ message_id: mid, webhook_status: status })
      }
    )

    /** What Parley sent is delivered, then read, each reported by watermark as Messenger reports it. */
    const receiptsFor = (a: SimulatedAccount, psid: string, mid: string) =>
      FiberSet.run(
        receipts,
        Effect.forEach(
          [["delivered", 700], ["read", 1_500]] as const,
          ([status, after]) =>
            Effect.sleep(Duration.millis(after)).pipe(
              Effect.zipRight(Effect.sync(() => {
                for (const m of threads.get(a.key, psid)) if (m.id === mid) m.status = status
              })),
              Effect.zipRight(post(a, [{
                sender: { id: psid },
                recipient: { id: accountOf(a.kind, a.credentials) },
                timestamp: Date.now(),
                [status === "delivered" ? "delivery" : "read"]: { watermark: Date.now() }
              }]))
            ),
          { discard: true }
        ).pipe(Effect.catchAllCause((cause) => Effect.logWarning("The simulator's receipts failed", cause)))
      )

    /** `POST .../{account}/messages` and `GET .../{id}`, as the Send API answers them. */
    const graph = Effect.fn("MetaSimulator.graph")(
      function*(method: "GET" | "POST", id: string, token: string | undefined, body: any) {
        if (method === "GET") {
          const own = yield* simulated("account", id)
          if (Option.isSome(own)) {
            if (token !== tokenOf(own.value)) return metaError(400, 190, "Invalid OAuth access token.")
            return { status: 200, body: { id, name: "Parley simulator", username: "parley.simulator" } }
          }
          const name = names.get(id)
          if (name === undefined) return metaError(400, 100, "Object does not exist", 33)
          const [first, ...rest] = name.split(" ")
          return { status: 200, body: { id, first_name: first, last_name: rest.join(" "), name } }
        }
        const account = yield* simulated("account", id)
        if (Option.isNone(account)) return metaError(400, 100, "Unsupported post request", 33)
        if (token !== tokenOf(account.value)) return metaError(400, 190, "Invalid OAuth access token.")
        const psid = String(body?.recipient?.id ?? "")
        if (!threads.has(account.value.key, psid)) {
          return metaError(400, 100, "No matching user found", 2018001)
        }
        if (body?.sender_action !== undefined) return { status: 200, body: { recipient_id: psid } }
        const message = body?.message ?? {}
        const text = typeof message.text === "string"
          ? message.text
          : typeof message.attachment?.payload?.url === "string"
          ? `[${message.attachment.type}] ${message.attachment.payload.url}`
          : ""
        const limit = account.value.kind === "messenger" ? 2000 : 1000
        if (text === "") return metaError(400, 100, "param message must be non-empty.")
        if (text.length > limit) {
          return metaError(400, 100, `Length of param message[text] must be less than or equal to ${limit}`)
        }
        const mid = `m_sim${ulid()}`
        threads.append(account.value.key, psid, {
          id: mid,
          direction: "out",
          text,
          at: new Date().toISOString(),
          status: "sent"
        })
        yield* receiptsFor(account.value, psid, mid)
        return { status: 200, body: { recipient_id: psid, message_id: mid } }
      }
    )

    return {
      contactSays,
      graph,
      simulated,
      thread: (key: string, psid: string) => threads.get(key, psid)
    }
  })
}) {}
