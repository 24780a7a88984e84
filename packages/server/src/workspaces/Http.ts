import { HttpApiBuilder } from "@effect/platform"
import { Api } from "@parley/domain"
import { Effect } from "effect"
import { Members } from "./Members.js"

export const WorkspacesHttpLive = HttpApiBuilder.group(Api, "workspaces", (handlers) =>
  Effect.gen(function*() {
    const members = yield* Members
    return handlers.handle("members", ({ path }) => members.list(path.workspace))
  }))
