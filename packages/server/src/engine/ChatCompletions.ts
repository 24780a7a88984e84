/**
 * An `@effect/ai` LanguageModel over OpenAI's Chat Completions API, the one protocol every model server
 * speaks (Ollama, vLLM, LM Studio, llama.cpp, LiteLLM, OpenRouter...), where @effect/ai-openai speaks only
 * the Responses API. Failures become AiError, so the agent's retry policy applies to them as to any provider.
 */
import { AiError, IdGenerator, LanguageModel, type Prompt, type Response, Tool } from "@effect/ai"
import { Duration, Effect, Encoding, Option, Stream } from "effect"
import type {
  ChatCompletion,
  ChatContentPart,
  ChatMessage,
  ChatRequest,
  ChatTool,
  ChatToolCall,
  ChatToolChoice,
  OpenAiCompatible,
  ProviderCallFailed
} from "./OpenAiCompatible.js"

export interface ChatCompletionsOptions {
  /** the model's name on the server, e.g. `llama3.1:8b` */
  readonly model: string
  readonly client: OpenAiCompatible
}

const MODULE = "ChatCompletions"
type Method = "generateText" | "streamText"

const malformedInput = (method: Method, description: string) =>
  new AiError.MalformedInput({ module: MODULE, method, description })

/** The URL Chat Completions takes for an image: a `data:` URL for bytes or base64, else the URL itself. */
const imageUrl = (part: Prompt.FilePart): string => {
  const mediaType = part.mediaType === "image/*" ? "image/jpeg" : part.mediaType
  if (part.data instanceof URL) return part.data.toString()
  if (part.data instanceof Uint8Array) return `data:${mediaType};base64,${Encoding.encodeBase64(part.data)}`
  return /^(data|https?):/.test(part.data) ? part.data : `data:${mediaType};base64,${part.data}`
}

const fileText = (part: Prompt.FilePart): string =>
  part.data instanceof Uint8Array
    ? new TextDecoder().decode(part.data)
    : typeof part.data === "string"
    ? part.data
    : part.data.toString()

const userContent = (method: Method, message: Prompt.UserMessage) =>
  Effect.gen(function*() {
    const parts: Array<ChatContentPart> = []
    for (const part of message.content) {
      if (part.type === "text") parts.push({ type: "text", text: part.text })
      else if (part.mediaType.startsWith("image/")) {
        parts.push({ type: "image_url", image_url: { url: imageUrl(part) } })
      } else if (part.mediaType.startsWith("text/")) parts.push({ type: "text", text: fileText(part) })
      else return yield* malformedInput(method, `Chat Completions takes no file of type '${part.mediaType}'`)
    }
    // a plain string where there is no image: servers without vision often reject content arrays
    return parts.every((part) => part.type === "text")
      ? parts.map((part) => part.text).join("\n")
      : parts
  })

const prepareMessages = (method: Method, prompt: Prompt.Prompt) =>
  Effect.gen(function*() {
    const messages: Array<ChatMessage> = []
    for (const message of prompt.content) {
      switch (message.role) {
        case "system":
          messages.push({ role: "system", content: message.content })
          break
        case "user":
          messages.push({ role: "user", content: yield* userContent(method, message) })
          break
        case "assistant": {
          let text = ""
          const toolCalls: Array<ChatToolCall> = []
          for (const part of message.content) {
            if (part.type === "text") text += part.text
            else if (part.type === "tool-call" && !part.providerExecuted) {
              toolCalls.push({
                id: part.id,
                type: "function",
                function: { name: part.name, arguments: JSON.stringify(part.params ?? {}) }
              })
            }
          }
          // "" rather than null beside tool calls: the form every server accepts
          messages.push(
            toolCalls.length > 0
              ? { role: "assistant", content: text, tool_calls: toolCalls }
              : { role: "assistant", content: text }
          )
          break
        }
        case "tool":
          for (const part of message.content) {
            messages.push({ role: "tool", tool_call_id: part.id, content: JSON.stringify(part.result) })
          }
          break
      }
    }
    return messages
  })

/**
 * The request's `tools` and `tool_choice`. With `toolChoice: "none"` no tools are sent at all, so a model
 * without tool support (Ollama answers 400 "does not support tools") still answers the calls made without them.
 */
const prepareTools = (method: Method, options: LanguageModel.ProviderOptions) =>
  Effect.gen(function*() {
    if (options.tools.length === 0 || options.toolChoice === "none") return {}
    const choice = options.toolChoice
    const allowed = typeof choice === "object" && "oneOf" in choice
      ? options.tools.filter((tool) => choice.oneOf.includes(tool.name))
      : options.tools
    const tools: Array<ChatTool> = []
    for (const tool of allowed) {
      if (!Tool.isUserDefined(tool)) {
        return yield* malformedInput(method, `Chat Completions cannot call the provider-defined tool '${tool.name}'`)
      }
      const description = tool.description ?? Tool.getDescriptionFromSchemaAst(tool.parametersSchema.ast)
      tools.push({
        type: "function",
        function: {
          name: tool.name,
          ...(description === undefined ? {} : { description }),
          parameters: Tool.getJsonSchemaFromSchemaAst(tool.parametersSchema.ast)
        }
      })
    }
    const toolChoice: ChatToolChoice = typeof choice === "string"
      ? choice
      : "tool" in choice
      ? { type: "function", function: { name: choice.tool } }
      : choice.mode ?? "auto"
    return { tools, tool_choice: toolChoice }
  })

const finishReason = (reason: string | undefined, hasToolCalls: boolean): Response.FinishReason => {
  if (hasToolCalls) return "tool-calls"
  switch (reason) {
    case "stop":
    case undefined:
      return "stop"
    case "length":
      return "length"
    case "content_filter":
      return "content-filter"
    case "tool_calls":
    case "function_call":
      return "tool-calls"
    default:
      return "unknown"
  }
}

const responseParts = (method: Method, completion: ChatCompletion) =>
  Effect.gen(function*() {
    const ids = yield* IdGenerator.IdGenerator
    const choice = completion.choices[0]
    const parts: Array<Response.PartEncoded> = [{
      type: "response-metadata",
      id: completion.id,
      modelId: completion.model,
      timestamp: undefined
    }]
    const text = choice?.message.content ?? ""
    if (text !== "") parts.push({ type: "text", text })
    const toolCalls = choice?.message.tool_calls ?? []
    for (const call of toolCalls) {
      const raw = call.function.arguments
      const params = typeof raw === "string" && raw.trim() !== ""
        ? yield* Effect.try({
          try: () => Tool.unsafeSecureJsonParse(raw),
          catch: (cause) =>
            new AiError.MalformedOutput({
              module: MODULE,
              method,
              description: `The model called '${call.function.name}' with arguments that are not JSON`,
              cause
            })
        })
        : raw ?? {}
      parts.push({
        type: "tool-call",
        id: call.id ?? (yield* ids.generateId()),
        name: call.function.name,
        params: typeof params === "string" ? {} : params
      })
    }
    const usage = completion.usage
    parts.push({
      type: "finish",
      reason: finishReason(choice?.finish_reason, toolCalls.length > 0),
      usage: {
        inputTokens: usage?.prompt_tokens,
        outputTokens: usage?.completion_tokens,
        totalTokens: usage?.total_tokens ?? (usage?.prompt_tokens ?? 0) + (usage?.completion_tokens ?? 0)
      }
    })
    return parts
  })

/** The AiError a failed call is: transport (unreachable, timeout), a status, or an answer we cannot read. */
const toAiError = (client: OpenAiCompatible, method: Method) => (failure: ProviderCallFailed): AiError.AiError => {
  const request = {
    method: "POST" as const,
    url: `${client.baseUrl}/chat/completions`,
    urlParams: [],
    hash: Option.none(),
    headers: {}
  }
  switch (failure.reason) {
    case "unreachable":
    case "timeout":
      return new AiError.HttpRequestError({
        module: MODULE,
        method,
        reason: "Transport",
        request,
        description: failure.message
      })
    case "malformed":
      return new AiError.MalformedOutput({ module: MODULE, method, description: failure.message })
    default:
      return new AiError.HttpResponseError({
        module: MODULE,
        method,
        reason: "StatusCode",
        request,
        response: {
          status: failure.status ?? 0,
          headers: failure.retryAfterMs === undefined ? {} : { "retry-after-ms": String(failure.retryAfterMs) }
        },
        description: failure.message
      })
  }
}

/** A LanguageModel answering with `model` on the server `client` talks to. */
export const make = (options: ChatCompletionsOptions): Effect.Effect<LanguageModel.Service> => {
  const { client, model } = options

  const complete = (method: Method, provider: LanguageModel.ProviderOptions) =>
    Effect.gen(function*() {
      const messages = yield* prepareMessages(method, provider.prompt)
      const tools = yield* prepareTools(method, provider)
      const responseFormat = provider.responseFormat.type === "json"
        ? {
          response_format: {
            type: "json_schema",
            json_schema: {
              name: provider.responseFormat.objectName,
              schema: Tool.getJsonSchemaFromSchemaAst(provider.responseFormat.schema.ast)
            }
          }
        }
        : {}
      const body: ChatRequest = { model, messages, ...tools, ...responseFormat }
      provider.span.attribute("gen_ai.request.model", model)
      const completion = yield* client.chat(body).pipe(
        // the wait a 429 asks for happens here (never longer than a call may take), so that the agent's next
        // attempt comes after it rather than into the same limit
        Effect.tapError((failure) =>
          failure.reason === "rate_limited" && failure.retryAfterMs !== undefined
            ? Effect.sleep(Duration.millis(Math.min(failure.retryAfterMs, client.timeoutMs)))
            : Effect.void
        ),
        Effect.mapError(toAiError(client, method))
      )
      const usage = completion.usage
      provider.span.attribute("gen_ai.usage.input_tokens", usage?.prompt_tokens ?? 0)
      provider.span.attribute("gen_ai.usage.output_tokens", usage?.completion_tokens ?? 0)
      return yield* responseParts(method, completion)
    })

  return LanguageModel.make({
    generateText: (provider) => complete("generateText", provider),
    // we never stream: one call, its parts replayed as a stream
    streamText: (provider) =>
      complete("streamText", provider).pipe(
        Effect.map((parts) => Stream.fromIterable(parts.flatMap(toStreamParts))),
        Stream.unwrap
      )
  })
}

const toStreamParts = (part: Response.PartEncoded): Array<Response.StreamPartEncoded> => {
  switch (part.type) {
    case "text":
      return [
        { type: "text-start", id: "0" },
        { type: "text-delta", id: "0", delta: part.text },
        { type: "text-end", id: "0" }
      ]
    case "tool-call":
    case "finish":
    case "response-metadata":
      return [part]
    default:
      return []
  }
}
