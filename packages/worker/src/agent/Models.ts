import type { LanguageModel } from "@effect/ai"
import type { ModelRef } from "@parley/domain"
import { Context, Data, type Effect } from "effect"

export type { ModelRef }

export class ModelUnavailable extends Data.TaggedError("ModelUnavailable")<{ readonly message: string }> {}

/**
 * Implemented by the server: the `@effect/ai` LanguageModel that serves a catalogue model, through its
 * provider (local, OpenAI Responses API, Anthropic) as configured. Fails when the provider is not
 * configured (no key), so the turn can record why.
 */
export interface ModelRegistryShape {
  readonly languageModel: (model: ModelRef) => Effect.Effect<LanguageModel.Service, ModelUnavailable>
}
export class ModelRegistry extends Context.Tag("@parley/worker/ModelRegistry")<ModelRegistry, ModelRegistryShape>() {}

/** USD for a call: list prices are per million tokens. */
export const costOf = (model: ModelRef, usage: { readonly inputTokens: number; readonly outputTokens: number }) =>
  (usage.inputTokens * model.inputPricePerMillion + usage.outputTokens * model.outputPricePerMillion) / 1_000_000
