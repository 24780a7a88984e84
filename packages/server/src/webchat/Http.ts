import { HttpApiBuilder } from "@effect/platform"
import { Api, WebChatAuth } from "@parley/domain"
import { Effect, Layer } from "effect"
import { WebChat } from "./WebChat.js"

export const WebChatAuthLive = Layer.effect(
  WebChatAuth,
  Effect.map(WebChat, (webChat) => ({ basic: ({ username, password }) => webChat.authenticate(username, password) }))
)

export const WebChatHttpLive = HttpApiBuilder.group(Api, "webChat", (handlers) =>
  Effect.gen(function*() {
    const webChat = yield* WebChat
    return handlers
      .handle("initiate", ({ payload }) => webChat.initiate(payload))
      .handle("history", ({ urlParams }) => webChat.history(urlParams))
  }))
