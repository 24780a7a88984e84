import type { LanguageModel } from "@effect/ai"
import { makeLocalModel, type ModelRef, ModelRegistry, type ModelUnavailable } from "@parley/worker"
import { Config, Duration, Effect, Layer } from "effect"
import { RemoteModels } from "./Providers.js"

/**
 * Which `@effect/ai` LanguageModel serves a catalogue model: the model's own provider. `local` is
 * Parley's deterministic model (LOCAL_MODEL_LATENCY_MS simulates a provider's response time);
 * `openai` and `anthropic` go to their APIs when their keys are configured (RemoteModels).
 */
export const ModelRegistryLive = Layer.effect(
  ModelRegistry,
  Effect.gen(function*() {
    const latencyMs = yield* Config.integer("LOCAL_MODEL_LATENCY_MS").pipe(Config.withDefault(0))
    const local = yield* makeLocalModel({ latency: Duration.millis(latencyMs) })
    const remote = yield* RemoteModels
    const languageModel = (model: ModelRef): Effect.Effect<LanguageModel.Service, ModelUnavailable> =>
      model.provider === "local" ? Effect.succeed(local) : remote.languageModel(model)
    return ModelRegistry.of({ languageModel })
  })
).pipe(Layer.provide(RemoteModels.Default), Layer.orDie)
