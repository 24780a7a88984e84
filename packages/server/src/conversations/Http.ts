import { HttpApiBuilder } from "@effect/platform"
import { Api, ConversationState } from "@parley/domain"
import { Effect } from "effect"
import { Conversations } from "./Conversations.js"

export const ConversationsHttpLive = HttpApiBuilder.group(Api, "conversations", (handlers) =>
  Effect.gen(function*() {
    const conversations = yield* Conversations
    return handlers
      .handle("list", ({ urlParams }) => conversations.list(urlParams))
      .handle("get", ({ path }) => conversations.get(path.id))
      .handle("messages", ({ path, urlParams }) => conversations.messages(path.id, urlParams))
      .handle("read", ({ path }) => conversations.markRead(path.id))
      .handle("handoff", ({ path, payload }) => conversations.move(path.id, payload))
      .handle("update", ({ path, payload }) =>
        Effect.map(conversations.update(path.id, payload), (c) => new ConversationState(c)))
  }))
