/**
 * The OpenAI-compatible client and the Chat Completions LanguageModel against a local model server that speaks
 * the protocol (support/FakeModelServer.ts): answers with usage, a tool round trip, images, each failure as the
 * AiError the agent's retry policy sees (a 429's wait included), and the models, embeddings and transcription
 * calls. Also @effect/ai-google's Gemini model on our @effect/ai, through the same fake.
 */
import { AiError, LanguageModel, Prompt, Tool, Toolkit } from "@effect/ai"
// the modules, not the package's index (as Providers.ts does)
import * as GoogleClient from "@effect/ai-google/GoogleClient"
import * as GoogleLanguageModel from "@effect/ai-google/GoogleLanguageModel"
import type { HttpClient } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted, Schema, type Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import * as ChatCompletions from "../src/engine/ChatCompletions.js"
import * as OpenAiCompatible from "../src/engine/OpenAiCompatible.js"
import { type FakeModelServer, startFakeModelServer } from "./support/FakeModelServer.js"

const KEY = "sk-local-0123456789abcdef"
const HEADER_SECRET = "gateway-token-5f3a9c"
const GEMINI_KEY = "AIzaFakeGeminiKey0123456789"

let fake: FakeModelServer
beforeAll(async () => {
  fake = await startFakeModelServer({
    apiKey: KEY,
    geminiKey: GEMINI_KEY,
    models: ["qwen2.5:7b", { id: "gemma:2b", tools: false }, "nomic-embed-text", "whisper-1"],
    dimensions: 16
  })
})
afterAll(() => fake.close())

const client = (config: Partial<OpenAiCompatible.OpenAiCompatibleConfig> = {}) =>
  OpenAiCompatible.make({
    baseUrl: fake.openAiUrl,
    apiKey: Redacted.make(KEY),
    headers: { "X-Gateway-Token": HEADER_SECRET },
    timeoutMs: 2_000,
    ...config
  })

/** A test with a real HTTP client (undici) for its length, on the live clock. */
const live = <A, E>(name: string, test: () => Effect.Effect<A, E, HttpClient.HttpClient | Scope.Scope>) =>
  it.live(name, () => Effect.scoped(Effect.provide(test(), NodeHttpClient.layerUndici)))

/** Runs `effect` with the Chat Completions model `model` of a client configured with `config`. */
const withModel = <A, E, R>(
  model: string,
  effect: Effect.Effect<A, E, R>,
  config: Partial<OpenAiCompatible.OpenAiCompatibleConfig> = {}
) =>
  Effect.gen(function*() {
    const service = yield* ChatCompletions.make({ model, client: yield* client(config) })
    return yield* Effect.provideService(effect, LanguageModel.LanguageModel, service)
  })

const sent = (from: number) => fake.requests.slice(from)
const bodyOf = (request: { readonly body: unknown } | undefined) => request?.body as Record<string, any>

const LookupOrder = Tool.make("LookupOrder", {
  description: "Look up the status of an order",
  parameters: { orderId: Schema.String },
  success: Schema.Struct({ orderId: Schema.String, status: Schema.String })
})
const Orders = Toolkit.make(LookupOrder)
const OrdersLive = Orders.toLayer({ LookupOrder: ({ orderId }) => Effect.succeed({ orderId, status: "shipped" }) })

const conversation = Prompt.make([
  { role: "system", content: "You are the support agent of Acme." },
  { role: "user", content: "Where is my order A-17?" }
])

/** The AiError a call failed with (the test fails on a success). */
const failure = <A, R>(effect: Effect.Effect<A, AiError.AiError, R>) => Effect.flip(effect)

describe("ChatCompletions (OpenAI-compatible servers)", () => {
  live("answers text with usage; sends the model, messages, key and extra headers", () =>
    Effect.gen(function*() {
      fake.script("qwen2.5:7b", { text: "Hello from Qwen.", usage: { input: 21, output: 4 } })
      const start = fake.requests.length
      const response = yield* withModel("qwen2.5:7b", LanguageModel.generateText({ prompt: conversation }))
      expect(response.text).toBe("Hello from Qwen.")
      expect(response.finishReason).toBe("stop")
      expect(response.usage).toMatchObject({ inputTokens: 21, outputTokens: 4, totalTokens: 25 })

      const [request] = sent(start)
      expect(request).toMatchObject({ method: "POST", path: "/v1/chat/completions" })
      expect(request!.headers.authorization).toBe(`Bearer ${KEY}`)
      expect(request!.headers["x-gateway-token"]).toBe(HEADER_SECRET)
      expect(bodyOf(request)).toEqual({
        model: "qwen2.5:7b",
        messages: [
          { role: "system", content: "You are the support agent of Acme." },
          { role: "user", content: "Where is my order A-17?" }
        ]
      })
    }))

  live(
    "runs a tool round trip: tool_calls, the handler's result as a tool message, then text",
    () =>
      Effect.gen(function*() {
        fake.script(
          "qwen2.5:7b",
          { toolCalls: [{ id: "call_7", name: "LookupOrder", arguments: { orderId: "A-17" } }] },
          { text: "Order A-17 has shipped." }
        )
        const start = fake.requests.length
        const [first, second] = yield* withModel(
          "qwen2.5:7b",
          Effect.gen(function*() {
            const first = yield* LanguageModel.generateText({ prompt: conversation, toolkit: Orders })
            const second = yield* LanguageModel.generateText({
              prompt: Prompt.merge(conversation, Prompt.fromResponseParts(first.content)),
              toolkit: Orders
            })
            return [first, second] as const
          })
        ).pipe(Effect.provide(OrdersLive))

        expect(first.finishReason).toBe("tool-calls")
        expect(first.toolCalls.map((c) => [c.id, c.name, c.params])).toEqual([["call_7", "LookupOrder", {
          orderId: "A-17"
        }]])
        expect(first.toolResults.map((r) => r.result)).toEqual([{ orderId: "A-17", status: "shipped" }])
        expect(second.text).toBe("Order A-17 has shipped.")

        const [one, two] = sent(start).map(bodyOf)
        expect(one!.tools).toEqual([{
          type: "function",
          function: {
            name: "LookupOrder",
            description: "Look up the status of an order",
            parameters: {
              type: "object",
              properties: { orderId: { type: "string" } },
              required: ["orderId"],
              additionalProperties: false
            }
          }
        }])
        expect(one!.tool_choice).toBe("auto")
        expect(two!.messages.slice(2)).toEqual([
          {
            role: "assistant",
            content: "",
            tool_calls: [{
              id: "call_7",
              type: "function",
              function: { name: "LookupOrder", arguments: "{\"orderId\":\"A-17\"}" }
            }]
          },
          { role: "tool", tool_call_id: "call_7", content: "{\"orderId\":\"A-17\",\"status\":\"shipped\"}" }
        ])
      })
  )

  live(
    "a model without tool support: the server's own words; with toolChoice none no tools are sent",
    () =>
      Effect.gen(function*() {
        const error = yield* failure(
          withModel("gemma:2b", LanguageModel.generateText({ prompt: conversation, toolkit: Orders })).pipe(
            Effect.provide(OrdersLive)
          )
        )
        expect(error).toBeInstanceOf(AiError.HttpResponseError)
        expect((error as AiError.HttpResponseError).response.status).toBe(400)
        expect(error.message).toContain("registry.ollama.ai/library/gemma:2b:latest does not support tools")

        const start = fake.requests.length
        const response = yield* withModel(
          "gemma:2b",
          LanguageModel.generateText({ prompt: conversation, toolkit: Orders, toolChoice: "none" })
        ).pipe(Effect.provide(OrdersLive))
        expect(response.text).toBe("Hello from the fake model.")
        expect(bodyOf(sent(start)[0])).not.toHaveProperty("tools")
      })
  )

  live("sends an image FilePart as an image_url data URL", () =>
    Effect.gen(function*() {
      const start = fake.requests.length
      const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a])
      yield* withModel(
        "qwen2.5:7b",
        LanguageModel.generateText({
          prompt: [{
            role: "user",
            content: [{ type: "text", text: "What is on this photo?" }, {
              type: "file",
              mediaType: "image/png",
              data: png
            }]
          }]
        })
      )
      expect(bodyOf(sent(start)[0]).messages).toEqual([{
        role: "user",
        content: [
          { type: "text", text: "What is on this photo?" },
          { type: "image_url", image_url: { url: `data:image/png;base64,${Buffer.from(png).toString("base64")}` } }
        ]
      }])
    }))

  live("a refused key is an AiError saying so, without the key or a header value", () =>
    Effect.gen(function*() {
      const wrong = "sk-wrong-key-0123456789"
      const error = yield* failure(
        withModel("qwen2.5:7b", LanguageModel.generateText({ prompt: "hi" }), { apiKey: Redacted.make(wrong) })
      )
      expect(error).toBeInstanceOf(AiError.HttpResponseError)
      expect((error as AiError.HttpResponseError).response.status).toBe(401)
      expect(error.message).toContain("The model server refused the API key (401): Incorrect API key provided")
      for (const secret of [wrong, KEY, HEADER_SECRET]) {
        expect(JSON.stringify(error) + error.message).not.toContain(secret)
      }
    }))

  live("an unknown model is a 404 naming it", () =>
    Effect.gen(function*() {
      const error = yield* failure(withModel("llama9:400b", LanguageModel.generateText({ prompt: "hi" })))
      expect((error as AiError.HttpResponseError).response.status).toBe(404)
      expect(error.message).toContain("The model `llama9:400b` does not exist")
    }))

  live("a 429 waits the retry-after before failing, so the agent's retry comes after it", () =>
    Effect.gen(function*() {
      fake.failNext({ kind: "status", status: 429, retryAfter: "1" }, { path: "/chat/completions" })
      const started = Date.now()
      const error = yield* failure(withModel("qwen2.5:7b", LanguageModel.generateText({ prompt: "hi" })))
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_000)
      expect((error as AiError.HttpResponseError).response.status).toBe(429)
      expect(error.message).toContain("rate limiting")
    }))

  live("a 500 and a 503 are HttpResponseErrors; a broken body is MalformedOutput", () =>
    Effect.gen(function*() {
      fake.failNext({ kind: "status", status: 500 }, { path: "/chat/completions" })
      fake.failNext({ kind: "status", status: 503 }, { path: "/chat/completions" })
      fake.failNext({ kind: "malformed" }, { path: "/chat/completions" })
      const call = withModel("qwen2.5:7b", LanguageModel.generateText({ prompt: "hi" }))
      const [e500, e503, broken] = [yield* failure(call), yield* failure(call), yield* failure(call)]
      expect((e500 as AiError.HttpResponseError).response.status).toBe(500)
      expect((e503 as AiError.HttpResponseError).response.status).toBe(503)
      expect(e503.message).toContain("currently overloaded")
      expect(broken).toBeInstanceOf(AiError.MalformedOutput)
      expect(broken.message).toContain("not JSON")
    }))

  live("a server that never answers fails after timeoutMs as a transport error", () =>
    Effect.gen(function*() {
      fake.failNext({ kind: "hang" }, { path: "/chat/completions" })
      const started = Date.now()
      const error = yield* failure(
        withModel("qwen2.5:7b", LanguageModel.generateText({ prompt: "hi" }), { timeoutMs: 300 })
      )
      expect(Date.now() - started).toBeGreaterThanOrEqual(290)
      expect(error).toBeInstanceOf(AiError.HttpRequestError)
      expect((error as AiError.HttpRequestError).reason).toBe("Transport")
      expect(error.message).toContain("did not answer within 300 ms")
    }))
})

describe("OpenAiCompatible: models, embeddings, transcription", () => {
  live("lists the server's model ids; an unreachable server and a refused key say so", () =>
    Effect.gen(function*() {
      const ids = yield* Effect.flatMap(client(), (c) => c.listModels())
      expect(ids).toEqual(["qwen2.5:7b", "gemma:2b", "nomic-embed-text", "whisper-1"])

      const refused = yield* Effect.flatMap(client({ apiKey: undefined }), (c) => c.listModels()).pipe(Effect.flip)
      expect(refused).toMatchObject({ _tag: "ProviderCallFailed", reason: "unauthorized", status: 401 })
      expect(refused.message).toContain("The model server requires an API key (401)")

      const down = yield* Effect.flatMap(client({ baseUrl: "http://127.0.0.1:1/v1" }), (c) => c.listModels()).pipe(
        Effect.flip
      )
      expect(down).toMatchObject({ reason: "unreachable" })
      expect(down.message).toContain("The model server at 127.0.0.1:1 could not be reached")

      fake.failNext({ kind: "status", status: 429, retryAfter: new Date(Date.now() + 30_000).toUTCString() })
      const limited = yield* Effect.flatMap(client(), (c) => c.listModels()).pipe(Effect.flip)
      expect(limited.reason).toBe("rate_limited")
      expect(limited.retryAfterMs).toBeGreaterThan(25_000)
    }))

  live("embeds texts into normalised vectors, in order, with usage", () =>
    Effect.gen(function*() {
      const start = fake.requests.length
      const texts = ["The annual plan costs 990 euros", "Refunds take five days"]
      const { usage, vectors } = yield* Effect.flatMap(client(), (c) => c.embed("nomic-embed-text", texts))
      expect(vectors).toEqual(texts.map(fake.embedding))
      expect(vectors[0]).toHaveLength(16)
      expect(Math.hypot(...vectors[0]!)).toBeCloseTo(1, 6)
      expect(usage.promptTokens).toBe(10)
      expect(bodyOf(sent(start)[0])).toEqual({ model: "nomic-embed-text", input: texts, encoding_format: "float" })
    }))

  live("transcribes audio sent as multipart form data", () =>
    Effect.gen(function*() {
      const audio = new Uint8Array([0x4f, 0x67, 0x67, 0x53, 1, 2, 3])
      fake.transcript(audio, "Hi, I would like to book a demo.")
      const start = fake.requests.length
      const { text } = yield* Effect.flatMap(
        client(),
        (c) => c.transcribe("whisper-1", audio, "voice.ogg", "audio/ogg")
      )
      expect(text).toBe("Hi, I would like to book a demo.")
      const [request] = sent(start)
      expect(request).toMatchObject({ method: "POST", path: "/v1/audio/transcriptions" })
      expect(request!.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/)
      expect(bodyOf(request)).toEqual({
        file: { name: "voice.ogg", type: "audio/ogg", size: audio.length },
        model: "whisper-1",
        response_format: "json"
      })
    }))
})

describe("@effect/ai-google on @effect/ai 0.37", () => {
  live("GoogleLanguageModel answers text and a function call through generateContent", () =>
    Effect.gen(function*() {
      const google = yield* GoogleClient.make({ apiKey: Redacted.make(GEMINI_KEY), apiUrl: fake.geminiUrl })
      const gemini = yield* GoogleLanguageModel.make({ model: "gemini-2.0-flash" }).pipe(
        Effect.provideService(GoogleClient.GoogleClient, google)
      )
      fake.script(
        "gemini-2.0-flash",
        { text: "Hello from Gemini.", usage: { input: 9, output: 3 } },
        { toolCalls: [{ name: "LookupOrder", arguments: { orderId: "A-17" } }] }
      )
      const start = fake.requests.length
      const text = yield* gemini.generateText({ prompt: conversation })
      expect(text.text).toBe("Hello from Gemini.")
      expect(text.usage).toMatchObject({ inputTokens: 9, outputTokens: 3 })
      const call = yield* gemini.generateText({ prompt: conversation, toolkit: Orders }).pipe(
        Effect.provide(OrdersLive)
      )
      expect(call.toolCalls.map((c) => [c.name, c.params])).toEqual([["LookupOrder", { orderId: "A-17" }]])
      expect(call.toolResults.map((r) => r.result)).toEqual([{ orderId: "A-17", status: "shipped" }])

      const [first, second] = sent(start)
      expect(first).toMatchObject({ method: "POST", path: "/v1beta/models/gemini-2.0-flash:generateContent" })
      expect(first!.headers["x-goog-api-key"]).toBe(GEMINI_KEY)
      expect(bodyOf(first).systemInstruction).toEqual({ parts: [{ text: "You are the support agent of Acme." }] })
      expect(bodyOf(first).contents).toEqual([{ role: "user", parts: [{ text: "Where is my order A-17?" }] }])
      expect(JSON.stringify(bodyOf(second).tools)).toContain("\"functionDeclarations\":[{\"name\":\"LookupOrder\"")

      const wrongKey = yield* GoogleClient.make({ apiKey: Redacted.make("AIzaWrong000"), apiUrl: fake.geminiUrl })
      const refused = yield* GoogleLanguageModel.make({ model: "gemini-2.0-flash" }).pipe(
        Effect.provideService(GoogleClient.GoogleClient, wrongKey),
        Effect.flatMap((model) => failure(model.generateText({ prompt: "hi" })))
      )
      expect((refused as AiError.HttpResponseError).response.status).toBe(400)
      expect(refused.message).toContain("API key not valid")
    }))
})
