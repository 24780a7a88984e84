import { HttpApiBuilder } from "@effect/platform"
import { Api } from "@parley/domain"
import { Effect } from "effect"
import { AiModels } from "./AiModels.js"
import { AiProviders } from "./AiProviders.js"
import { ProviderChecks } from "./ProviderCheck.js"

export const AiModelsHttpLive = HttpApiBuilder.group(Api, "aiModels", (handlers) =>
  Effect.gen(function*() {
    const providers = yield* AiProviders
    const models = yield* AiModels
    const checks = yield* ProviderChecks
    return handlers
      .handle("listProviders", () => providers.list())
      .handle("createProvider", ({ payload }) => providers.create(payload))
      .handle("getProvider", ({ path }) => providers.get(path.provider))
      .handle("updateProvider", ({ path, payload }) => providers.update(path.provider, payload))
      .handle("deleteProvider", ({ path }) => providers.remove(path.provider))
      .handle("checkProvider", ({ path, payload }) => checks.check(path.provider, payload))
      .handle("listModels", ({ urlParams }) => models.list(urlParams))
      .handle("createModel", ({ payload }) => models.create(payload))
      .handle("getModel", ({ path }) => models.get(path.model))
      .handle("updateModel", ({ path, payload }) => models.update(path.model, payload))
      .handle("deleteModel", ({ path }) => models.remove(path.model))
  }))
