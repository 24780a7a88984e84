import type { LanguageModel } from "@effect/ai"
import { makeLocalModel, type ModelRef, ModelRegistry, type ModelUnavailable } from "@parley/worker"
import { Config, Duration, Effect, Layer } from "effect"
import { ProviderEndpoints } from "../models/ProviderEndpoints.js"
import { RemoteModels } from "./Providers.js"

/**
 * Which `@effect/ai` LanguageModel serves a catalogue model: the model's own provider. `local` is
 * Parley's deterministic model (LOCAL_MODEL_LATENCY_MS simulates a provider's response time); any other
 * goes to its provider's endpoint as its row says at the revision the turn read (ProviderEndpoints).
 */
export const ModelRegistryLive = Layer.effect(
  ModelRegistry,
  Effect.gen(function*() {
    const latencyMs = yield* Config.integer("LOCAL_MODEL_LATENCY_MS").pipe(Config.withDefault(0))
    const local = yield* makeLocalModel({ latency: Duration.millis(latencyMs) })
    const remote = yield* RemoteModels
    const endpoints = yield* ProviderEndpoints
    const languageModel = (model: ModelRef): Effect.Effect<LanguageModel.Service, ModelUnavailable> =>
      model.provider === "local" || model.kind === "local"
        ? Effect.succeed(local)
        : model.providerId === undefined
        ? remote.languageModel(model)
        : Effect.flatMap(
          endpoints.of(model.providerId, model.providerRevision),
          (endpoint) => remote.forEndpoint(endpoint, model.model)
        )
    return ModelRegistry.of({ languageModel })
  })
).pipe(Layer.provide([RemoteModels.Default, ProviderEndpoints.Default]), Layer.orDie)
