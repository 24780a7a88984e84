/**
 * Prompt assembly: the system prompt of a reply from the pipeline's agent configuration, the current
 * stage, the contact and the opportunity's context, followed by the conversation's memory window.
 * Pure functions: the same context always gives the same prompt.
 */
import { Prompt } from "@effect/ai"
import type { FollowupContext, RoutingTier, TurnContext, TurnStage } from "@parley/domain"

/** Markers the local model reads to know which job a call is (remote models simply follow the text). */
export const ROUTER_MARKER = "[task: classify-request]"
export const OPENING_MARKER = "[task: opening-message]"
export const REPLY_MARKER = "[task: reply]"
export const EXTRACT_MARKER = "[task: extract-value]"
export const FOLLOWUP_MARKER = "[task: followup-message]"
export const BRIDGE_MARKER = "[task: handoff-bridge]"
export const SUMMARY_MARKER = "[task: handoff-summary]"
/** An eval's judged criterion (docs/evals.md): the prompt is the server's (evals/Judge.ts), the marker is shared. */
export const JUDGE_MARKER = "[task: judge-criterion]"
/** The system prompt's section that offers `request_human` (the local model looks for it). */
export const HANDOFF_SECTION = "Handing off to a person"

const section = (title: string, body: string | null | undefined) =>
  body !== null && body !== undefined && body.trim() !== "" ? `## ${title}\n${body.trim()}` : null

const contactLines = (ctx: TurnContext) => {
  const c = ctx.contact
  const lines = [
    c.name ? `Name: ${c.name}` : null,
    c.email ? `Email: ${c.email}` : null,
    c.phone ? `Phone: ${c.phone}` : null
  ].filter((l) => l !== null)
  const context = Object.entries(ctx.context)
    .filter(([, v]) => v !== null && v !== undefined && v !== "")
    .map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`)
  return [...lines, ...context].join("\n")
}

/** Stages the agent may move the opportunity to: the others that state an entry condition. */
export const candidateStages = (ctx: TurnContext): ReadonlyArray<TurnStage> =>
  ctx.opportunityId === null
    ? []
    : ctx.stages.filter((s) => s.id !== ctx.stage?.id && s.enterCondition !== null && s.enterCondition.trim() !== "")

const language = (ctx: TurnContext) => ctx.dialect ? `${ctx.language} (${ctx.dialect})` : ctx.language

/** The system prompt of a reply. */
export const systemPrompt = (ctx: TurnContext, tierInstructions: string | null) => {
  const candidates = candidateStages(ctx)
  return [
    REPLY_MARKER,
    `You are the ${ctx.agentType.name.toLowerCase()} agent of "${ctx.pipelineName}", writing to a contact in a chat. ` +
    `Answer in ${language(ctx)}, briefly and helpfully, as a person in a chat would. ` +
    "Use only what the instructions, the stage and the context below tell you; when you do not know, say so and offer to find out.",
    section("Agent type", ctx.agentType.description),
    section("Persona", ctx.persona),
    section("Instructions", ctx.instructions),
    ctx.stage ? section(`Current stage: ${ctx.stage.name}`, [ctx.stage.persona, ctx.stage.instructions].filter(Boolean).join("\n")) : null,
    section("Routing instructions", tierInstructions),
    section("Contact", contactLines(ctx)),
    ctx.knowledge.length > 0
      ? section("Knowledge", "Relevant rows of this business's knowledge tables:\n" + ctx.knowledge.map((k) => `- ${k.text.replace(/\n/g, "; ")}`).join("\n"))
      : null,
    candidates.length > 0
      ? section(
        "Stages",
        "Call the move_to_stage tool when the conversation meets a stage's entry condition, then reply as usual.\n" +
          candidates.map((s) => `- stage_id ${s.id} "${s.name}" (${s.nature}): ${s.enterCondition}`).join("\n")
      )
      : null,
    (ctx.actions ?? []).length > 0
      ? section(
        "Actions",
        "Call the trigger_action tool with an action's id when the conversation calls for that action (as its instructions say), then reply as usual.\n" +
          (ctx.actions ?? []).map((a) => `- action_id ${a.id} "${a.name}": ${(a.instructions ?? a.description ?? a.name).replace(/\n/g, " ")}`).join("\n")
      )
      : null,
    section(
      "Operator's note",
      ctx.operatorNote ? `A person from the team handed this conversation back to you with this note. Follow it:\n${ctx.operatorNote}` : null
    ),
    ctx.handoff?.canRequest === true
      ? section(
        HANDOFF_SECTION,
        "Call the request_human tool when the contact asks to talk to a person (a human, an agent, someone from the team)" +
          (ctx.handoff.instructions ? `, or when: ${ctx.handoff.instructions.replace(/\n/g, "; ")}` : "") +
          ". " +
          (ctx.handoff.bridgeMode === "ai_generated"
            ? "Then tell the contact, in one or two sentences, that a member of the team will take over here."
            : "A member of the team then takes over.")
      )
      : null
  ].filter((s) => s !== null).join("\n\n")
}

const withoutHandoff = ({ handoff: _, ...ctx }: TurnContext): TurnContext => ctx

const historyMessages = (ctx: TurnContext) =>
  ctx.history.map((m) =>
    m.role === "user"
      ? { role: "user" as const, content: m.text }
      : { role: "assistant" as const, content: m.text }
  )

export const replyPrompt = (ctx: TurnContext, tierInstructions: string | null): Prompt.Prompt =>
  Prompt.make([{ role: "system", content: systemPrompt(ctx, tierInstructions) }, ...historyMessages(ctx)])

/** The router's prompt: one word back, the tier. */
/** A message the router reads for context is cut to this many characters: the tier depends on what was asked, not on every word. */
const ROUTER_CONTEXT_CHARS = 500

/**
 * Smart Routing's router: the contact's latest message, with the pipeline's `context_message_count`
 * messages before it (within the memory window) as the conversation so far, so that a short answer to a
 * demanding offer ("yes, compare them") is classified by what it asks for.
 */
export const routerPrompt = (ctx: TurnContext, instructions: string | null): Prompt.Prompt => {
  const latest = ctx.history.map((m) => m.role).lastIndexOf("user")
  const before = latest <= 0 ? [] : ctx.history.slice(Math.max(0, latest - ctx.contextMessageCount), latest)
  const transcript = before.map((m) => {
    const text = m.text.length > ROUTER_CONTEXT_CHARS ? `${m.text.slice(0, ROUTER_CONTEXT_CHARS)}…` : m.text
    return `${m.role === "user" ? "Contact" : "Agent"}: ${text}`
  })
  return Prompt.make([
    {
      role: "system",
      content: [
        ROUTER_MARKER,
        "Classify how demanding it is to answer the contact's latest message well, given the conversation so far. " +
        "Answer with exactly one word: simple (greetings, yes/no, one short fact), moderate (a normal question), or " +
        "complex (several questions, comparisons, technical or contractual detail, anything needing careful reasoning).",
        section("Routing instructions", instructions),
        transcript.length === 0 ? null : section("Conversation so far", transcript.join("\n"))
      ].filter((s) => s !== null).join("\n\n")
    },
    { role: "user", content: latest < 0 ? "" : ctx.history[latest]!.text }
  ])
}

export const parseTier = (text: string): Exclude<RoutingTier, "router"> | null => {
  const t = text.toLowerCase()
  for (const tier of ["complex", "moderate", "simple"] as const) if (t.includes(tier)) return tier
  return null
}

/** An AI-generated opening message for the stage the opportunity just entered. */
export const openingPrompt = (ctx: TurnContext): Prompt.Prompt =>
  Prompt.make([
    {
      role: "system",
      content: [
        OPENING_MARKER,
        `${systemPrompt(withoutHandoff(ctx), null).replace(REPLY_MARKER, "").trim()}`,
        `Write the first message of this stage${ctx.stage ? ` ("${ctx.stage.name}")` : ""} to the contact: one or two friendly sentences that follow the stage's instructions.`
      ].join("\n\n")
    },
    ...historyMessages(ctx)
  ])

/** A followup for a contact who has not answered: step `step` of the stage's sequence, per its instructions. */
export const followupPrompt = (f: FollowupContext): Prompt.Prompt =>
  Prompt.make([
    {
      role: "system",
      content: [
        FOLLOWUP_MARKER,
        `${systemPrompt(withoutHandoff(f.context), null).replace(REPLY_MARKER, "").trim()}`,
        section("Followup instructions", f.instructions),
        section("Assets you may share", f.assets),
        `The contact has not written since your last message. Write followup ${f.step} of ${f.steps}: one or two short, friendly ` +
        "sentences that follow the followup instructions and invite a reply. Do not repeat an earlier message word for word."
      ].filter((s) => s !== null).join("\n\n")
    },
    ...historyMessages(f.context)
  ])

/** One short extraction for a `from_ai` variable: the value the instruction asks for, from the conversation. */
export const extractionPrompt = (ctx: TurnContext, variable: string, instruction: string): Prompt.Prompt =>
  Prompt.make([
    {
      role: "system",
      content: [
        EXTRACT_MARKER,
        `Read the conversation and answer with the value of "${variable}" only, no other words: ${instruction}`,
        "When the conversation does not say, answer with nothing at all."
      ].join("\n\n")
    },
    ...historyMessages(ctx)
  ])

/** The contact's bridge message when a person is asked for (`second`: the wait outlasted the timeout). */
export const bridgePrompt = (ctx: TurnContext, second: boolean): Prompt.Prompt =>
  Prompt.make([
    {
      role: "system",
      content: [
        BRIDGE_MARKER,
        `${systemPrompt(withoutHandoff(ctx), null).replace(REPLY_MARKER, "").trim()}`,
        second
          ? "The contact has been waiting for a member of the team longer than expected. In one or two sentences, thank them for their patience and tell them the team has their conversation and will reply here."
          : "A member of the team will take over this conversation. In one or two sentences, tell the contact so, and that they will reply here."
      ].join("\n\n")
    },
    ...historyMessages(ctx)
  ])

/** The operator's summary of the conversation so far: what the contact wants, what was tried, open questions. */
export const summaryPrompt = (ctx: TurnContext): Prompt.Prompt =>
  Prompt.make([
    {
      role: "system",
      content: [
        SUMMARY_MARKER,
        "A member of the team is taking over this conversation. Summarise it for them in three short lines, in English:\n" +
        "Wants: what the contact wants.\nTried: what the agent already answered or did.\nOpen: the questions still open (or none)."
      ].join("\n\n")
    },
    ...historyMessages(ctx)
  ])
