/**
 * Asks a provider which models it serves: the cheapest request that proves the address answers and the key is
 * accepted (`GET {base}/models` for OpenAI and OpenAI-compatible servers, `/v1/models` for Anthropic, `/v1beta/models`
 * for Gemini). Never fails: what went wrong is a reason and one plain sentence, without the key.
 */
import { Headers, HttpClient, HttpClientRequest } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { Duration, Effect, Redacted } from "effect"
import type { ProviderEndpoint } from "./ProviderEndpoints.js"

export type ProbeReason = "unreachable" | "timeout" | "unauthorized" | "not_found" | "error"

export interface ProbeResult {
  readonly reachable: boolean
  readonly models: ReadonlyArray<string>
  readonly reason: ProbeReason | null
  readonly problem: string | null
}

/** A probe waits at most this long, whatever the provider's own timeout: it answers an operator's form. */
const PROBE_TIMEOUT_MS = 10_000

/** The request that lists a provider's models, with its credentials as the provider expects them. */
export const modelsRequest = (endpoint: ProviderEndpoint) => {
  const key = endpoint.apiKey === undefined ? undefined : Redacted.value(endpoint.apiKey)
  const base = HttpClientRequest.setHeaders(HttpClientRequest.get(""), endpoint.headers)
  switch (endpoint.kind) {
    case "anthropic":
      return base.pipe(
        HttpClientRequest.setUrl(`${endpoint.baseUrl}/v1/models`),
        HttpClientRequest.setHeader("anthropic-version", "2023-06-01"),
        key === undefined ? (r) => r : HttpClientRequest.setHeader("x-api-key", key)
      )
    case "google":
      return base.pipe(
        HttpClientRequest.setUrl(`${endpoint.baseUrl}/v1beta/models`),
        key === undefined ? (r) => r : HttpClientRequest.setHeader("x-goog-api-key", key)
      )
    default:
      return base.pipe(
        HttpClientRequest.setUrl(`${endpoint.baseUrl}/models`),
        key === undefined ? (r) => r : HttpClientRequest.bearerToken(key)
      )
  }
}

/** Model ids from a models list: OpenAI's and Anthropic's `data[].id`, Gemini's `models[].name` (`models/` cut). */
export const modelIds = (body: unknown): ReadonlyArray<string> => {
  const b = body as { data?: ReadonlyArray<{ id?: unknown }>; models?: ReadonlyArray<{ name?: unknown }> } | null
  const ids = Array.isArray(b?.data)
    ? b.data.map((m) => m?.id)
    : Array.isArray(b?.models)
    ? b.models.map((m) => typeof m?.name === "string" ? m.name.replace(/^models\//, "") : undefined)
    : []
  return ids.filter((id): id is string => typeof id === "string").slice(0, 500)
}

/** The provider's own words for an error body (`{error: {message}}` in all three dialects), cut short. */
export const providerMessage = (body: unknown): string | null => {
  const e = (body as { error?: { message?: unknown } | string } | null)?.error
  const text = typeof e === "string" ? e : typeof e?.message === "string" ? e.message : null
  return text === null ? null : text.slice(0, 300)
}

export class ProviderProbe extends Effect.Service<ProviderProbe>()("@parley/server/ProviderProbe", {
  dependencies: [NodeHttpClient.layerUndici],
  effect: Effect.gen(function*() {
    const http = yield* HttpClient.HttpClient
    /** The provider's extra headers are redacted in the client spans, as the key is. */
    const execute = (endpoint: ProviderEndpoint) =>
      Effect.locallyWith(
        http.execute(modelsRequest(endpoint)),
        Headers.currentRedactedNames,
        (names) => [...names, ...Object.keys(endpoint.headers), "x-api-key", "x-goog-api-key"]
      )

    const listModels = (endpoint: ProviderEndpoint): Effect.Effect<ProbeResult> =>
      Effect.gen(function*(): Effect.fn.Return<ProbeResult> {
        const timeoutMs = Math.min(endpoint.timeoutMs, PROBE_TIMEOUT_MS)
        const response = yield* execute(endpoint).pipe(
          Effect.flatMap((res) => Effect.map(res.text, (text) => ({ status: res.status, text }))),
          Effect.timeout(Duration.millis(timeoutMs)),
          Effect.either
        )
        if (response._tag === "Left") {
          const timedOut = response.left._tag === "TimeoutException"
          return {
            reachable: false,
            models: [],
            reason: timedOut ? "timeout" as const : "unreachable" as const,
            problem: timedOut
              ? `${endpoint.baseUrl} did not answer within ${timeoutMs} ms.`
              : `${endpoint.baseUrl} could not be reached (is the server running, and is the URL right?).`
          } satisfies ProbeResult
        }
        const { status, text } = response.right
        const body = yield* Effect.try(() => JSON.parse(text) as unknown).pipe(Effect.orElseSucceed(() => null))
        const said = providerMessage(body)
        if (
          status === 401 || status === 403 || (endpoint.kind === "google" && status === 400 && /key/i.test(said ?? ""))
        ) {
          return {
            reachable: true,
            models: [],
            reason: "unauthorized",
            problem: `The provider refused the API key (${status}${said === null ? "" : `: ${said}`}).`
          } satisfies ProbeResult
        }
        if (status === 404) {
          // llama.cpp's older servers and some gateways list nothing: reachable, but the list is unknown
          return {
            reachable: true,
            models: [],
            reason: "not_found",
            problem: `${endpoint.baseUrl} has no models list (404).`
          } satisfies ProbeResult
        }
        if (status >= 400) {
          return {
            reachable: true,
            models: [],
            reason: "error",
            problem: `The provider answered ${status}${said === null ? "" : `: ${said}`}.`
          } satisfies ProbeResult
        }
        return { reachable: true, models: modelIds(body), reason: null, problem: null } satisfies ProbeResult
      }).pipe(Effect.withSpan("ProviderProbe.listModels", { attributes: { provider: endpoint.slug } }))

    return { listModels }
  })
}) {}
