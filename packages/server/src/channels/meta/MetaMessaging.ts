/**
 * The Messenger and Instagram adapters (docs/channels.md, "Messenger and Instagram"): the channel layer's port for
 * `kind: "messenger"` (a Facebook page) and `kind: "instagram"` (an Instagram professional account), both on Meta's
 * Messenger Platform. The webhook's handshake and signature are WhatsApp's (MetaSignature.ts), the events are in
 * MessagingEvents.ts, the calls in SendApi.ts.
 */
import { NodeHttpClient } from "@effect/platform-node"
import type { ChannelProvider } from "@parley/domain"
import { Effect, Schema } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import { BoundAddresses } from "../../http/Listener.js"
import { type MessagingAccount, parse } from "./MessagingEvents.js"
import { handshake, verify } from "./MetaSignature.js"
import { HUMAN_AGENT_WINDOW_MS, makeSendApi, maxTextChars, type SendAccount, WINDOW_MS } from "./SendApi.js"

/** Where this server's Messenger and Instagram simulator answers as the Graph API (simulator/MetaSimulator.ts). */
export const SIMULATOR_MESSAGING_PATH = "/simulator/messaging-graph"

const Id = (what: string) =>
  Schema.String.pipe(Schema.filter((s) => /^\d{1,30}$/.test(s) || `must be the ${what}'s id from Meta (digits)`))
const Secret = (what: string) =>
  Schema.String.pipe(
    Schema.filter((s) => s.trim().length > 0 || `${what} is required`),
    Schema.maxLength(1024, { message: () => "may not be longer than 1024 characters" })
  )
const Optional = {
  verify_token: Schema.optional(
    Schema.String.pipe(Schema.filter((s) => /^[\x21-\x7e]{8,128}$/.test(s) || "must be 8 to 128 visible characters"))
  ),
  api_version: Schema.optional(
    Schema.String.pipe(
      Schema.filter((s) => /^v\d{1,3}\.\d{1,3}$/.test(s) || "must be a Graph API version such as v23.0")
    )
  )
}

/** What `credentials` holds for a Messenger channel, as given on create (and replaced whole by update). */
export const MessengerCredentialsInput = Schema.Struct({
  page_id: Id("page"),
  page_access_token: Secret("The page access token"),
  app_secret: Secret("The app secret"),
  ...Optional
})

/** What `credentials` holds for an Instagram channel. */
export const InstagramCredentialsInput = Schema.Struct({
  instagram_account_id: Id("Instagram account"),
  access_token: Secret("The access token"),
  app_secret: Secret("The app secret"),
  ...Optional
})

/** As stored (encrypted): either kind's fields, the verify token and API version always set. */
export const MessagingCredentials = Schema.Struct({
  page_id: Schema.optional(Schema.String),
  page_access_token: Schema.optional(Schema.String),
  instagram_account_id: Schema.optional(Schema.String),
  access_token: Schema.optional(Schema.String),
  app_secret: Schema.String,
  verify_token: Schema.String,
  api_version: Schema.String,
  /** Calls go to this server's own simulator, never to Meta. */
  simulator: Schema.optional(Schema.Boolean)
})
export type MessagingCredentials = typeof MessagingCredentials.Type

type Kind = SendAccount["kind"]

/** The page's or account's id and token, whichever kind the credentials are of. */
export const accountOf = (kind: Kind, c: MessagingCredentials) =>
  kind === "messenger" ? c.page_id ?? "" : c.instagram_account_id ?? ""
const tokenOf = (kind: Kind, c: MessagingCredentials) =>
  kind === "messenger" ? c.page_access_token ?? "" : c.access_token ?? ""

export class MetaMessaging extends Effect.Service<MetaMessaging>()("@parley/server/MetaMessaging", {
  dependencies: [AppConfig.Default, NodeHttpClient.layerUndici, BoundAddresses.Default],
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const bound = yield* BoundAddresses
    const api = yield* makeSendApi
    /** Meta's Graph API, or for a simulated channel this process's own simulator. */
    const baseOf = (c: MessagingCredentials) =>
      c.simulator === true
        ? `${bound.apiNow() ?? `http://${config.host}:${config.port}`}${SIMULATOR_MESSAGING_PATH}`
        : config.metaGraphApiUrl
    const sendAccount = (kind: Kind, c: MessagingCredentials): SendAccount => ({
      kind,
      account: accountOf(kind, c),
      token: tokenOf(kind, c),
      api_version: c.api_version
    })

    const provider = (kind: Kind): ChannelProvider<MessagingCredentials> => {
      const parsed: (c: MessagingCredentials) => MessagingAccount = (c) => ({
        object: kind === "messenger" ? "page" : "instagram",
        account: accountOf(kind, c)
      })
      return {
        kind,
        rules: {
          serviceWindowMs: WINDOW_MS,
          operatorWindowMs: HUMAN_AGENT_WINDOW_MS,
          // Meta paces the Send API per page by its own measure: Parley keeps well under it unless the channel says
          defaultRatePerSecond: kind === "messenger" ? 40 : 10,
          delivery: { handOff: "provider", attempts: 6 },
          maxTextChars: maxTextChars(kind),
          // Meta's limit on an attachment the Send API fetches by link
          maxFileBytes: 25 * 1024 * 1024
        },
        credentials: MessagingCredentials,
        handshake,
        verify,
        parse: (c, body) => parse(parsed(c), body),
        send: (c, m) => api.send(baseOf(c), sendAccount(kind, c), m),
        markRead: (c, _id, thread) => api.markRead(baseOf(c), sendAccount(kind, c), thread),
        fetchMedia: (_c, media, maxBytes) => api.fetchMedia(media, maxBytes),
        check: (c) => api.check(baseOf(c), sendAccount(kind, c)),
        profileName: (c, thread) => api.profileName(baseOf(c), sendAccount(kind, c), thread),
        account: (c) => accountOf(kind, c),
        // one app's webhook carries the events of every page (or account) subscribed to it
        sharesWebhook: (a, b) => a.app_secret === b.app_secret
      }
    }

    /** The endpoint a send goes to, for the delivery log (never with the token). */
    const endpoint = (kind: Kind) => (c: MessagingCredentials) =>
      `${baseOf(c)}/${c.api_version}/${accountOf(kind, c)}/messages`
    return { messenger: provider("messenger"), instagram: provider("instagram"), endpoint }
  })
}) {}
