/**
 * The Telegram Bot API adapter (docs/channels.md, "Telegram"): the channel layer's port for `kind: "telegram"`.
 * Updates and the secret-token check are in TelegramUpdates.ts, the Bot API calls in TelegramBot.ts. Connecting a
 * bot points its webhook at Parley (`setWebhook`) with a secret Parley generates; Telegram sends it back on every
 * update, and an update without it is refused.
 */
import { NodeHttpClient } from "@effect/platform-node"
import type { ChannelProvider } from "@parley/domain"
import { Effect, Option, Schema } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import { FileStorage } from "../../files/FileStorage.js"
import { BoundAddresses } from "../../http/Listener.js"
import { makeBot, MAX_DOWNLOAD_BYTES, MAX_TEXT_CHARS } from "./TelegramBot.js"
import { parse, verify } from "./TelegramUpdates.js"

/** What `credentials` holds for a Telegram channel, as given on create (and replaced whole by update). */
export const TelegramCredentialsInput = Schema.Struct({
  bot_token: Schema.String.pipe(
    Schema.filter((s) => /^\d{1,20}:[A-Za-z0-9_-]{20,100}$/.test(s) || "must be the token @BotFather gave the bot")
  )
})

/** A bot that talks to the simulator Parley ships (docs/channels.md): everything else is generated. */
export const SimulatedBotInput = Schema.Struct({ simulator: Schema.Literal(true) })

/** Where this server's Telegram simulator answers as the Bot API (simulator/TelegramSimulator.ts). */
export const SIMULATOR_BOT_API_PATH = "/simulator/telegram-api"

/** As stored (encrypted): the secret Telegram sends back with each update. */
export const TelegramCredentials = Schema.Struct({
  bot_token: Schema.String,
  secret_token: Schema.String,
  /** Calls go to this server's own simulator, never to Telegram. */
  simulator: Schema.optional(Schema.Boolean)
})
export type TelegramCredentials = typeof TelegramCredentials.Type

/** The bot's id: the token's public part, before the colon. */
const botId = (c: TelegramCredentials) => c.bot_token.split(":")[0] ?? ""

export class Telegram extends Effect.Service<Telegram>()("@parley/server/Telegram", {
  // node:http, not undici: its requests take a FormData (a file upload) as Node builds it
  dependencies: [AppConfig.Default, NodeHttpClient.layer, FileStorage.Default, BoundAddresses.Default],
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const bot = yield* makeBot
    const bound = yield* BoundAddresses
    /** Telegram's Bot API, or for a simulated bot this process's own simulator. */
    const baseOf = (c: TelegramCredentials) =>
      c.simulator === true
        ? `${bound.apiNow() ?? `http://${config.host}:${config.port}`}${SIMULATOR_BOT_API_PATH}`
        : config.telegramApiUrl
    const provider: ChannelProvider<TelegramCredentials> = {
      kind: "telegram",
      rules: {
        // Telegram has no service window: a bot may write to a chat that wrote to it at any time
        serviceWindowMs: null,
        // Telegram's documented limit for a bot's messages to many chats
        defaultRatePerSecond: 30,
        delivery: { handOff: "provider", attempts: 6 },
        maxTextChars: MAX_TEXT_CHARS,
        maxFileBytes: MAX_DOWNLOAD_BYTES
      },
      credentials: TelegramCredentials,
      handshake: () => Option.none(),
      verify,
      parse,
      send: (c, m) => bot.send(baseOf(c), c, m),
      // a bot sees no read receipts and gives none: the contact sees the bot typing
      markRead: (c, _id, chat) => bot.typing(baseOf(c), c, chat),
      fetchMedia: (c, media, maxBytes) => bot.fetchMedia(baseOf(c), c, media, maxBytes),
      check: (c) => bot.check(baseOf(c), c),
      // a button press is answered; its id is the part after `{chat}:callback:`
      acknowledge: (c, event) =>
        event.type === "callback_query"
          ? bot.answerCallback(baseOf(c), c, event.providerMessageId.split(":callback:")[1] ?? "")
          : Effect.void,
      account: botId,
      // each bot has its own webhook
      sharesWebhook: () => false,
      // Telegram opens the bot's chat with `/start {token}` for the link `t.me/{username}?start={token}`
      linkFor: (c, token) =>
        Effect.map(bot.check(baseOf(c), c), (me) => `https://t.me/${String(me.username)}?start=${token}`)
    }
    /** The endpoint a send goes to, for the delivery log: the bot's id, never its token. */
    const endpoint = (c: TelegramCredentials) => `${baseOf(c)}/bot${botId(c)}:***/sendMessage`
    // the simulator knows a simulated bot's webhook from its channel: there is nothing to tell it
    const register = (c: TelegramCredentials, webhookUrl: string) =>
      c.simulator === true ? Effect.void : bot.setWebhook(baseOf(c), c, webhookUrl, c.secret_token)
    return { provider, endpoint, register }
  })
}) {}
