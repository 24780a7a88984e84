/**
 * Bodies of a fake OpenAI Responses API (`POST /v1/responses`), as @effect/ai-openai decodes them, and a server
 * answering them.
 */
import { Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

/** A Responses API answer for `model` with the given output items and token usage. */
export const openAiResponse = (
  id: string,
  model: string,
  output: Array<unknown>,
  usage: { readonly input: number; readonly output: number }
) => ({
  id,
  object: "response",
  created_at: 1_700_000_000,
  model,
  status: "completed",
  parallel_tool_calls: true,
  tool_choice: "auto",
  tools: [],
  temperature: 1,
  top_p: 1,
  metadata: {},
  error: null,
  incomplete_details: null,
  instructions: null,
  output,
  usage: {
    input_tokens: usage.input,
    output_tokens: usage.output,
    total_tokens: usage.input + usage.output,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens_details: { reasoning_tokens: 0 }
  }
})

/** An assistant message output item carrying `text`. */
export const textOutput = (text: string) => ({
  type: "message",
  id: "msg_1",
  role: "assistant",
  status: "completed",
  content: [{ type: "output_text", text, annotations: [] }]
})

/** An item of a Responses API request's `input`: a role's message, its content a string or parts with text. */
export interface OpenAiInputItem {
  readonly role?: string
  readonly content?: string | ReadonlyArray<{ readonly text?: string }>
}

/** What the fakes read of a Responses API request's body (the rest is only ever stringified). */
export interface OpenAiRequestBody {
  readonly model?: string
  readonly input?: string | ReadonlyArray<OpenAiInputItem>
}

/** A request a fake OpenAI server received: its path, JSON body (none when empty) and authorization header. */
export interface OpenAiRequest {
  readonly url: string | undefined
  readonly body: OpenAiRequestBody | undefined
  readonly authorization: string | undefined
}

/** What a fake OpenAI server received, and how it answers next. */
export interface FakeOpenAiState {
  readonly requests: Array<OpenAiRequest>
  /** 500 with an error body on every `POST /v1/responses` while true */
  failing: boolean
  /** the answer's text from the request's body, when set (else the server's fixed text) */
  answer?: ((body: OpenAiRequestBody | undefined) => string) | undefined
}

/** The text of a Responses API request's `input` items of `roles` (system and developer: the prompt's instructions). */
export const inputText = (body: OpenAiRequestBody | undefined, roles: ReadonlyArray<string>): Array<string> =>
  (Array.isArray(body?.input) ? body.input : [])
    .filter((item) => item.role !== undefined && roles.includes(item.role))
    .map((item) => {
      if (typeof item.content === "string") return item.content
      const parts: ReadonlyArray<{ readonly text?: string }> = item.content ?? []
      return parts.map((part) => part.text ?? "").join("")
    })

/**
 * A local OpenAI-compatible server (Responses API at `/v1/responses`) on a random port: answers `text` with
 * 1000 input and 500 output tokens, or 500s while `state.failing`. Its base URL (for OPENAI_BASE_URL); closed with the
 * scope.
 */
export const fakeOpenAi = (state: FakeOpenAiState, text = "The annual plan is 990 euros per year.") =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<Http.Server>((resolve) => {
        const server = Http.createServer((req, res) => {
          let raw = ""
          req.on("data", (c) => (raw += c))
          req.on("end", () => {
            const body: OpenAiRequestBody | undefined = raw ? JSON.parse(raw) : undefined
            state.requests.push({ url: req.url, body, authorization: req.headers.authorization })
            if (req.url !== "/v1/responses") return res.writeHead(404).end()
            if (state.failing) {
              return res.writeHead(500, { "content-type": "application/json" }).end(
                JSON.stringify({ error: { message: "overloaded" } })
              )
            }
            const said = state.answer?.(body) ?? text
            const answer = openAiResponse(`resp_${state.requests.length}`, body?.model ?? "", [textOutput(said)], {
              input: 1000,
              output: 500
            })
            res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer))
          })
        })
        server.listen(0, "127.0.0.1", () => resolve(server))
      })
    ),
    (server) =>
      Effect.promise(() =>
        new Promise<void>((r) => {
          server.closeAllConnections()
          server.close(() => r())
        })
      )
  ).pipe(Effect.map((server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`))
