/** Bodies of a fake OpenAI Responses API (`POST /v1/responses`), as @effect/ai-openai decodes them. */

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
