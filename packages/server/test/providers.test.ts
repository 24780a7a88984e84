/**
 * The remote providers against local fake servers: an OpenAI-compatible Responses API (`POST /v1/responses`)
 * and Anthropic's Messages API (`POST /v1/messages`). Text answers with usage, a tool round trip, what the
 * request carries, provider errors and timeouts as AiError, and ModelUnavailable without a key.
 */
import { AiError, LanguageModel, Prompt, Tool, Toolkit } from "@effect/ai"
import { describe, expect, it } from "@effect/vitest"
import type { ModelRef } from "@parley/worker"
import { Cause, ConfigProvider, Effect, Exit, Layer, Option, Schema } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll } from "vitest"
import { RemoteModels } from "../src/engine/Providers.js"
import { openAiResponse, textOutput } from "./support/FakeOpenAi.js"

// ---------------------------------------------------------------- fake servers

interface Recorded {
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: unknown
}

/** What the fake and the tests read of a Responses API request; the rest is only ever compared whole. */
const OpenAiRequest = Schema.Struct({
  model: Schema.String,
  input: Schema.Array(Schema.Struct({
    type: Schema.optional(Schema.String),
    role: Schema.optional(Schema.String),
    call_id: Schema.optional(Schema.String),
    output: Schema.optional(Schema.String)
  })),
  tools: Schema.optional(Schema.Array(Schema.Struct({ name: Schema.String })))
})
type OpenAiRequest = typeof OpenAiRequest.Type

/** What the fake and the tests read of a Messages API request. */
const AnthropicRequest = Schema.Struct({
  model: Schema.String,
  system: Schema.optional(Schema.Unknown),
  messages: Schema.Array(Schema.Struct({
    role: Schema.String,
    content: Schema.Union(
      Schema.String,
      Schema.Array(Schema.Struct({
        type: Schema.String,
        tool_use_id: Schema.optional(Schema.String),
        content: Schema.optional(Schema.Unknown)
      }))
    )
  })),
  tools: Schema.optional(Schema.Array(Schema.Struct({ name: Schema.String })))
})
type AnthropicRequest = typeof AnthropicRequest.Type

/** A request body decoded with `schema`; fields it does not name are kept, for `toEqual` on a part of it. */
const decodeSent = <A, I>(schema: Schema.Schema<A, I>, body: unknown) =>
  Schema.decodeUnknownEither(schema, { onExcessProperty: "preserve" })(body)

/** A recorded request's body as `schema` reads it; the test fails on a body of another shape. */
const sentAs = <A, I>(request: Recorded | undefined, schema: Schema.Schema<A, I>): A => {
  const decoded = decodeSent(schema, request?.body)
  if (decoded._tag === "Left") expect.fail(`${request?.path} was sent a body of another shape: ${decoded.left.message}`)
  return decoded.right
}

const requests: Array<Recorded> = []
let server: Http.Server
let origin = ""

const respond = (body: OpenAiRequest, output: Array<unknown>) =>
  openAiResponse(`resp_${requests.length}`, body.model, output, { input: 10, output: 5 })

const answerOpenAi = (body: OpenAiRequest) => {
  const hasTools = body.tools !== undefined && body.tools.length > 0
  const hasToolResult = body.input.some((item) => item.type === "function_call_output")
  if (hasTools && !hasToolResult) {
    return respond(body, [{
      type: "function_call",
      id: "fc_1",
      call_id: "call_1",
      name: "LookupOrder",
      arguments: JSON.stringify({ orderId: "A-17" }),
      status: "completed"
    }])
  }
  const text = hasToolResult ? "Order A-17 has shipped." : "Hello from the fake model."
  return respond(body, [textOutput(text)])
}

const answerAnthropic = (body: AnthropicRequest) => {
  const hasTools = body.tools !== undefined && body.tools.length > 0
  const hasToolResult = body.messages.some((m) =>
    typeof m.content !== "string" && m.content.some((c) => c.type === "tool_result")
  )
  const base = {
    id: `msg_${requests.length}`,
    type: "message",
    role: "assistant",
    model: body.model,
    stop_sequence: null,
    usage: { input_tokens: 12, output_tokens: 4 }
  }
  if (hasTools && !hasToolResult) {
    return {
      ...base,
      stop_reason: "tool_use",
      content: [{ type: "tool_use", id: "toolu_1", name: "LookupOrder", input: { orderId: "A-17" } }]
    }
  }
  const text = hasToolResult ? "Order A-17 has shipped." : "Hello from the fake Claude."
  return { ...base, stop_reason: "end_turn", content: [{ type: "text", text }] }
}

beforeAll(async () => {
  server = Http.createServer(async (req, res) => {
    let raw = ""
    for await (const chunk of req) raw += chunk
    const path = new URL(req.url ?? "/", "http://fake").pathname
    const body: unknown = raw === "" ? undefined : JSON.parse(raw)
    requests.push({ path, headers: req.headers, body })
    const json = (status: number, payload: unknown) => {
      res.writeHead(status, { "content-type": "application/json" })
      res.end(JSON.stringify(payload))
    }
    /** A body the fake cannot read is a 400 naming what is wrong, so the test fails on it. */
    const unreadable = (message: string) => json(400, { error: { message, type: "invalid_request_error" } })
    switch (path) {
      case "/v1/responses": {
        const sent = decodeSent(OpenAiRequest, body)
        return sent._tag === "Left" ? unreadable(sent.left.message) : json(200, answerOpenAi(sent.right))
      }
      case "/v1/messages": {
        const sent = decodeSent(AnthropicRequest, body)
        return sent._tag === "Left" ? unreadable(sent.left.message) : json(200, answerAnthropic(sent.right))
      }
      case "/fail/v1/responses":
        return json(500, { error: { message: "the fake model fell over", type: "server_error" } })
      case "/hang/v1/responses":
        return // never answers
      case "/stall/v1/responses":
        // headers and half a body, then nothing
        res.writeHead(200, { "content-type": "application/json" })
        res.write("{\"id\":\"resp_stalled\",")
        return
      default:
        return json(404, { error: { message: `no route ${path}` } })
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

// ---------------------------------------------------------------- helpers

const gpt: ModelRef = {
  id: 11,
  provider: "openai",
  model: "gpt-4.1-mini",
  inputPricePerMillion: 0.4,
  outputPricePerMillion: 1.6
}
const claude: ModelRef = {
  id: 21,
  provider: "anthropic",
  model: "claude-sonnet-4-20250514",
  inputPricePerMillion: 3,
  outputPricePerMillion: 15
}

/** RemoteModels built on exactly this configuration (nothing read from the process environment). */
const remote = (env: Record<string, string>) =>
  RemoteModels.Default.pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
  )

const openAiEnv = (prefix = "") => ({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: `${origin}${prefix}/v1` })

/** Runs `f` with the LanguageModel of `model`, on RemoteModels configured by `env`. */
const withModel = <A, E, R>(env: Record<string, string>, model: ModelRef, f: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const models = yield* RemoteModels
    const service = yield* models.languageModel(model)
    return yield* Effect.provideService(f, LanguageModel.LanguageModel, service)
  }).pipe(Effect.provide(remote(env)))

const LookupOrder = Tool.make("LookupOrder", {
  description: "Look up the status of an order",
  parameters: { orderId: Schema.String },
  success: Schema.Struct({ orderId: Schema.String, status: Schema.String })
})
const Orders = Toolkit.make(LookupOrder)
const OrdersLive = Orders.toLayer({ LookupOrder: ({ orderId }) => Effect.succeed({ orderId, status: "shipped" }) })

const since = (n: number) => requests.slice(n)

const conversation = Prompt.make([
  { role: "system", content: "You are the support agent of Acme." },
  { role: "user", content: "Where is my order A-17?" }
])

// ---------------------------------------------------------------- OpenAI

describe("RemoteModels: OpenAI (Responses API)", () => {
  it.live("answers text, with usage, and sends the model name, system instructions and key", () =>
    Effect.gen(function*() {
      const start = requests.length
      const response = yield* withModel(openAiEnv(), gpt, LanguageModel.generateText({ prompt: conversation }))
      expect(response.text).toBe("Hello from the fake model.")
      expect(response.finishReason).toBe("stop")
      expect(response.usage.inputTokens).toBe(10)
      expect(response.usage.outputTokens).toBe(5)

      const [request] = since(start)
      expect(request!.path).toBe("/v1/responses")
      expect(request!.headers.authorization).toBe("Bearer sk-test")
      const body = sentAs(request, OpenAiRequest)
      expect(body.model).toBe("gpt-4.1-mini")
      expect(body.input[0]).toEqual({ role: "system", content: "You are the support agent of Acme." })
      expect(body.input[1]).toMatchObject({ role: "user" })
      expect(JSON.stringify(body.input[1])).toContain("Where is my order A-17?")
    }))

  it.live("runs a tool round trip: function_call, then the function_call_output goes back", () =>
    Effect.gen(function*() {
      const start = requests.length
      const [first, second] = yield* withModel(
        openAiEnv(),
        gpt,
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
      expect(first.toolCalls.map((c) => [c.name, c.params])).toEqual([["LookupOrder", { orderId: "A-17" }]])
      expect(first.toolResults.map((r) => r.result)).toEqual([{ orderId: "A-17", status: "shipped" }])
      expect(second.text).toBe("Order A-17 has shipped.")

      const sent = since(start)
      expect(sent).toHaveLength(2)
      // the tools are declared on every request
      const [firstBody, secondBody] = sent.map((request) => sentAs(request, OpenAiRequest))
      for (const body of [firstBody!, secondBody!]) {
        expect(body.tools).toHaveLength(1)
        expect(body.tools?.[0]).toMatchObject({
          type: "function",
          name: "LookupOrder",
          description: "Look up the status of an order",
          parameters: { type: "object", properties: { orderId: { type: "string" } }, required: ["orderId"] }
        })
      }
      expect(firstBody!.input.some((item) => item.type === "function_call_output")).toBe(false)
      const types = secondBody!.input.map((item) => item.type ?? item.role)
      expect(types).toEqual(["system", "user", "function_call", "function_call_output"])
      const output = secondBody!.input.find((item) => item.type === "function_call_output")
      expect(output?.call_id).toBe("call_1")
      expect(JSON.parse(output!.output!)).toEqual({ orderId: "A-17", status: "shipped" })
    }))

  it.live("caches the LanguageModel per model", () =>
    Effect.gen(function*() {
      const models = yield* RemoteModels
      const a = yield* models.languageModel(gpt)
      const b = yield* models.languageModel({ ...gpt, id: 99 })
      const c = yield* models.languageModel({ ...gpt, model: "gpt-4o-mini" })
      expect(a).toBe(b)
      expect(c).not.toBe(a)
    }).pipe(Effect.provide(remote(openAiEnv()))))

  it.live("a 500 from the provider is an AiError (HttpResponseError), not a defect", () =>
    Effect.gen(function*() {
      const exit = yield* withModel(openAiEnv("/fail"), gpt, LanguageModel.generateText({ prompt: "hi" })).pipe(
        Effect.exit
      )
      // a typed failure: Cause.failureOption is None for a defect or an interruption
      const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
      expect(AiError.isAiError(error)).toBe(true)
      expect(error).toBeInstanceOf(AiError.HttpResponseError)
      expect((error as AiError.HttpResponseError).response.status).toBe(500)
    }))

  it.live("a provider that never answers fails after AI_REQUEST_TIMEOUT_MS with an AiError", () =>
    Effect.gen(function*() {
      const started = Date.now()
      const error = yield* withModel(
        { ...openAiEnv("/hang"), AI_REQUEST_TIMEOUT_MS: "300" },
        gpt,
        LanguageModel.generateText({ prompt: "hi" })
      ).pipe(Effect.flip)
      const elapsed = Date.now() - started
      expect(error).toBeInstanceOf(AiError.HttpRequestError)
      expect((error as AiError.HttpRequestError).reason).toBe("Transport")
      expect((error as AiError.HttpRequestError).description).toContain("300 ms")
      expect(elapsed).toBeGreaterThanOrEqual(290)
      expect(elapsed).toBeLessThan(5_000)
    }))

  it.live("the timeout also covers an answer whose body never completes", () =>
    Effect.gen(function*() {
      const started = Date.now()
      const error = yield* withModel(
        { ...openAiEnv("/stall"), AI_REQUEST_TIMEOUT_MS: "300" },
        gpt,
        LanguageModel.generateText({ prompt: "hi" })
      ).pipe(Effect.flip)
      expect(error).toBeInstanceOf(AiError.HttpRequestError)
      expect(Date.now() - started).toBeLessThan(5_000)
    }))

  it.live("without OPENAI_API_KEY (or with a blank one) an OpenAI model is unavailable", () =>
    Effect.gen(function*() {
      for (const env of [{}, { OPENAI_API_KEY: "  " }]) {
        const error = yield* Effect.flatMap(RemoteModels, (m) => m.languageModel(gpt)).pipe(
          Effect.provide(remote(env)),
          Effect.flip
        )
        expect(error._tag).toBe("ModelUnavailable")
        expect(error.message).toBe("OpenAI is not configured: set OPENAI_API_KEY")
      }
    }))

  it.live("an unknown provider slug is unavailable", () =>
    Effect.gen(function*() {
      const models = yield* RemoteModels
      const error = yield* models.languageModel({ ...gpt, provider: "local" }).pipe(Effect.flip)
      expect(error._tag).toBe("ModelUnavailable")
      expect(error.message).toContain("\"local\"")
    }).pipe(Effect.provide(remote(openAiEnv()))))
})

// ---------------------------------------------------------------- Anthropic

const anthropicEnv = () => ({ ANTHROPIC_API_KEY: "sk-ant-test", ANTHROPIC_BASE_URL: origin })

describe("RemoteModels: Anthropic (Messages API)", () => {
  it.live("answers text with usage; the request carries the model, system prompt, key and version", () =>
    Effect.gen(function*() {
      const start = requests.length
      const response = yield* withModel(anthropicEnv(), claude, LanguageModel.generateText({ prompt: conversation }))
      expect(response.text).toBe("Hello from the fake Claude.")
      expect(response.usage.inputTokens).toBe(12)
      expect(response.usage.outputTokens).toBe(4)

      const [request] = since(start)
      expect(request!.path).toBe("/v1/messages")
      expect(request!.headers["x-api-key"]).toBe("sk-ant-test")
      expect(request!.headers["anthropic-version"]).toBe("2023-06-01")
      const body = sentAs(request, AnthropicRequest)
      expect(body.model).toBe("claude-sonnet-4-20250514")
      expect(JSON.stringify(body.system)).toContain("You are the support agent of Acme.")
      expect(body.messages).toHaveLength(1)
      expect(body.messages[0]!.role).toBe("user")
    }))

  it.live("runs a tool round trip: tool_use, then the tool_result goes back", () =>
    Effect.gen(function*() {
      const start = requests.length
      const [first, second] = yield* withModel(
        anthropicEnv(),
        claude,
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
      expect(first.toolResults.map((r) => r.result)).toEqual([{ orderId: "A-17", status: "shipped" }])
      expect(second.text).toBe("Order A-17 has shipped.")

      const sent = since(start)
      expect(sent).toHaveLength(2)
      const firstTools = sentAs(sent[0], AnthropicRequest).tools
      expect(firstTools).toBeDefined()
      expect(firstTools?.[0]).toMatchObject({
        name: "LookupOrder",
        input_schema: { type: "object", properties: { orderId: { type: "string" } } }
      })
      const blocks = sentAs(sent[1], AnthropicRequest).messages.flatMap((m) =>
        typeof m.content === "string" ? [] : m.content
      )
      const result = blocks.find((b) => b.type === "tool_result")
      expect(result?.tool_use_id).toBe("toolu_1")
      expect(JSON.stringify(result?.content)).toContain("shipped")
    }))

  it.live("without ANTHROPIC_API_KEY an Anthropic model is unavailable", () =>
    Effect.gen(function*() {
      const models = yield* RemoteModels
      const error = yield* models.languageModel(claude).pipe(Effect.flip)
      expect(error).toMatchObject({
        _tag: "ModelUnavailable",
        message: "Anthropic is not configured: set ANTHROPIC_API_KEY"
      })
    }).pipe(Effect.provide(remote(openAiEnv()))))
})
