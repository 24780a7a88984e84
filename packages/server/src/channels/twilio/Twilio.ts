/**
 * The Twilio Programmable Messaging adapter (docs/channels.md, "SMS (Twilio)"): the channel layer's port for
 * `kind: "sms"`. Signatures and parsing are in TwilioWebhook.ts, the REST calls in TwilioApi.ts. The operator pastes
 * the channel's `webhook_url` as the number's "A message comes in" webhook; each send names it as its
 * `StatusCallback`, so receipts come back to the same URL.
 */
import { NodeHttpClient } from "@effect/platform-node"
import type { ChannelProvider } from "@parley/domain"
import { Effect, Option, Schema } from "effect"
import { randomBytes, randomInt } from "node:crypto"
import { AppConfig } from "../../config/AppConfig.js"
import { BoundAddresses } from "../../http/Listener.js"
import { makeTwilioApi, MAX_BODY_CHARS } from "./TwilioApi.js"
import { parse, verify } from "./TwilioWebhook.js"

/** What `credentials` holds for an SMS channel, as given on create (and replaced whole by update). */
export const TwilioCredentialsInput = Schema.Struct({
  account_sid: Schema.String.pipe(
    Schema.filter((s) =>
      /^AC[0-9a-fA-F]{32}$/.test(s) || "must be the Account SID from Twilio's console (AC and 32 hex characters)"
    )
  ),
  auth_token: Schema.String.pipe(
    Schema.filter((s) => /^[0-9a-fA-F]{32}$/.test(s) || "must be the account's Auth Token (32 hex characters)")
  ),
  from_number: Schema.String.pipe(
    Schema.filter((s) =>
      /^(whatsapp:)?\+[1-9]\d{6,14}$/.test(s) || /^MG[0-9a-fA-F]{32}$/.test(s) ||
      "must be the Twilio number in E.164 (+14155550100), a WhatsApp sender (whatsapp:+14155550100) or a Messaging Service SID (MG...)"
    )
  )
})

/** A channel that talks to the simulator Parley ships (docs/channels.md): everything else is generated. */
export const SimulatedSmsInput = Schema.Struct({ simulator: Schema.Literal(true) })

/** Where this server's Twilio simulator answers as the REST API (simulator/TwilioSimulator.ts). */
export const SIMULATOR_TWILIO_API_PATH = "/simulator/twilio-api"

/** As stored (encrypted). */
export const TwilioCredentials = Schema.Struct({
  account_sid: Schema.String,
  auth_token: Schema.String,
  from_number: Schema.String,
  /** Sends go to this server's own simulator, never to Twilio. */
  simulator: Schema.optional(Schema.Boolean)
})
export type TwilioCredentials = typeof TwilioCredentials.Type

/** Credentials for a simulated channel: a made-up account and a US number from the 555 range. */
export const simulatedCredentials = (): TwilioCredentials => ({
  account_sid: `AC${randomBytes(16).toString("hex")}`,
  auth_token: randomBytes(16).toString("hex"),
  from_number: `+1555${String(randomInt(1_000_000, 10_000_000))}`,
  simulator: true
})

/**
 * Twilio's media limits: 5 MB a message for MMS, 16 MB for WhatsApp; a contact's file is fetched within the larger,
 * like the other channels' 16 to 25 MB.
 */
const MAX_FILE_BYTES = 16 * 1024 * 1024

export class Twilio extends Effect.Service<Twilio>()("@parley/server/Twilio", {
  dependencies: [AppConfig.Default, NodeHttpClient.layerUndici, BoundAddresses.Default],
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const bound = yield* BoundAddresses
    const api = yield* makeTwilioApi
    /** Twilio's REST API, or for a simulated channel this process's own simulator. */
    const baseOf = (c: TwilioCredentials) =>
      c.simulator === true
        ? `${bound.apiNow() ?? `http://${config.host}:${config.port}`}${SIMULATOR_TWILIO_API_PATH}`
        : config.twilioApiUrl
    const provider: ChannelProvider<TwilioCredentials> = {
      kind: "sms",
      rules: {
        // SMS has no service window. A WhatsApp sender (`whatsapp:+…`) has Meta's 24 hours, but rules are per kind:
        // Twilio's refusal (63016) is read as `window_closed` instead
        serviceWindowMs: null,
        // Twilio's documented throughput of a US long code: one message segment a second
        defaultRatePerSecond: 1,
        delivery: { handOff: "provider", attempts: 6 },
        maxTextChars: MAX_BODY_CHARS,
        maxFileBytes: MAX_FILE_BYTES
      },
      credentials: TwilioCredentials,
      handshake: () => Option.none(),
      verify,
      parse,
      send: (c, m) => api.send(baseOf(c), c, m),
      // SMS has no read receipts to give, and Twilio none for a WhatsApp sender to mark a message read
      markRead: () => Effect.void,
      fetchMedia: (c, media, maxBytes) => api.fetchMedia(baseOf(c), c, media, maxBytes),
      check: (c) => api.check(baseOf(c), c),
      // the empty TwiML: Twilio answers nothing of its own
      webhookAnswer: {
        contentType: "text/xml",
        body: "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response></Response>"
      },
      account: (c) => c.account_sid,
      // each channel has its own webhook URL, set per number in Twilio's console
      sharesWebhook: () => false
    }
    /** The endpoint a send goes to, for the delivery log: the account SID, never the token. */
    const endpoint = (c: TwilioCredentials) => `${baseOf(c)}/2010-04-01/Accounts/${c.account_sid}/Messages.json`
    return { provider, endpoint }
  })
}) {}
