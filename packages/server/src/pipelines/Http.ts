import { HttpApiBuilder } from "@effect/platform"
import { Api, CurrentActor } from "@parley/domain"
import { Effect } from "effect"
import { Catalogue } from "../catalogue/Catalogue.js"
import { Pipelines } from "./Pipelines.js"

export const PipelinesHttpLive = HttpApiBuilder.group(Api, "pipelines", (handlers) =>
  Effect.gen(function*() {
    const pipelines = yield* Pipelines
    const catalogue = yield* Catalogue
    return handlers
      .handle(
        "options",
        ({ urlParams }) => Effect.flatMap(CurrentActor, (actor) => catalogue.options(actor, urlParams))
      )
      .handle("list", () => pipelines.list())
      .handle("create", ({ payload }) => pipelines.create(payload))
      .handle("get", ({ path }) => pipelines.get(path.pipeline))
      .handle("update", ({ path, payload }) => pipelines.update(path.pipeline, payload))
      .handle("listStages", ({ path }) => pipelines.listStages(path.pipeline))
      .handle("createStage", ({ path, payload }) => pipelines.createStage(path.pipeline, payload))
      .handle("updateStage", ({ path, payload }) => pipelines.updateStage(path.stage, payload))
      .handle("deleteStage", ({ path }) => pipelines.deleteStage(path.stage))
  }))

export const ModelPoolHttpLive = HttpApiBuilder.group(Api, "modelPool", (handlers) =>
  Effect.gen(function*() {
    const pipelines = yield* Pipelines
    return handlers
      .handle("get", ({ path }) => pipelines.modelPool(path.pipeline))
      .handle("update", ({ path, payload }) => pipelines.updateModelPool(path.pipeline, payload))
  }))
