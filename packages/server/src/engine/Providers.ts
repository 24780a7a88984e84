/**
 * The remote model providers: OpenAI (Responses API, or any server implementing `POST /responses`) and
 * Anthropic (Messages API). Each client is built once, when its key is configured; a catalogue model
 * becomes an `@effect/ai` `LanguageModel.Service` on first use and is cached by provider and model name.
 *
 * Model calls do not go through `OutboundHttp`'s private-address policy: the base URLs are operator
 * configuration, not tenant input, and pointing OPENAI_BASE_URL at a model server on the local network
 * (vLLM, LiteLLM, a gateway) must not require opening webhooks to private addresses too.
 */
import type { LanguageModel } from "@effect/ai"
// the modules, not the packages' indexes: those also load tokenizers (tiktoken's WebAssembly) we never use
import * as AnthropicClient from "@effect/ai-anthropic/AnthropicClient"
import * as AnthropicLanguageModel from "@effect/ai-anthropic/AnthropicLanguageModel"
import * as OpenAiClient from "@effect/ai-openai/OpenAiClient"
import * as OpenAiLanguageModel from "@effect/ai-openai/OpenAiLanguageModel"
import { HttpClient, HttpClientError } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { type ModelRef, ModelUnavailable } from "@parley/worker"
import { Config, Duration, Effect, Option, Redacted } from "effect"

const trimSlash = (url: string) => url.replace(/\/+$/, "")

/** A key that is unset or blank counts as not configured. */
const optionalKey = (name: string) =>
  Config.redacted(name).pipe(
    Config.option,
    Config.map(Option.filter((key) => Redacted.value(key).trim() !== ""))
  )

/**
 * Bounds each exchange with the provider: connecting, the answer's headers and, for a JSON answer, its
 * whole body (read here; the platform's responses keep the text, so the provider decodes it from memory).
 * A streamed answer (`text/event-stream`) is bounded up to its headers only. Running out of time is a
 * transport `RequestError`, which the provider clients turn into `AiError.HttpRequestError`.
 */
const withTimeout = (timeoutMs: number) => (client: HttpClient.HttpClient): HttpClient.HttpClient =>
  HttpClient.transform(client, (response, request) =>
    response.pipe(
      Effect.tap((res) => (res.headers["content-type"] ?? "").includes("text/event-stream") ? Effect.void : res.text),
      Effect.timeoutFail({
        duration: Duration.millis(timeoutMs),
        onTimeout: () =>
          new HttpClientError.RequestError({
            request,
            reason: "Transport",
            description: `no answer within ${timeoutMs} ms (AI_REQUEST_TIMEOUT_MS)`
          })
      })
    ))

/**
 * LanguageModel for an `openai` or `anthropic` catalogue model, or ModelUnavailable when that provider has no key
 * configured.
 */
export class RemoteModels extends Effect.Service<RemoteModels>()("@parley/server/RemoteModels", {
  dependencies: [NodeHttpClient.layerUndici],
  scoped: Effect.gen(function*() {
    const openAiKey = yield* optionalKey("OPENAI_API_KEY")
    const openAiUrl = yield* Config.string("OPENAI_BASE_URL").pipe(Config.withDefault("https://api.openai.com/v1"))
    const anthropicKey = yield* optionalKey("ANTHROPIC_API_KEY")
    // the client appends `/v1/messages`, as Anthropic's own SDKs do with ANTHROPIC_BASE_URL
    const anthropicUrl = yield* Config.string("ANTHROPIC_BASE_URL").pipe(
      Config.withDefault("https://api.anthropic.com")
    )
    const timeoutMs = yield* Config.integer("AI_REQUEST_TIMEOUT_MS").pipe(
      Config.withDefault(60_000),
      Config.validate({ message: "must be a positive number of milliseconds", validation: (ms) => ms > 0 })
    )
    const transformClient = withTimeout(timeoutMs)

    const openAi = yield* Effect.transposeMapOption(
      openAiKey,
      (apiKey) => OpenAiClient.make({ apiKey, apiUrl: trimSlash(openAiUrl), transformClient })
    )
    const anthropic = yield* Effect.transposeMapOption(
      anthropicKey,
      (apiKey) => AnthropicClient.make({ apiKey, apiUrl: trimSlash(anthropicUrl), transformClient })
    )

    const build = (model: ModelRef): Effect.Effect<LanguageModel.Service, ModelUnavailable> => {
      switch (model.provider) {
        case "openai":
          return Option.match(openAi, {
            onNone: () =>
              Effect.fail(new ModelUnavailable({ message: "OpenAI is not configured: set OPENAI_API_KEY" })),
            onSome: (client) =>
              OpenAiLanguageModel.make({ model: model.model }).pipe(
                Effect.provideService(OpenAiClient.OpenAiClient, client)
              )
          })
        case "anthropic":
          return Option.match(anthropic, {
            onNone: () =>
              Effect.fail(new ModelUnavailable({ message: "Anthropic is not configured: set ANTHROPIC_API_KEY" })),
            onSome: (client) =>
              AnthropicLanguageModel.make({ model: model.model }).pipe(
                Effect.provideService(AnthropicClient.AnthropicClient, client)
              )
          })
        default:
          return Effect.fail(
            new ModelUnavailable({
              message: `Provider "${model.provider}" is not a remote provider (expected openai or anthropic)`
            })
          )
      }
    }

    const cache = new Map<string, LanguageModel.Service>()
    const languageModel = (model: ModelRef): Effect.Effect<LanguageModel.Service, ModelUnavailable> =>
      Effect.suspend(() => {
        const key = `${model.provider}\u0000${model.model}`
        const cached = cache.get(key)
        return cached !== undefined
          ? Effect.succeed(cached)
          : build(model).pipe(Effect.tap((service) => Effect.sync(() => cache.set(key, service))))
      })

    return {
      languageModel,
      /** Which providers have a key (for diagnostics and the start-up banner). */
      configured: { openai: Option.isSome(openAi), anthropic: Option.isSome(anthropic) } as const
    }
  })
}) {}
