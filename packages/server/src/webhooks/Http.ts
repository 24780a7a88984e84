import { HttpApiBuilder } from "@effect/platform"
import { Api } from "@parley/domain"
import { Effect } from "effect"
import { EventWebhooks } from "./EventWebhooks.js"

export const EventWebhooksHttpLive = HttpApiBuilder.group(Api, "eventWebhooks", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* EventWebhooks
    return handlers
      .handle("list", () => webhooks.list())
      .handle("create", ({ payload }) => webhooks.create(payload))
      .handle("get", ({ path }) => webhooks.get(path.id))
      .handle("update", ({ path, payload }) => webhooks.update(path.id, payload))
      .handle("delete", ({ path }) => webhooks.remove(path.id))
      .handle("deliveries", ({ path }) => webhooks.deliveries(path.id))
  }))
