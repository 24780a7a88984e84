/**
 * The Gemini half of FakeModelServer: Google's Generative Language API (`/v1beta/models`, `:generateContent`,
 * `:embedContent`, `:batchEmbedContents`), with the key in `x-goog-api-key` or `?key=`, and its error bodies
 * (`{error: {code, message, status}}`) as Google sends them.
 */
import type { FakeState, Reply } from "./FakeModelServer.js"

const statusNames: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE"
}

export const geminiError = (code: number, message: string, details?: ReadonlyArray<unknown>) => ({
  error: { code, message, status: statusNames[code] ?? "UNKNOWN", ...(details === undefined ? {} : { details }) }
})

interface GeminiRequest {
  readonly method: string
  readonly path: string
  readonly body: unknown
}

type Json = Record<string, unknown>
const asRecord = (value: unknown): Json => typeof value === "object" && value !== null ? value as Json : {}
const asArray = (value: unknown): Array<unknown> => Array.isArray(value) ? value : []

/** The texts of a `Content` (`{ parts: [{ text }] }`). */
const contentText = (content: unknown) =>
  asArray(asRecord(content).parts).map((part) => String(asRecord(part).text ?? "")).join(" ")

/** Whether the request carries the key (`x-goog-api-key` or `?key=`); Google's answer when it does not. */
export const geminiAuth = (
  key: string | undefined,
  header: string | Array<string> | undefined,
  queryKey: string | null,
  reply: Reply
): boolean => {
  if (key === undefined) return true
  const sent = (Array.isArray(header) ? header[0] : header) ?? queryKey ?? undefined
  if (sent === key) return true
  if (sent === undefined) {
    reply(
      403,
      geminiError(
        403,
        "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."
      )
    )
  } else {
    reply(
      400,
      geminiError(400, "API key not valid. Please pass a valid API key.", [{
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        reason: "API_KEY_INVALID",
        domain: "googleapis.com",
        metadata: { service: "generativelanguage.googleapis.com" }
      }])
    )
  }
  return false
}

const generateContent = (state: FakeState, model: string, body: Json, reply: Reply) => {
  const answer = state.next(model)
  const prompt = [body.systemInstruction, ...asArray(body.contents)].map(contentText).join(" ")
  const promptTokens = state.tokens(prompt)
  const parts = "text" in answer
    ? [{ text: answer.text }]
    : answer.toolCalls.map((call) => ({ functionCall: { name: call.name, args: call.arguments } }))
  const usage = answer.usage ?? { input: promptTokens, output: "text" in answer ? state.tokens(answer.text) : 10 }
  reply(200, {
    candidates: [{ content: { parts, role: "model" }, finishReason: "STOP", index: 0 }],
    usageMetadata: {
      promptTokenCount: usage.input,
      candidatesTokenCount: usage.output,
      totalTokenCount: usage.input + usage.output,
      promptTokensDetails: [{ modality: "TEXT", tokenCount: usage.input }]
    },
    modelVersion: model,
    responseId: `resp-${Date.now()}`
  })
}

export const geminiRoute = (state: FakeState, req: GeminiRequest, reply: Reply) => {
  const body = asRecord(req.body)
  if (req.method === "GET" && req.path === "/v1beta/models") {
    return reply(200, {
      models: [...state.geminiModels].map((id) => ({
        name: `models/${id}`,
        version: "001",
        displayName: id,
        description: `The fake ${id}`,
        inputTokenLimit: 1_048_576,
        outputTokenLimit: 8_192,
        supportedGenerationMethods: id.includes("embedding") ? ["embedContent"] : ["generateContent", "countTokens"]
      }))
    })
  }
  const call = req.method === "POST" ? req.path.match(/^\/v1beta\/models\/([^:/]+):(\w+)$/) : null
  if (call === null) return reply(404, geminiError(404, `Method not found: ${req.method} ${req.path}`))
  const [, model = "", action] = call
  if (!state.geminiModels.has(model)) {
    return reply(
      404,
      geminiError(
        404,
        `models/${model} is not found for API version v1beta, or is not supported for ${action}. Call ListModels to see the list of available models and their supported methods.`
      )
    )
  }
  switch (action) {
    case "generateContent":
      return generateContent(state, model, body, reply)
    case "embedContent":
      return reply(200, { embedding: { values: state.embed(contentText(body.content)) } })
    case "batchEmbedContents":
      return reply(200, {
        embeddings: asArray(body.requests).map((r) => ({
          values: state.embed(contentText(asRecord(r).content))
        }))
      })
    default:
      return reply(404, geminiError(404, `Method not found: ${action}`))
  }
}
