/**
 * Gemini's embeddings over its REST API (`POST {base}/v1beta/models/{model}:batchEmbedContents`, the key in
 * `x-goog-api-key`): @effect/ai-google 0.15 has no embedding model. A failure is a ProviderCallFailed whose message
 * names Google's own complaint, never the key nor a header value.
 */
import { Headers, HttpClient, HttpClientRequest } from "@effect/platform"
import { Clock, Duration, Effect, Redacted, Schema } from "effect"
import { errorCode, ProviderCallFailed, statusFailure } from "../engine/ProviderCallFailed.js"
import type { ProviderEndpoint } from "../models/ProviderEndpoints.js"

const BatchEmbeddings = Schema.Struct({
  embeddings: Schema.Array(Schema.Struct({ values: Schema.Array(Schema.Number) }))
})

export const geminiEmbed = (endpoint: ProviderEndpoint, model: string, inputs: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const http = yield* HttpClient.HttpClient
    const name = model.startsWith("models/") ? model : `models/${model}`
    const secrets = [
      ...(endpoint.apiKey === undefined ? [] : [Redacted.value(endpoint.apiKey)]),
      ...Object.values(endpoint.headers)
    ].filter((s) => s.length >= 4)
    const scrub = (text: string) => secrets.reduce((out, secret) => out.split(secret).join("[redacted]"), text)
    const request = HttpClientRequest.post(`${endpoint.baseUrl}/v1beta/${name}:batchEmbedContents`).pipe(
      HttpClientRequest.setHeaders(endpoint.headers),
      endpoint.apiKey === undefined
        ? (r) => r
        : HttpClientRequest.setHeader("x-goog-api-key", Redacted.value(endpoint.apiKey)),
      HttpClientRequest.bodyUnsafeJson({
        requests: inputs.map((text) => ({ model: name, content: { parts: [{ text }] } }))
      })
    )
    const host = URL.canParse(endpoint.baseUrl) ? new URL(endpoint.baseUrl).host : endpoint.baseUrl
    const answer = yield* http.execute(request).pipe(
      Effect.flatMap((response) =>
        Effect.map(response.text, (text) => ({ status: response.status, headers: response.headers, text }))
      ),
      Effect.timeoutFail({
        duration: Duration.millis(endpoint.timeoutMs),
        onTimeout: () =>
          new ProviderCallFailed({
            reason: "timeout",
            message: `Gemini at ${host} did not answer within ${endpoint.timeoutMs} ms`
          })
      }),
      Effect.catchTags({
        RequestError: (error) =>
          Effect.fail(
            new ProviderCallFailed({
              reason: "unreachable",
              message: `Gemini at ${host} could not be reached (${errorCode(error.cause) ?? error.reason})`
            })
          ),
        ResponseError: (error) =>
          Effect.fail(
            new ProviderCallFailed({
              reason: "unreachable",
              message: `Gemini at ${host} broke off its answer (${error.reason})`
            })
          )
      }),
      Effect.locallyWith(Headers.currentRedactedNames, (names) => [
        ...names,
        "x-goog-api-key",
        ...Object.keys(endpoint.headers)
      ])
    )
    if (answer.status < 200 || answer.status >= 300) {
      const now = yield* Clock.currentTimeMillis
      return yield* statusFailure({
        ...answer,
        what: `such embedding model ("${model}")`,
        scrub,
        hasKey: endpoint.apiKey !== undefined,
        now
      })
    }
    const body = yield* Effect.try({
      try: (): unknown => JSON.parse(answer.text),
      catch: () => new ProviderCallFailed({ reason: "malformed", message: "Gemini answered with something not JSON" })
    }).pipe(
      Effect.flatMap(Schema.decodeUnknown(BatchEmbeddings)),
      Effect.mapError((e) =>
        e._tag === "ProviderCallFailed"
          ? e
          : new ProviderCallFailed({
            reason: "malformed",
            message: "Gemini's embeddings were not in its documented shape"
          })
      )
    )
    if (body.embeddings.length !== inputs.length) {
      return yield* new ProviderCallFailed({
        reason: "malformed",
        message: `Gemini answered ${body.embeddings.length} embeddings for ${inputs.length} inputs`
      })
    }
    return body.embeddings.map((e) => e.values)
  })
