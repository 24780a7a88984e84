import { HttpApiBuilder } from "@effect/platform"
import { Api } from "@parley/domain"
import { Effect } from "effect"
import { Followups } from "./Followups.js"

export const FollowupsHttpLive = HttpApiBuilder.group(Api, "followups", (handlers) =>
  Effect.gen(function*() {
    const followups = yield* Followups
    return handlers
      .handle("get", ({ path }) => followups.get(path.stage))
      .handle("save", ({ path, payload }) => followups.save(path.stage, payload))
      .handle("delete", ({ path }) => followups.remove(path.stage))
  }))
