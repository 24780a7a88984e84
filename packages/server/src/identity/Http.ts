import { HttpApiBuilder } from "@effect/platform"
import { Api, CurrentActor } from "@parley/domain"
import { Effect } from "effect"
import { Identity } from "./Identity.js"

export const AccountHttpLive = HttpApiBuilder.group(Api, "account", (handlers) =>
  Effect.gen(function*() {
    const identity = yield* Identity
    return handlers.handle("me", () => Effect.flatMap(CurrentActor, identity.me))
  }))
