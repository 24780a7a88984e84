/**
 * The OpenAI-compatible half of FakeModelServer: `/v1/chat/completions`, `/v1/models`, `/v1/embeddings` and
 * `/v1/audio/transcriptions` with OpenAI's bodies and error codes (`{error: {message, type, param, code}}`), and
 * Ollama's 400 for a model without tool support.
 */
import { createHash } from "node:crypto"
import type { FakeState, Reply } from "./FakeModelServer.js"

export const openAiError = (
  message: string,
  type: string,
  code: string | null = null,
  param: string | null = null
) => ({
  error: { message, type, param, code }
})

/** OpenAI's own masking of a wrong key in its 401 message. */
const masked = (key: string) =>
  key.length <= 8 ? "*".repeat(key.length) : `${key.slice(0, 3)}${"*".repeat(key.length - 7)}${key.slice(-4)}`

export const fileKey = (content: string | Uint8Array) => createHash("sha256").update(content).digest("hex")

type Json = Record<string, unknown>
const asRecord = (body: unknown): Json => typeof body === "object" && body !== null ? body as Json : {}
const asArray = (value: unknown): Array<unknown> => Array.isArray(value) ? value : []

const chatAnswer = (state: FakeState, body: Json, reply: Reply) => {
  const model = String(body.model ?? "")
  const known = state.models.get(model)
  if (known === undefined) {
    return reply(
      404,
      openAiError(
        `The model \`${model}\` does not exist or you do not have access to it.`,
        "invalid_request_error",
        "model_not_found"
      )
    )
  }
  if (asArray(body.tools).length > 0 && known.tools === false) {
    return reply(400, openAiError(`registry.ollama.ai/library/${model}:latest does not support tools`, "api_error"))
  }
  const answer = state.next(model)
  const promptTokens = state.tokens(JSON.stringify(body.messages ?? []))
  const message = "text" in answer
    ? { role: "assistant", content: answer.text, refusal: null, annotations: [] }
    : {
      role: "assistant",
      content: null,
      refusal: null,
      annotations: [],
      tool_calls: answer.toolCalls.map((call, i) => ({
        id: call.id ?? `call_${i + 1}`,
        type: "function",
        function: { name: call.name, arguments: JSON.stringify(call.arguments) }
      }))
    }
  const usage = answer.usage ?? { input: promptTokens, output: "text" in answer ? state.tokens(answer.text) : 10 }
  reply(200, {
    id: `chatcmpl-${Date.now()}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: "text" in answer ? "stop" : "tool_calls" }],
    usage: {
      prompt_tokens: usage.input,
      completion_tokens: usage.output,
      total_tokens: usage.input + usage.output,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 }
    },
    service_tier: "default",
    system_fingerprint: "fp_fake"
  })
}

export const openAiRoute = async (
  state: FakeState,
  req: { method: string; path: string; body: unknown; form: FormData | undefined },
  reply: Reply
) => {
  const body = asRecord(req.body)
  const unknownModel = (model: string) =>
    reply(
      404,
      openAiError(
        `The model \`${model}\` does not exist or you do not have access to it.`,
        "invalid_request_error",
        "model_not_found"
      )
    )
  switch (`${req.method} ${req.path}`) {
    case "POST /v1/chat/completions":
      return chatAnswer(state, body, reply)
    case "GET /v1/models":
      return reply(200, {
        object: "list",
        data: [...state.models.values()].map((m) => ({
          id: m.id,
          object: "model",
          created: 1_700_000_000,
          owned_by: m.ownedBy ?? "library"
        }))
      })
    case "POST /v1/embeddings": {
      const model = String(body.model ?? "")
      if (!state.models.has(model)) return unknownModel(model)
      const inputs = typeof body.input === "string" ? [body.input] : asArray(body.input).map(String)
      const tokens = inputs.reduce((n, text) => n + state.tokens(text), 0)
      return reply(200, {
        object: "list",
        data: inputs.map((text, index) => ({
          object: "embedding",
          index,
          embedding: state.embed(text)
        })),
        model,
        usage: { prompt_tokens: tokens, total_tokens: tokens }
      })
    }
    case "POST /v1/audio/transcriptions": {
      const file = req.form?.get("file")
      const model = req.form?.get("model")
      if (typeof model !== "string" || model === "") {
        return reply(400, openAiError("you must provide a model parameter", "invalid_request_error", null, "model"))
      }
      if (!(file instanceof File)) {
        return reply(400, openAiError("you must provide a file parameter", "invalid_request_error", null, "file"))
      }
      if (!state.models.has(model)) return unknownModel(model)
      const bytes = new Uint8Array(await file.arrayBuffer())
      return reply(200, { text: state.transcripts.get(fileKey(bytes)) ?? "This is a fake transcript." })
    }
    default:
      return reply(404, openAiError(`Invalid URL (${req.method} ${req.path})`, "invalid_request_error"))
  }
}

/** The OpenAI-compatible API's answer to a request without the right Bearer key, if it lacks one. */
export const openAiAuth = (key: string | undefined, authorization: string | undefined, reply: Reply): boolean => {
  if (key === undefined) return true
  const sent = authorization?.match(/^Bearer (.+)$/)?.[1]
  if (sent === key) return true
  reply(
    401,
    sent === undefined
      ? openAiError(
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        "invalid_request_error"
      )
      : openAiError(
        `Incorrect API key provided: ${
          masked(sent)
        }. You can find your API key at https://platform.openai.com/account/api-keys.`,
        "invalid_request_error",
        "invalid_api_key"
      )
  )
  return false
}
