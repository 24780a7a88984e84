import { HttpApiBuilder } from "@effect/platform"
import { Api } from "@parley/domain"
import { Effect } from "effect"
import { Versions } from "./Versions.js"

export const VersionsHttpLive = HttpApiBuilder.group(Api, "versions", (handlers) =>
  Effect.gen(function*() {
    const versions = yield* Versions
    return handlers
      .handle("settings", ({ path }) => versions.settings(path.workspace))
      .handle("updateSettings", ({ path, payload }) => versions.updateSettings(path.workspace, payload))
      .handle("list", ({ path }) => versions.list(path.pipeline))
      .handle("diff", ({ path, urlParams }) => versions.diff(path.pipeline, urlParams))
      .handle("get", ({ path }) => versions.get(path.pipeline, path.number))
      .handle("publish", ({ path }) => versions.publish(path.pipeline))
      .handle("rollback", ({ path, payload }) => versions.rollback(path.pipeline, payload))
      .handle("publishGate", ({ path, payload }) => versions.publishGate(path.pipeline, payload))
  }))
