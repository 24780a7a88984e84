import { HttpApiBuilder } from "@effect/platform"
import { Api } from "@parley/domain"
import { Effect } from "effect"
import { Deliveries } from "../delivery/Deliveries.js"
import { ChannelLinks } from "./ChannelLinks.js"
import { Channels } from "./Channels.js"
import { ChannelTemplates } from "./Templates.js"

export const ChannelsHttpLive = HttpApiBuilder.group(Api, "channels", (handlers) =>
  Effect.gen(function*() {
    const channels = yield* Channels
    const deliveries = yield* Deliveries
    const templates = yield* ChannelTemplates
    const links = yield* ChannelLinks
    return handlers
      .handle("list", () => channels.list())
      .handle("create", ({ payload }) => channels.create(payload))
      .handle("get", ({ path }) => channels.get(path.channel))
      .handle("update", ({ path, payload }) => channels.update(path.channel, payload))
      .handle("rotate", ({ path }) => channels.rotate(path.channel))
      .handle("check", ({ path }) => channels.check(path.channel))
      .handle("link", ({ path, payload }) => links.create(path.channel, payload))
      .handle("templates", ({ path }) => templates.list(path.channel))
      .handle("deliveries", ({ path, urlParams }) => deliveries.list(path.channel, urlParams))
      .handle("replay", ({ path }) => deliveries.replay(path.channel, path.message))
  }))
