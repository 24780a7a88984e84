/**
 * The Telegram simulator Parley ships (docs/channels.md, "Try it without an account"): for a Telegram channel created
 * with `credentials: {"simulator": true}`, this process answers as the Bot API does (`/simulator/telegram-api/bot
 * {token}/{method}`: the token, the parameters, Telegram's bodies and error codes) and plays the contact's Telegram
 * app (`/simulator/telegram/{webhook key}`): a message typed there is posted to the channel's webhook with the
 * channel's secret token, as Telegram posts an update. Its threads are kept in memory by the process that serves
 * the API and sends (the `all` role: the embedded default), like the WhatsApp simulator's.
 */
import { Effect, Option } from "effect"
import { ProviderCredentials } from "../channels/ProviderCredentials.js"
import { ChannelProviders } from "../channels/Providers.js"
import type { TelegramCredentials } from "../channels/telegram/Telegram.js"
import { AppConfig, receiverBaseUrl } from "../config/AppConfig.js"
import { BoundAddresses } from "../http/Listener.js"
import { makeSimulatedChannels } from "./SimulatedChannels.js"
import { SimulatedThreads } from "./SimulatedThreads.js"

const error = (status: number, description: string) => ({
  status,
  body: { ok: false, error_code: status, description }
})
const ok = (result: unknown) => ({ status: 200, body: { ok: true, result } })

/** The file field of each media send, as the Bot API names it. */
const MEDIA: Record<string, string> = {
  sendPhoto: "photo",
  sendDocument: "document",
  sendVideo: "video",
  sendAudio: "audio",
  sendVoice: "voice"
}

export class TelegramSimulator extends Effect.Service<TelegramSimulator>()("@parley/server/TelegramSimulator", {
  dependencies: [AppConfig.Default, BoundAddresses.Default, ChannelProviders.Default, ProviderCredentials.Default],
  effect: Effect.gen(function*() {
    const lookup = yield* makeSimulatedChannels
    const config = yield* AppConfig
    const bound = yield* BoundAddresses
    const threads = new SimulatedThreads()
    let messageIds = 1
    let updateIds = 1

    /** The simulated bot with this webhook key, or this token. */
    const simulated = (where: "key" | "token", value: string) =>
      lookup<TelegramCredentials>(
        ["telegram"],
        where === "key" ? { key: value } : { matches: (c) => c.bot_token === value }
      )

    /** The contact writes: the message is posted to Parley as Telegram posts an update, with the channel's secret. */
    const contactSays = Effect.fn("TelegramSimulator.contactSays")(
      function*(key: string, input: { readonly chat_id: number; readonly name: string; readonly text: string }) {
        const bot = yield* simulated("key", key)
        if (Option.isNone(bot)) return Option.none()
        const messageId = messageIds++
        const now = Date.now()
        threads.append(key, String(input.chat_id), {
          id: String(messageId),
          direction: "in",
          text: input.text,
          at: new Date(now).toISOString(),
          status: "read"
        })
        const [first, ...rest] = input.name.trim().split(/\s+/)
        const user = {
          id: input.chat_id,
          first_name: first || "Simulated",
          ...(rest.length > 0 ? { last_name: rest.join(" ") } : {})
        }
        const update = {
          update_id: updateIds++,
          message: {
            message_id: messageId,
            from: { ...user, is_bot: false, language_code: "en" },
            chat: { ...user, type: "private" },
            date: Math.floor(now / 1000),
            text: input.text
          }
        }
        const receiver = receiverBaseUrl(config, yield* bound.receiver)
        const status = yield* Effect.promise((signal) =>
          fetch(`${receiver}/channels/${key}/webhook`, {
            method: "POST",
            headers: {
              "content-type": "application/json",
              "x-telegram-bot-api-secret-token": bot.value.credentials.secret_token
            },
            body: JSON.stringify(update),
            signal
          }).then((r) => r.status)
        )
        return Option.some({ message_id: messageId, webhook_status: status })
      }
    )

    /** `POST /simulator/telegram-api/bot{token}/{method}`, as the Bot API answers it. */
    const botApi = Effect.fn("TelegramSimulator.botApi")(function*(token: string, method: string, body: any) {
      const bot = yield* simulated("token", token)
      if (Option.isNone(bot)) return error(401, "Unauthorized")
      const params = typeof body === "object" && body !== null ? body as Record<string, unknown> : {}
      if (method === "getMe") {
        return ok({
          id: Number(token.split(":")[0]),
          is_bot: true,
          first_name: "Parley simulator",
          username: "parley_sim_bot"
        })
      }
      if (method === "setWebhook" || method === "sendChatAction") return ok(true)
      const field = MEDIA[method]
      if (method !== "sendMessage" && field === undefined) return error(404, "Not Found")
      const chat = String(params.chat_id ?? "")
      if (!threads.has(bot.value.key, chat)) return error(400, "Bad Request: chat not found")
      const text = method === "sendMessage"
        ? String(params.text ?? "")
        : `[${field}] ${typeof params[field!] === "string" ? params[field!] : "(uploaded)"}${
          typeof params.caption === "string" ? `\n${params.caption}` : ""
        }`
      if (method === "sendMessage" && text === "") return error(400, "Bad Request: message text is empty")
      if (text.length > 4096) return error(400, "Bad Request: message is too long")
      const messageId = messageIds++
      threads.append(bot.value.key, chat, {
        id: String(messageId),
        direction: "out",
        text,
        at: new Date().toISOString(),
        status: "sent"
      })
      return ok({
        message_id: messageId,
        from: { id: Number(token.split(":")[0]), is_bot: true, first_name: "Parley simulator" },
        chat: { id: Number(chat), type: "private" },
        date: Math.floor(Date.now() / 1000),
        ...(method === "sendMessage" ? { text } : {})
      })
    })

    return {
      contactSays,
      botApi,
      simulated,
      thread: (key: string, chat: string) => threads.get(key, chat)
    }
  })
}) {}
