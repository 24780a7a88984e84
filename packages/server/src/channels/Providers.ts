/**
 * The adapters by channel kind (docs/channels.md, "The channel layer"). Everything outside an adapter asks this
 * registry, so nothing about a provider is special-cased elsewhere: what its credentials hold, how they are
 * completed on create, the endpoint its sends are logged under.
 */
import type { ChannelProvider, SendFailure } from "@parley/domain"
import { Effect, Option, type Schema } from "effect"
import { randomInt } from "node:crypto"
import { AppConfig } from "../config/AppConfig.js"
import { randomBase62 } from "../identity/Secrets.js"
import { OutboundHttp } from "../outbound/OutboundHttp.js"
import { makeWebChatProvider, type WebChatCredentials } from "../webchat/WebChatProvider.js"
import { Email, EmailCredentialsInput, SimulatedMailboxInput } from "./email/Email.js"
import { metaConnect } from "./meta/MetaConnect.js"
import { MetaMessaging } from "./meta/MetaMessaging.js"
import { SimulatedBotInput, Telegram, TelegramCredentialsInput } from "./telegram/Telegram.js"
import { simulatedCredentials, SimulatedSmsInput, Twilio, TwilioCredentialsInput } from "./twilio/Twilio.js"
import { DEFAULT_API_VERSION, SimulatedInput, WhatsApp, WhatsAppCredentialsInput } from "./whatsapp/WhatsApp.js"

/** WhatsApp's customer service window, wherever its messages go through. */
const WHATSAPP_WINDOW_MS = 24 * 3_600_000

const randomDigits = (n: number) => Array.from({ length: n }, () => randomInt(10)).join("")

/** How a kind connected with `credentials` (a provider's tokens) takes them on create and update. */
export interface ProviderConnect {
  /** What `credentials` must hold on create and update (422 naming `credentials.<field>` otherwise). */
  readonly inputFor: (given: unknown) => Schema.Schema<any, any, never>
  /** Whether checked credentials ask for the simulator Parley ships instead of the provider. */
  readonly simulated: (stored: any) => boolean
  /** The stored credentials for a checked input: generated and default fields filled. */
  readonly complete: (input: any) => Record<string, unknown>
  /** What the create answer shows once besides the webhook URL (never a token or secret). */
  readonly shown: (stored: any) => Record<string, string>
  /**
   * The channel's service window when it depends on the credentials (a Twilio WhatsApp sender has WhatsApp's 24
   * hours, an SMS number none); absent: the provider's `rules.serviceWindowMs`.
   */
  readonly serviceWindowMs?: (stored: any) => number | null
  /**
   * Tells the provider where Parley's webhook is, for providers whose webhook is set by API (Telegram's
   * `setWebhook`) rather than in the provider's dashboard; a failure is the operator's to fix (422).
   */
  readonly register?: (stored: any, webhookUrl: string) => Effect.Effect<void, SendFailure>
}

/** One channel kind as the channel layer sees it. `any`: each entry keeps its own credentials' type. */
export interface ProviderEntry {
  readonly provider: ChannelProvider<any>
  /**
   * Where the adapter's credentials are kept: `credentials`, the encrypted `credentials` a provider kind is created
   * with; `client`, a web channel's client id, secret and `callback_url` columns (no callback: socket only).
   */
  readonly stored: "credentials" | "client"
  /** Present for kinds connected with `credentials`. */
  readonly connect: ProviderConnect | null
  /** Where sends go, for the delivery log. */
  readonly endpoint: (stored: any) => string
}

export class ChannelProviders extends Effect.Service<ChannelProviders>()("@parley/server/ChannelProviders", {
  dependencies: [
    WhatsApp.Default,
    Telegram.Default,
    MetaMessaging.Default,
    Twilio.Default,
    Email.Default,
    OutboundHttp.Default,
    AppConfig.Default
  ],
  effect: Effect.gen(function*() {
    const whatsapp = yield* WhatsApp
    const telegram = yield* Telegram
    const meta = yield* MetaMessaging
    const twilio = yield* Twilio
    const email = yield* Email
    const webChat = yield* makeWebChatProvider
    const web = (provider: ChannelProvider<WebChatCredentials>): ProviderEntry => ({
      provider,
      stored: "client",
      connect: null,
      endpoint: (c: WebChatCredentials) => c.callback_url
    })
    const entries: Record<string, ProviderEntry> = {
      messenger: {
        provider: meta.messenger,
        stored: "credentials",
        endpoint: meta.endpoint("messenger"),
        connect: metaConnect("messenger")
      },
      instagram: {
        provider: meta.instagram,
        stored: "credentials",
        endpoint: meta.endpoint("instagram"),
        connect: metaConnect("instagram")
      },
      web: web(webChat.web),
      widget: web(webChat.widget),
      whatsapp: {
        provider: whatsapp.provider,
        stored: "credentials",
        endpoint: whatsapp.endpoint,
        connect: {
          inputFor: (given) =>
            typeof given === "object" && given !== null && "simulator" in given
              ? SimulatedInput
              : WhatsAppCredentialsInput,
          simulated: (stored: { simulator?: boolean }) => stored.simulator === true,
          complete: (input: typeof WhatsAppCredentialsInput.Type | typeof SimulatedInput.Type) =>
            "simulator" in input
              ? {
                phone_number_id: `1${randomDigits(14)}`,
                access_token: `sim_${randomBase62(40)}`,
                app_secret: randomBase62(32),
                verify_token: `pvt_${randomBase62(32)}`,
                api_version: DEFAULT_API_VERSION,
                simulator: true
              }
              : {
                ...input,
                verify_token: input.verify_token ?? `pvt_${randomBase62(32)}`,
                api_version: input.api_version ?? DEFAULT_API_VERSION
              },
          shown: (stored: { verify_token: string }) => ({ verify_token: stored.verify_token })
        }
      },
      telegram: {
        provider: telegram.provider,
        stored: "credentials",
        endpoint: telegram.endpoint,
        connect: {
          inputFor: (given) =>
            typeof given === "object" && given !== null && "simulator" in given
              ? SimulatedBotInput
              : TelegramCredentialsInput,
          simulated: (stored: { simulator?: boolean }) => stored.simulator === true,
          complete: (input: typeof TelegramCredentialsInput.Type | typeof SimulatedBotInput.Type) =>
            "simulator" in input
              ? {
                bot_token: `${randomDigits(10)}:SIM${randomBase62(35)}`,
                secret_token: randomBase62(48),
                simulator: true
              }
              : { bot_token: input.bot_token, secret_token: randomBase62(48) },
          shown: () => ({}),
          register: telegram.register
        }
      },
      sms: {
        provider: twilio.provider,
        stored: "credentials",
        endpoint: twilio.endpoint,
        connect: {
          inputFor: (given) =>
            typeof given === "object" && given !== null && "simulator" in given
              ? SimulatedSmsInput
              : TwilioCredentialsInput,
          simulated: (stored: { simulator?: boolean }) => stored.simulator === true,
          complete: (input: typeof TwilioCredentialsInput.Type | typeof SimulatedSmsInput.Type) =>
            "simulator" in input ? simulatedCredentials() : { ...input },
          shown: () => ({}),
          // a WhatsApp sender on Twilio keeps WhatsApp's 24-hour window (Twilio refuses the rest with 63016)
          serviceWindowMs: (stored: { from_number: string }) =>
            stored.from_number.startsWith("whatsapp:") ? WHATSAPP_WINDOW_MS : null
        }
      },
      email: {
        provider: email.provider,
        stored: "credentials",
        endpoint: email.endpoint,
        connect: {
          inputFor: (given) =>
            typeof given === "object" && given !== null && "simulator" in given
              ? SimulatedMailboxInput
              : EmailCredentialsInput,
          simulated: (stored: { simulator?: boolean }) => stored.simulator === true,
          complete: (input: typeof EmailCredentialsInput.Type | typeof SimulatedMailboxInput.Type) =>
            "simulator" in input
              ? { address: `mailbox-${randomBase62(10).toLowerCase()}@simulator.parley.invalid`, simulator: true }
              : { ...input },
          shown: () => ({})
        }
      }
    }
    return {
      forKind: (kind: string): Option.Option<ProviderEntry> => Option.fromNullable(entries[kind])
    }
  })
}) {}
