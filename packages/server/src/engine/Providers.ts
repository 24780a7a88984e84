/**
 * The remote model providers, by protocol: OpenAI (Responses API), Anthropic (Messages API), Google (Gemini's
 * generateContent, @effect/ai-google) and any OpenAI-compatible server (Chat Completions, ChatCompletions.ts). A
 * provider's endpoint (ProviderEndpoints.ts: its row, or the environment for the seeded OpenAI and Anthropic rows)
 * becomes an `@effect/ai` `LanguageModel.Service` on first use, cached by provider, revision and model name, so a
 * changed key or URL builds a new client and an unchanged one is never built twice.
 *
 * Model calls do not go through `OutboundHttp`'s private-address policy: the base URLs are operator
 * configuration, not tenant input, and pointing OPENAI_BASE_URL at a model server on the local network
 * (vLLM, LiteLLM, a gateway) must not require opening webhooks to private addresses too.
 */
import type { LanguageModel } from "@effect/ai"
// the modules, not the packages' indexes: those also load tokenizers (tiktoken's WebAssembly) we never use
import * as AnthropicClient from "@effect/ai-anthropic/AnthropicClient"
import * as AnthropicLanguageModel from "@effect/ai-anthropic/AnthropicLanguageModel"
import * as GoogleClient from "@effect/ai-google/GoogleClient"
import * as GoogleLanguageModel from "@effect/ai-google/GoogleLanguageModel"
import * as OpenAiClient from "@effect/ai-openai/OpenAiClient"
import * as OpenAiLanguageModel from "@effect/ai-openai/OpenAiLanguageModel"
import { Headers, HttpClient, HttpClientError, HttpClientRequest } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { type ModelRef, ModelUnavailable } from "@parley/worker"
import { Config, Duration, Effect, Option, Redacted, Scope } from "effect"
import type { ProviderEndpoint } from "../models/ProviderEndpoints.js"
import * as ChatCompletions from "./ChatCompletions.js"
import * as OpenAiCompatible from "./OpenAiCompatible.js"

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
            description: `no answer within ${timeoutMs} ms (the provider's timeout_ms, or AI_REQUEST_TIMEOUT_MS)`
          })
      })
    ))

/**
 * The provider's extra headers on every request (Azure's `api-key`, OpenRouter's `HTTP-Referer`...), their values
 * redacted in the client spans as the key is (they are secrets as much as it is).
 */
export const withHeaders = (headers: Readonly<Record<string, string>>) => (client: HttpClient.HttpClient) => {
  const names = Object.keys(headers)
  return names.length === 0 ? client : HttpClient.mapRequest(client, HttpClientRequest.setHeaders(headers)).pipe(
    HttpClient.transform((response) =>
      Effect.locallyWith(response, Headers.currentRedactedNames, (redacted) => [...redacted, ...names])
    )
  )
}

const KIND_NAMES: Readonly<Record<string, string>> = { openai: "OpenAI", anthropic: "Anthropic", google: "Gemini" }
const ENV_KEYS: Readonly<Record<string, string>> = { openai: "OPENAI_API_KEY", anthropic: "ANTHROPIC_API_KEY" }

/**
 * LanguageModel for a model of a provider's endpoint, or ModelUnavailable when a provider that needs a key has none.
 * `languageModel` keeps the seeded providers' environment configuration for a ModelRef that names no provider row.
 */
export class RemoteModels extends Effect.Service<RemoteModels>()("@parley/server/RemoteModels", {
  dependencies: [NodeHttpClient.layerUndici],
  scoped: Effect.gen(function*() {
    const http = yield* HttpClient.HttpClient
    // the clients live as long as this service (a provider's revision is a new client, the old one is dropped)
    const scope = yield* Effect.scope
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
    /** The seeded providers as the environment configures them (rows 2 and 3). */
    const envEndpoints: Readonly<Record<string, ProviderEndpoint>> = {
      openai: {
        id: 2,
        kind: "openai",
        slug: "openai",
        baseUrl: trimSlash(openAiUrl),
        apiKey: Option.getOrUndefined(openAiKey),
        headers: {},
        timeoutMs,
        revision: "env"
      },
      anthropic: {
        id: 3,
        kind: "anthropic",
        slug: "anthropic",
        baseUrl: trimSlash(anthropicUrl),
        apiKey: Option.getOrUndefined(anthropicKey),
        headers: {},
        timeoutMs,
        revision: "env"
      }
    }

    const build = (
      endpoint: ProviderEndpoint,
      model: string
    ): Effect.Effect<LanguageModel.Service, ModelUnavailable> => {
      const transformClient = (client: HttpClient.HttpClient) =>
        withTimeout(endpoint.timeoutMs)(withHeaders(endpoint.headers)(client))
      const apiUrl = endpoint.baseUrl
      const needsKey = () =>
        Effect.fail(
          new ModelUnavailable({
            message: `${KIND_NAMES[endpoint.kind] ?? endpoint.kind} is not configured: set ${
              ENV_KEYS[endpoint.slug] ?? `the api_key of provider ${endpoint.id}`
            }`
          })
        )
      /** A client of the provider's package, built with the key, then the model's LanguageModel on it. */
      const keyed = <C>(
        make: (options: {
          readonly apiKey: Redacted.Redacted
          readonly apiUrl: string
          readonly transformClient: typeof transformClient
        }) => Effect.Effect<C, never, HttpClient.HttpClient | Scope.Scope>,
        languageModel: (client: C) => Effect.Effect<LanguageModel.Service>
      ) =>
        endpoint.apiKey === undefined ? needsKey() : make({ apiKey: endpoint.apiKey, apiUrl, transformClient }).pipe(
          Effect.flatMap(languageModel),
          Effect.provideService(HttpClient.HttpClient, http),
          Effect.provideService(Scope.Scope, scope)
        )
      switch (endpoint.kind) {
        case "openai":
          return keyed(
            OpenAiClient.make,
            (client) =>
              OpenAiLanguageModel.make({ model }).pipe(Effect.provideService(OpenAiClient.OpenAiClient, client))
          )
        case "anthropic":
          return keyed(AnthropicClient.make, (client) =>
            AnthropicLanguageModel.make({ model }).pipe(
              Effect.provideService(AnthropicClient.AnthropicClient, client)
            ))
        case "google":
          return keyed(
            GoogleClient.make,
            (client) =>
              GoogleLanguageModel.make({ model }).pipe(Effect.provideService(GoogleClient.GoogleClient, client))
          )
        case "openai_compatible":
          return OpenAiCompatible.make({
            baseUrl: endpoint.baseUrl,
            apiKey: endpoint.apiKey,
            headers: endpoint.headers,
            timeoutMs: endpoint.timeoutMs
          }).pipe(
            Effect.flatMap((client) => ChatCompletions.make({ model, client })),
            Effect.provideService(HttpClient.HttpClient, http)
          )
        default:
          return Effect.fail(
            new ModelUnavailable({ message: `Provider kind "${endpoint.kind}" is not a remote provider` })
          )
      }
    }

    const MAX_CACHED = 1000
    const cache = new Map<string, LanguageModel.Service>()
    /** The LanguageModel of `model` on `endpoint`, built once per provider revision. */
    const forEndpoint = (endpoint: ProviderEndpoint, model: string) =>
      Effect.suspend(() => {
        const key = `${endpoint.id}\u0000${endpoint.revision}\u0000${model}`
        const cached = cache.get(key)
        return cached !== undefined ? Effect.succeed(cached) : build(endpoint, model).pipe(
          Effect.tap((service) =>
            Effect.sync(() => {
              if (cache.size >= MAX_CACHED) cache.clear()
              cache.set(key, service)
            })
          )
        )
      })

    /** A seeded provider's model as the environment configures it (a ModelRef without a provider row). */
    const languageModel = (model: ModelRef): Effect.Effect<LanguageModel.Service, ModelUnavailable> => {
      const endpoint = envEndpoints[model.provider]
      return endpoint === undefined
        ? Effect.fail(
          new ModelUnavailable({
            message: `Provider "${model.provider}" is not a remote provider (expected openai or anthropic)`
          })
        )
        : forEndpoint(endpoint, model.model)
    }

    return {
      languageModel,
      forEndpoint,
      /** Which seeded providers have a key in the environment (for diagnostics and the start-up banner). */
      configured: { openai: Option.isSome(openAiKey), anthropic: Option.isSome(anthropicKey) } as const
    }
  })
}) {}
