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
import { makeBot, MAX_DOWNLOAD_BYTES, MAX_TEXT_CHARS } from "./TelegramBot.js"
import { parse, verify } from "./TelegramUpdates.js"

/** What `credentials` holds for a Telegram channel, as given on create (and replaced whole by update). */
export const TelegramCredentialsInput = Schema.Struct({
  bot_token: Schema.String.pipe(
    Schema.filter((s) => /^\d{1,20}:[A-Za-z0-9_-]{20,100}$/.test(s) || "must be the token @BotFather gave the bot")
  )
})

/** As stored (encrypted): the secret Telegram sends back with each update. */
export const TelegramCredentials = Schema.Struct({
  bot_token: Schema.String,
  secret_token: Schema.String
})
export type TelegramCredentials = typeof TelegramCredentials.Type

/** The bot's id: the token's public part, before the colon. */
const botId = (c: TelegramCredentials) => c.bot_token.split(":")[0] ?? ""

export class Telegram extends Effect.Service<Telegram>()("@parley/server/Telegram", {
  // node:http, not undici: its requests take a FormData (a file upload) as Node builds it
  dependencies: [AppConfig.Default, NodeHttpClient.layer, FileStorage.Default],
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const bot = yield* makeBot
    const base = config.telegramApiUrl
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
      send: (c, m) => bot.send(base, c, m),
      // a bot sees no read receipts and gives none: the contact sees the bot typing
      markRead: (c, id) => bot.typing(base, c, id.split(":")[0] ?? id),
      fetchMedia: (c, media, maxBytes) => bot.fetchMedia(base, c, media, maxBytes),
      check: (c) => bot.check(base, c),
      account: botId,
      // each bot has its own webhook
      sharesWebhook: () => false
    }
    /** The endpoint a send goes to, for the delivery log: the bot's id, never its token. */
    const endpoint = (c: TelegramCredentials) => `${base}/bot${botId(c)}:***/sendMessage`
    const register = (c: TelegramCredentials, webhookUrl: string) => bot.setWebhook(base, c, webhookUrl, c.secret_token)
    return { provider, endpoint, register }
  })
}) {}
