/**
 * A client for servers that speak OpenAI's HTTP API (`/chat/completions`, `/models`, `/embeddings`,
 * `/audio/transcriptions`): Ollama, vLLM, LM Studio, llama.cpp, LiteLLM, OpenRouter and the like. Every
 * failure is one ProviderCallFailed whose reason the API and the agent can act on, and whose message is a
 * sentence an operator can read: it names the server's own complaint, never the key nor a header value.
 */
import { Headers, HttpClient, HttpClientRequest, type HttpClientResponse } from "@effect/platform"
import { Clock, Duration, Effect, ParseResult, Redacted, Schema } from "effect"
import { errorCode, MAX_PROVIDER_TEXT, ProviderCallFailed, statusFailure } from "./ProviderCallFailed.js"

export { ProviderCallFailed, type ProviderFailureReason } from "./ProviderCallFailed.js"

export interface OpenAiCompatibleConfig {
  /** ends before the endpoint's own path, e.g. `http://127.0.0.1:11434/v1` */
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted | undefined
  /** sent on every call; their values are secrets as much as the key is */
  readonly headers: Readonly<Record<string, string>>
  /** connecting, the answer's headers and its whole body, per call */
  readonly timeoutMs: number
}

// ---------------------------------------------------------------- Chat Completions shapes

export type ChatContentPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image_url"; readonly image_url: { readonly url: string } }

export interface ChatToolCall {
  readonly id: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: string }
}

export type ChatMessage =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user"; readonly content: string | ReadonlyArray<ChatContentPart> }
  | { readonly role: "assistant"; readonly content: string; readonly tool_calls?: ReadonlyArray<ChatToolCall> }
  | { readonly role: "tool"; readonly tool_call_id: string; readonly content: string }

export interface ChatTool {
  readonly type: "function"
  readonly function: { readonly name: string; readonly description?: string; readonly parameters: unknown }
}

export type ChatToolChoice = "none" | "auto" | "required" | {
  readonly type: "function"
  readonly function: { readonly name: string }
}

export interface ChatRequest {
  readonly model: string
  readonly messages: ReadonlyArray<ChatMessage>
  readonly tools?: ReadonlyArray<ChatTool>
  readonly tool_choice?: ChatToolChoice
  readonly temperature?: number
}

const nullable = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { nullable: true })

/** What we read of an answer; servers differ in the rest (and some send `arguments` as an object). */
export const ChatCompletion = Schema.Struct({
  id: nullable(Schema.String),
  model: nullable(Schema.String),
  choices: Schema.Array(Schema.Struct({
    message: Schema.Struct({
      content: nullable(Schema.String),
      tool_calls: nullable(Schema.Array(Schema.Struct({
        id: nullable(Schema.String),
        function: Schema.Struct({
          name: Schema.String,
          arguments: nullable(Schema.Union(Schema.String, Schema.Record({ key: Schema.String, value: Schema.Unknown })))
        })
      })))
    }),
    finish_reason: nullable(Schema.String)
  })),
  usage: nullable(Schema.Struct({
    prompt_tokens: nullable(Schema.Number),
    completion_tokens: nullable(Schema.Number),
    total_tokens: nullable(Schema.Number)
  }))
})
export type ChatCompletion = typeof ChatCompletion.Type

const ModelList = Schema.Struct({ data: Schema.Array(Schema.Struct({ id: Schema.String })) })

const EmbeddingList = Schema.Struct({
  data: Schema.Array(Schema.Struct({ index: Schema.Number, embedding: Schema.Array(Schema.Number) })),
  usage: nullable(Schema.Struct({ prompt_tokens: nullable(Schema.Number), total_tokens: nullable(Schema.Number) }))
})

export interface Embeddings {
  /** in the order of the inputs */
  readonly vectors: ReadonlyArray<ReadonlyArray<number>>
  /** 0 when the server does not say */
  readonly usage: { readonly promptTokens: number; readonly totalTokens: number }
}

const Transcription = Schema.Struct({ text: Schema.String })

export interface OpenAiCompatible {
  /** the base URL without its query string nor a trailing slash, for error details */
  readonly baseUrl: string
  readonly timeoutMs: number
  readonly chat: (body: ChatRequest) => Effect.Effect<ChatCompletion, ProviderCallFailed>
  readonly listModels: () => Effect.Effect<ReadonlyArray<string>, ProviderCallFailed>
  readonly embed: (model: string, inputs: ReadonlyArray<string>) => Effect.Effect<Embeddings, ProviderCallFailed>
  readonly transcribe: (
    model: string,
    bytes: Uint8Array,
    fileName: string,
    mimetype: string
  ) => Effect.Effect<{ readonly text: string }, ProviderCallFailed>
}

// ---------------------------------------------------------------- client

export const make = (config: OpenAiCompatibleConfig): Effect.Effect<OpenAiCompatible, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const httpClient = yield* HttpClient.HttpClient
    // an unparsable base URL fails each call (the API validates it on save; a client is still built from old rows)
    const url = URL.canParse(config.baseUrl) ? new URL(config.baseUrl) : undefined
    const baseUrl = url === undefined ? "" : `${url.origin}${url.pathname.replace(/\/+$/, "")}`
    const host = url?.host ?? ""
    const headerNames = Object.keys(config.headers)
    const secrets = [
      ...(config.apiKey === undefined ? [] : [Redacted.value(config.apiKey)]),
      ...Object.values(config.headers)
    ].filter((secret) => secret.length >= 4)
    const scrub = (text: string) => secrets.reduce((out, secret) => out.split(secret).join("[redacted]"), text)

    /** `path` appended to the base URL, keeping the base's query string (Azure's `api-version`). */
    const endpoint = (path: string) => `${baseUrl}${path}${url?.search ?? ""}`

    const send = <A, I>(
      request: HttpClientRequest.HttpClientRequest,
      schema: Schema.Schema<A, I>,
      what: string
    ): Effect.Effect<A, ProviderCallFailed> =>
      Effect.gen(function*() {
        if (url === undefined) {
          return yield* new ProviderCallFailed({
            reason: "unreachable",
            message: "The model server's base URL is not a URL"
          })
        }
        const prepared = request.pipe(
          HttpClientRequest.setHeaders(config.headers),
          config.apiKey === undefined ? (r) => r : HttpClientRequest.bearerToken(config.apiKey),
          HttpClientRequest.acceptJson
        )
        const answer = yield* httpClient.execute(prepared).pipe(
          Effect.flatMap((response: HttpClientResponse.HttpClientResponse) =>
            Effect.map(response.text, (text) => ({ status: response.status, headers: response.headers, text }))
          ),
          Effect.timeoutFail({
            duration: Duration.millis(config.timeoutMs),
            onTimeout: () =>
              new ProviderCallFailed({
                reason: "timeout",
                message: `The model server at ${host} did not answer within ${config.timeoutMs} ms`
              })
          }),
          Effect.catchTags({
            RequestError: (error) =>
              Effect.fail(
                new ProviderCallFailed({
                  reason: "unreachable",
                  message: `The model server at ${host} could not be reached (${
                    errorCode(error.cause) ?? error.reason
                  })`
                })
              ),
            ResponseError: (error) =>
              Effect.fail(
                new ProviderCallFailed({
                  reason: "unreachable",
                  status: error.response.status,
                  message: `The model server at ${host} broke off its answer (${error.reason})`
                })
              )
          }),
          // custom headers often carry credentials (Azure's `api-key`, a gateway's token): keep them out of spans
          Effect.locallyWith(Headers.currentRedactedNames, (names) => [...names, ...headerNames])
        )
        if (answer.status < 200 || answer.status >= 300) {
          const now = yield* Clock.currentTimeMillis
          return yield* statusFailure({ ...answer, what, scrub, hasKey: config.apiKey !== undefined, now })
        }
        const json = yield* Effect.try({
          try: (): unknown => JSON.parse(answer.text),
          catch: () =>
            new ProviderCallFailed({
              reason: "malformed",
              status: answer.status,
              message: `The model server answered ${what} with something that is not JSON`
            })
        })
        return yield* Schema.decodeUnknown(schema)(json).pipe(
          Effect.mapError((error) =>
            new ProviderCallFailed({
              reason: "malformed",
              status: answer.status,
              message: `The model server answered ${what} in an unexpected shape: ${
                scrub(ParseResult.TreeFormatter.formatErrorSync(error)).slice(0, MAX_PROVIDER_TEXT)
              }`
            })
          )
        )
      })

    const chat = Effect.fn("OpenAiCompatible.chat")(function*(body: ChatRequest) {
      const request = HttpClientRequest.post(endpoint("/chat/completions")).pipe(HttpClientRequest.bodyUnsafeJson(body))
      return yield* send(request, ChatCompletion, `such model or endpoint ("${body.model}")`)
    })

    const listModels = Effect.fn("OpenAiCompatible.listModels")(function*() {
      const list = yield* send(
        HttpClientRequest.get(endpoint("/models")),
        ModelList,
        `model list at ${baseUrl}/models (the base URL usually ends in /v1)`
      )
      return list.data.map((model) => model.id)
    })

    const embed = Effect.fn("OpenAiCompatible.embed")(function*(model: string, inputs: ReadonlyArray<string>) {
      const request = HttpClientRequest.post(endpoint("/embeddings")).pipe(
        HttpClientRequest.bodyUnsafeJson({ model, input: inputs, encoding_format: "float" })
      )
      const list = yield* send(request, EmbeddingList, `such embedding model or endpoint ("${model}")`)
      if (list.data.length !== inputs.length) {
        return yield* new ProviderCallFailed({
          reason: "malformed",
          message: `The model server answered ${list.data.length} embeddings for ${inputs.length} inputs`
        })
      }
      const vectors = [...list.data].sort((a, b) => a.index - b.index).map((item) => item.embedding)
      return {
        vectors,
        usage: { promptTokens: list.usage?.prompt_tokens ?? 0, totalTokens: list.usage?.total_tokens ?? 0 }
      } satisfies Embeddings
    })

    const transcribe = Effect.fn("OpenAiCompatible.transcribe")(
      function*(model: string, bytes: Uint8Array, fileName: string, mimetype: string) {
        const form = new FormData()
        form.append("file", new Blob([Uint8Array.from(bytes)], { type: mimetype }), fileName)
        form.append("model", model)
        form.append("response_format", "json")
        // encoded here, as NodeHttpClient's node:http client does: the undici client hands the FormData to undici 7,
        // which cannot read Node 20's own (older, bundled) FormData ("action is not a function")
        const encoded = new Response(form)
        const body = new Uint8Array(yield* Effect.promise(() => encoded.arrayBuffer()))
        const request = HttpClientRequest.post(endpoint("/audio/transcriptions")).pipe(
          HttpClientRequest.bodyUint8Array(body, encoded.headers.get("content-type") ?? "multipart/form-data")
        )
        const { text } = yield* send(request, Transcription, `such transcription model or endpoint ("${model}")`)
        return { text }
      }
    )

    return { baseUrl, timeoutMs: config.timeoutMs, chat, listModels, embed, transcribe } satisfies OpenAiCompatible
  })
