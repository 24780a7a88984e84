/**
 * The WhatsApp Cloud API adapter (docs/channels.md, "WhatsApp"): the channel layer's port for `kind: "whatsapp"`.
 * Parsing and signatures are in WhatsAppWebhook.ts, the Graph API calls in WhatsAppGraph.ts.
 */
import { NodeHttpClient } from "@effect/platform-node"
import type { ChannelProvider } from "@parley/domain"
import { Effect, Schema } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import { BoundAddresses } from "../../http/Listener.js"
import { makeGraph, MAX_TEXT_CHARS } from "./WhatsAppGraph.js"
import { handshake, parse, verify } from "./WhatsAppWebhook.js"

/** Where this server's WhatsApp simulator answers as the Graph API (simulator/WhatsAppSimulator.ts). */
export const SIMULATOR_GRAPH_PATH = "/simulator/graph"

/** The Graph API version used when a channel does not name one. */
export const DEFAULT_API_VERSION = "v23.0"

const Required = (what: string) =>
  Schema.String.pipe(
    Schema.filter((s) => s.trim().length > 0 || `${what} is required`),
    Schema.maxLength(1024, { message: () => "may not be longer than 1024 characters" })
  )

/** What `credentials` holds for a WhatsApp channel, as given on create (and replaced whole by update). */
export const WhatsAppCredentialsInput = Schema.Struct({
  phone_number_id: Required("The phone number id").pipe(
    Schema.filter((s) => /^\d{1,30}$/.test(s) || "must be the phone number's id from Meta (digits)")
  ),
  access_token: Required("The access token"),
  app_secret: Required("The app secret"),
  business_account_id: Schema.optional(
    Schema.String.pipe(Schema.filter((s) => /^\d{1,30}$/.test(s) || "must be the business account's id (digits)"))
  ),
  verify_token: Schema.optional(
    Schema.String.pipe(Schema.filter((s) => /^[\x21-\x7e]{8,128}$/.test(s) || "must be 8 to 128 visible characters"))
  ),
  api_version: Schema.optional(
    Schema.String.pipe(
      Schema.filter((s) => /^v\d{1,3}\.\d{1,3}$/.test(s) || "must be a Graph API version such as v23.0")
    )
  )
})

/** A channel that talks to the simulator Parley ships (docs/channels.md): everything else is generated. */
export const SimulatedInput = Schema.Struct({ simulator: Schema.Literal(true) })

/** As stored (encrypted): the verify token and API version always set. */
export const WhatsAppCredentials = Schema.Struct({
  phone_number_id: Schema.String,
  access_token: Schema.String,
  app_secret: Schema.String,
  business_account_id: Schema.optional(Schema.String),
  verify_token: Schema.String,
  api_version: Schema.String,
  /** Sends go to this server's own simulator (`/simulator/graph`), never to Meta. */
  simulator: Schema.optional(Schema.Boolean)
})
export type WhatsAppCredentials = typeof WhatsAppCredentials.Type

/** Meta's limit for documents is 100 MB; Parley keeps files it stores within 25 MB, like operator files. */
const MAX_FILE_BYTES = 25 * 1024 * 1024

export class WhatsApp extends Effect.Service<WhatsApp>()("@parley/server/WhatsApp", {
  dependencies: [AppConfig.Default, NodeHttpClient.layerUndici, BoundAddresses.Default],
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const bound = yield* BoundAddresses
    const graph = yield* makeGraph
    /** Meta's Graph API, or for a simulated channel this process's own simulator. */
    const baseOf = (c: WhatsAppCredentials) =>
      c.simulator === true
        ? `${bound.apiNow() ?? `http://${config.host}:${config.port}`}${SIMULATOR_GRAPH_PATH}`
        : config.metaGraphApiUrl
    const provider: ChannelProvider<WhatsAppCredentials> = {
      kind: "whatsapp",
      rules: {
        serviceWindowMs: 24 * 3_600_000,
        defaultRatePerSecond: 80,
        // a rate limit passes within minutes: six attempts, each wait twice the last
        delivery: { handOff: "provider", attempts: 6 },
        maxTextChars: MAX_TEXT_CHARS,
        maxFileBytes: MAX_FILE_BYTES
      },
      credentials: WhatsAppCredentials,
      handshake,
      verify,
      parse,
      send: (c, m) => graph.send(baseOf(c), c, m),
      markRead: (c, id) => graph.markRead(baseOf(c), c, id),
      fetchMedia: (c, media, maxBytes) => graph.fetchMedia(baseOf(c), c, media, maxBytes),
      check: (c) => graph.check(baseOf(c), c),
      account: (c) => c.phone_number_id,
      // a webhook signed with one app's secret carries the events of every number of that app
      sharesWebhook: (a, b) => a.app_secret === b.app_secret,
      // a simulated channel's account is its phone number
      templates: (c) =>
        graph.templates(baseOf(c), c.simulator === true ? { ...c, business_account_id: c.phone_number_id } : c)
    }
    /** The endpoint a send goes to, for the delivery log (never with the token). */
    const endpoint = (c: WhatsAppCredentials) => `${baseOf(c)}/${c.api_version}/${c.phone_number_id}/messages`
    return { provider, endpoint }
  })
}) {}
