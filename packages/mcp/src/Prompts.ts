/**
 * MCP prompts (issue 23) for the two jobs people ask an assistant for most: build a pipeline for a purpose,
 * and review a conversation. A prompt is the user's request written out with the tools to use in order, so
 * a model starts from the right call instead of discovering it.
 */
import type { GetPromptResult, ListPromptsResult } from "@modelcontextprotocol/sdk/types.js"

export const prompts: ListPromptsResult = {
  prompts: [
    {
      name: "build_pipeline",
      title: "Build a pipeline for ...",
      description: "Build an AI agent pipeline for a purpose, asking the user only what the tools cannot answer.",
      arguments: [{
        name: "purpose",
        description: "What the agent is for, e.g. booking demo calls for a bike shop",
        required: true
      }]
    },
    {
      name: "review_conversation",
      title: "Review a conversation",
      description:
        "Read a conversation, judge the agent's replies against its stage's instructions, and suggest changes.",
      arguments: [{
        name: "conversation_id",
        description: "The conversation's id (list_conversations)",
        required: true
      }]
    }
  ]
}

const user = (text: string): GetPromptResult["messages"][number] => ({ role: "user", content: { type: "text", text } })

const texts: Record<string, (args: Record<string, string>) => string> = {
  build_pipeline: ({ purpose }) =>
    [
      `Build a Parley pipeline (an AI agent) for this purpose: ${purpose}.`,
      "1. Call start_pipeline_journey; call it again with the ai_provider_id the user picks. Its plan is a starting point: adapt the stages to the purpose.",
      "2. Ask me its questions, only those the purpose does not already answer, in one message.",
      "3. create_pipeline with the ids from the journey's options, then create_stage once per step (order 1 first; won and lost stages last), each with an enter_condition saying when a contact reaches it.",
      "4. Only if I want them: create_variable then create_action (is_active false until I confirm the URL), create_followup on neutral stages, create_knowledge_table and upsert_knowledge_points, then update_pipeline with attach_knowledge_table_ids.",
      "5. Call get_pipeline and summarise what was built, with its ids, in a short list."
    ].join("\n"),
  review_conversation: ({ conversation_id }) =>
    [
      `Review Parley conversation ${conversation_id}.`,
      `1. Call get_conversation with conversation_id ${conversation_id} (messages_limit 50), then get_pipeline for its pipeline.`,
      "2. Say what the contact wants and where the conversation stands (stage, handoff state).",
      "3. Judge each agent reply against the stage's instructions and enter_condition: what was good, what was wrong or missing, and any message the agent left unanswered (no_reply_reason).",
      "4. Suggest concrete changes as tool calls I can approve (update_stage instructions or enter_condition, update_pipeline persona), and whether a person should take over (handoff_conversation). Change nothing yet."
    ].join("\n")
}

/** The prompt's messages, or undefined for an unknown name; missing arguments are the caller's error. */
export const getPrompt = (
  name: string,
  args: Record<string, string> | undefined
): { readonly prompt: GetPromptResult } | { readonly missing: ReadonlyArray<string> } | undefined => {
  const text = texts[name]
  const prompt = prompts.prompts.find((p) => p.name === name)
  if (text === undefined || prompt === undefined) return undefined
  const given = args ?? {}
  const missing = (prompt.arguments ?? []).filter((a) => a.required === true && !given[a.name]?.trim()).map((a) =>
    a.name
  )
  if (missing.length > 0) return { missing }
  return { prompt: { description: prompt.description, messages: [user(text(given))] } }
}
