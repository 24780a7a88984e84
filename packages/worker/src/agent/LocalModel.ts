/**
 * Parley's local model: deterministic, no network, no key. It is not a language model; it answers the
 * way a careful rule-based assistant would, from what the prompt carries:
 * - Smart Routing: classifies the contact's message by length and by words that signal a demanding request;
 * - a reply: calls `move_to_stage` when the contact's recent messages meet a candidate stage's entry
 *   condition (most of the condition's content words appear), otherwise answers with the sentences of
 *   the instructions, stage and knowledge that best match the contact's words, and says plainly when it
 *   has nothing to go on;
 * - an action (`trigger_action`): called when the contact names it (`#name`) or says most content words of its
 *   instructions; a `from_ai` extraction answers with an e-mail address or number the instruction asks for,
 *   else the contact's latest message;
 * - an opening message: a greeting plus the first sentence of the stage's instructions;
 * - a followup: a nudge that names the step, the first sentence of the followup instructions and of the assets;
 * - a person (`request_human`, when offered): asked for when the contact asks for one ("talk to a human",
 *   "a real person", "an agent") or says most content words of the handoff instructions; the bridge
 *   message says a member of the team takes over; the summary quotes what the contact asked and what was answered.
 * - an eval's judged criterion: PASS when the agent's lines say every "quoted phrase" of the criterion in the
 *   order given (or, with no quotes, most of its content words), FAIL naming what is missing.
 * Token counts are estimated (4 characters a token) so cost and limits behave as with a real provider.
 */
import { LanguageModel, type Prompt, type Response } from "@effect/ai"
import { Duration, Effect } from "effect"
import {
  BRIDGE_MARKER,
  EXTRACT_MARKER,
  FOLLOWUP_MARKER,
  HANDOFF_SECTION,
  JUDGE_MARKER,
  OPENING_MARKER,
  ROUTER_MARKER,
  SUMMARY_MARKER
} from "./Prompting.js"

const STOP = new Set(
  ("a an and are as at be but by can could do does for from has have how i if in is it its me my of on or our so " +
    "that the their them then there these they this to us was we were what when where which who why will with would " +
    "you your yes no not please thanks thank hi hello hey just about any some want need like get").split(" ")
)

const words = (text: string) => text.toLowerCase().normalize("NFKD").replace(/[^\p{L}\p{N}\s]/gu, " ").split(/\s+/).filter(Boolean)
/** Content words, cut to a 5-letter stem so "purchase" meets "purchasing". */
const stems = (text: string) => new Set(words(text).filter((w) => w.length > 2 && !STOP.has(w)).map((w) => w.slice(0, 5)))

const COMPLEX = new Set(["integr", "compa", "contr", "enter", "migra", "archi", "secur", "compl", "negot", "custo", "api", "sla", "legal", "multi", "sever", "detai", "diffe", "vs", "versu"])

const textOf = (message: Prompt.Message): string => {
  if (typeof message.content === "string") return message.content
  return message.content.map((p: any) => (p.type === "text" ? p.text : "")).join(" ")
}

const sentences = (text: string) =>
  text.split(/(?<=[.!?])\s+|\n+/).map((s) => s.replace(/^[-*#\s]+/, "").trim()).filter((s) => s.length > 0 && !s.startsWith("[task:"))

export const classify = (message: string): "simple" | "moderate" | "complex" => {
  const all = words(message)
  const signals = [...stems(message)].filter((s) => COMPLEX.has(s)).length
  const questions = (message.match(/\?/g) ?? []).length
  if (all.length > 40 || signals >= 2 || questions >= 3 || (signals >= 1 && all.length > 15)) return "complex"
  if (all.length <= 6 && signals === 0 && questions <= 1) return "simple"
  return "moderate"
}

interface Candidate {
  readonly id: number
  readonly name: string
  readonly condition: string
}

/** `- stage_id 12 "Won" (won): The customer confirms ...` lines of the reply prompt. */
const candidatesIn = (system: string): ReadonlyArray<Candidate> =>
  [...system.matchAll(/^- stage_id (\d+) "([^"]*)" \([a-z]+\): (.+)$/gm)].map((m) => ({ id: Number(m[1]), name: m[2]!, condition: m[3]! }))

/** The share of a condition's content words the contact's recent messages contain. */
const conditionMet = (condition: string, contactText: string) => {
  const wanted = stems(condition)
  if (wanted.size === 0) return 0
  const said = stems(contactText)
  let hits = 0
  for (const w of wanted) if (said.has(w)) hits++
  return hits / wanted.size
}

interface ActionCandidate {
  readonly id: number
  readonly name: string
  readonly instructions: string
}

/** `- action_id 5 "notify_crm": When the contact asks ...` lines of the reply prompt. */
const actionsIn = (system: string): ReadonlyArray<ActionCandidate> =>
  [...system.matchAll(/^- action_id (\d+) "([^"]*)": (.+)$/gm)].map((m) => ({ id: Number(m[1]), name: m[2]!, instructions: m[3]! }))

/**
 * An action is called when the contact names it (`#name` or `[action: name]`), or when most content
 * words of its instructions appear in what the contact said (as stage moves are decided).
 */
const actionCalledFor = (action: ActionCandidate, contactText: string) => {
  const lower = contactText.toLowerCase()
  const name = action.name.toLowerCase()
  if (lower.includes(`#${name}`) || lower.includes(`[action: ${name}]`)) return true
  return conditionMet(action.instructions, contactText) >= 0.6
}

/** A `from_ai` value: an e-mail address or a number when the instruction asks for one, else the contact's latest message. */
const extractValue = (system: string, contactMessages: ReadonlyArray<string>) => {
  const instruction = system.match(/only, no other words: (.*)$/m)?.[1]?.toLowerCase() ?? ""
  const all = contactMessages.join(" ")
  if (/e-?mail/.test(instruction)) return all.match(/[^\s@]+@[^\s@]+\.[a-z]{2,}/i)?.[0] ?? ""
  if (/phone|number|count|amount|how many|quantity/.test(instruction)) return [...all.matchAll(/\d[\d.,]*/g)].pop()?.[0] ?? ""
  return contactMessages[contactMessages.length - 1]?.trim() ?? ""
}

const usageFor = (prompt: Prompt.Prompt, output: string) => {
  const input = Math.ceil(prompt.content.map(textOf).join("\n").length / 4)
  const out = Math.ceil(output.length / 4)
  return { inputTokens: input, outputTokens: out, totalTokens: input + out }
}

const textParts = (prompt: Prompt.Prompt, text: string): Array<Response.PartEncoded> => [
  { type: "text", text },
  { type: "finish", reason: "stop", usage: usageFor(prompt, text) }
]

/** The best-matching sentences of the system prompt for the contact's words. */
const answerFrom = (system: string, contactText: string): string | null => {
  const asked = stems(contactText)
  if (asked.size === 0) return null
  const scored = sentences(system.replace(/^## (Stages|Contact|Actions)[\s\S]*?(?=^## |$(?![\s\S]))/gm, "").replace(/^- (.*)$/gm, (_, row: string) => row.replace(/[.!?](\s)/g, ",$1")))
    .filter((s) => !s.startsWith("You are the ") && !s.startsWith("Answer in ") && !s.startsWith("Use only what"))
    .map((s, i) => {
      let score = 0
      for (const w of stems(s)) if (asked.has(w)) score++
      return { s, i, score }
    })
    .filter((x) => x.score > 0)
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .slice(0, 2)
    .sort((a, b) => a.i - b.i)
  return scored.length === 0 ? null : scored.map((x) => x.s).join(" ")
}

const firstName = (system: string) => system.match(/^Name: (\S+)/m)?.[1] ?? null

const sectionOf = (system: string, title: string) =>
  system.match(new RegExp(`^## ${title}\\n([\\s\\S]*?)(?=\\n## |\\n\\n[^#]|$(?![\\s\\S]))`, "m"))?.[1] ?? ""

/** A followup: a nudge that depends on the step, the first sentence of the followup instructions, and the first asset. */
const followupText = (system: string, name: string | null) => {
  const step = Number(system.match(/Write followup (\d+) of \d+/)?.[1] ?? "1")
  const hi = `Hi${name ? ` ${name}` : ""}`
  const opener = step === 1 ? `${hi}, just following up on my last message.` : `${hi}, checking in once more (follow-up ${step}).`
  const ask = sentences(sectionOf(system, "Followup instructions"))[0] ?? "Do you have any questions I can help with?"
  const asset = sentences(sectionOf(system, "Assets you may share"))[0]
  return [opener, ask, asset ? `This may help: ${asset}` : null].filter((p) => p !== null).join(" ")
}

/** The contact asks for a person, in so many words. */
const ASKS_FOR_PERSON = /\b(human|real person|a person|someone (real|from)|an? (agent|operator|representative)|speak to|talk to|talk with|customer service)\b/i

/** The handoff instructions in the system prompt (after "or when:"), if any. */
const handoffCondition = (system: string) => sectionOf(system, HANDOFF_SECTION).match(/or when: (.*?)\. (Then|A member)/)?.[1] ?? null

const wantsPerson = (system: string, contactText: string) => {
  if (ASKS_FOR_PERSON.test(contactText)) return "The contact asked to talk to a person"
  const condition = handoffCondition(system)
  return condition !== null && conditionMet(condition, contactText) >= 0.6 ? `The handoff instructions apply: ${condition}` : null
}

/** Three lines for the operator, from what was said. */
const summaryText = (messages: ReadonlyArray<Prompt.Message>) => {
  const contact = messages.filter((m) => m.role === "user").map(textOf).filter((t) => t.trim() !== "")
  const agent = messages.filter((m) => m.role === "assistant").map(textOf).filter((t) => t.trim() !== "")
  const open = contact.flatMap((t) => sentences(t)).filter((s) => s.endsWith("?"))
  return [
    `Wants: ${contact.slice(-2).join(" ").slice(0, 300) || "nothing said yet"}`,
    `Tried: ${agent.slice(-1).join(" ").slice(0, 300) || "no reply yet"}`,
    `Open: ${open.slice(-2).join(" ").slice(0, 300) || "none"}`
  ].join("\n")
}

/** The scripted judgement of a criterion over the transcript's `Agent:` lines. */
const judgement = (criterion: string, transcript: string) => {
  const agent = transcript.split("\n").filter((l) => l.startsWith("Agent: ")).map((l) => l.slice(7)).join("\n").toLowerCase()
  const phrases = [...criterion.matchAll(/"([^"]+)"/g)].map((m) => m[1]!)
  if (phrases.length === 0) {
    const share = conditionMet(criterion, agent)
    return share >= 0.6
      ? `PASS\nThe agent's messages say ${Math.round(share * 100)}% of the criterion's words.`
      : `FAIL\nThe agent's messages say only ${Math.round(share * 100)}% of the criterion's words.`
  }
  let from = 0
  for (const phrase of phrases) {
    const at = agent.indexOf(phrase.toLowerCase(), from)
    if (at < 0) {
      return agent.includes(phrase.toLowerCase())
        ? `FAIL\nThe agent says "${phrase}" too early: not after what comes before it in the criterion.`
        : `FAIL\nThe agent never says "${phrase}".`
    }
    from = at + phrase.length
  }
  return `PASS\nThe agent says ${phrases.map((p) => `"${p}"`).join(", then ")}.`
}

const reply = (options: LanguageModel.ProviderOptions): Array<Response.PartEncoded> => {
  const messages = options.prompt.content
  const system = messages.filter((m) => m.role === "system").map(textOf).join("\n")

  if (system.includes(JUDGE_MARKER)) {
    const criterion = sectionOf(system, "Criterion").trim()
    return textParts(options.prompt, judgement(criterion, messages.filter((m) => m.role === "user").map(textOf).join("\n")))
  }

  if (system.includes(ROUTER_MARKER)) {
    const contact = messages.filter((m) => m.role === "user").map(textOf).join(" ")
    return textParts(options.prompt, classify(contact))
  }

  if (system.includes(EXTRACT_MARKER)) {
    return textParts(options.prompt, extractValue(system, messages.filter((m) => m.role === "user").map(textOf)))
  }

  if (system.includes(SUMMARY_MARKER)) return textParts(options.prompt, summaryText(messages))

  const name = firstName(system)
  if (system.includes(BRIDGE_MARKER)) {
    return textParts(
      options.prompt,
      system.includes("waiting for a member of the team longer")
        ? `Thank you for your patience${name ? `, ${name}` : ""}. Our team has your conversation and will reply here as soon as they can.`
        : `I'm asking a member of our team to take over${name ? `, ${name}` : ""}. They will reply here shortly.`
    )
  }
  if (system.includes(FOLLOWUP_MARKER)) return textParts(options.prompt, followupText(system, name))

  if (system.includes(OPENING_MARKER)) {
    const stage = system.match(/^## Current stage: .*\n([\s\S]*?)(?=\n## |$(?![\s\S]))/m)?.[1] ?? ""
    const first = sentences(stage)[0]
    return textParts(options.prompt, `Hi${name ? ` ${name}` : ""}! ${first ?? "How can I help you today?"}`.trim())
  }

  // the contact's messages since the last assistant message: what this turn answers
  const lastAssistant = messages.map((m) => m.role).lastIndexOf("assistant")
  const toolResults = messages.slice(lastAssistant + 1).filter((m) => m.role === "tool")
  const turn = messages.slice(lastAssistant + 1).filter((m) => m.role === "user").map(textOf).join(" ")
  const contactText = turn.trim() !== "" ? turn : messages.filter((m) => m.role === "user").map(textOf).slice(-1).join(" ")

  const canMove = options.tools.some((t) => t.name === "move_to_stage") && options.toolChoice !== "none"
  const canTrigger = options.tools.some((t) => t.name === "trigger_action") && options.toolChoice !== "none"
  const canHandOff = options.tools.some((t) => t.name === "request_human") && options.toolChoice !== "none" && system.includes(`## ${HANDOFF_SECTION}`)
  const handOff = canHandOff && toolResults.length === 0 ? wantsPerson(system, contactText) : null
  if (handOff !== null) {
    const call = { type: "tool-call" as const, id: "local_handoff", name: "request_human", params: { reason: handOff }, providerExecuted: false }
    return [call, { type: "finish", reason: "tool-calls", usage: usageFor(options.prompt, call.name) }]
  }
  const handedOff = toolResults.flatMap((m) => (m.content as ReadonlyArray<any>))
    .some((p) => p.type === "tool-result" && p.name === "request_human" && (p.result as any)?.requested === true)
  if (handedOff) {
    return textParts(options.prompt, `I'm asking a member of our team to take over${name ? `, ${name}` : ""}. They will reply here shortly.`)
  }
  if ((canMove || canTrigger) && toolResults.length === 0) {
    const best = canMove
      ? candidatesIn(system)
        .map((c) => ({ c, score: conditionMet(c.condition, contactText) }))
        .filter((x) => x.score >= 0.6)
        .sort((a, b) => b.score - a.score)[0]
      : undefined
    const triggered = canTrigger ? actionsIn(system).filter((a) => actionCalledFor(a, contactText)) : []
    const calls: Array<Response.PartEncoded> = [
      ...(best
        ? [{ type: "tool-call" as const, id: `local_${best.c.id}`, name: "move_to_stage", params: { stage_id: best.c.id, reason: `The contact said: ${contactText.slice(0, 200)}` }, providerExecuted: false }]
        : []),
      ...triggered.map((a) => ({ type: "tool-call" as const, id: `local_action_${a.id}`, name: "trigger_action", params: { action_id: a.id, reason: `The contact said: ${contactText.slice(0, 200)}` }, providerExecuted: false }))
    ]
    if (calls.length > 0) {
      return [...calls, { type: "finish", reason: "tool-calls", usage: usageFor(options.prompt, calls.map((c: any) => c.name).join(" ")) }]
    }
  }

  const moved = toolResults.flatMap((m) => (m.content as ReadonlyArray<any>)).find((p) => p.type === "tool-result" && p.name === "move_to_stage")
  const movedTo = moved && typeof moved.result === "object" && moved.result !== null && (moved.result as any).moved === true
    ? String((moved.result as any).stage)
    : null
  const answer = answerFrom(system, contactText)
  const parts = [
    movedTo !== null ? `Thank you${name ? `, ${name}` : ""}! I've noted that (${movedTo}).` : null,
    answer ?? (movedTo !== null
      ? null
      : `Thanks for your message${name ? `, ${name}` : ""}! I'm the local demo assistant, so I can only answer from what this pipeline's instructions and knowledge contain, and I found nothing on that. Could you tell me a bit more?`)
  ].filter((p) => p !== null)
  return textParts(options.prompt, parts.join(" "))
}

/** The local model as an `@effect/ai` LanguageModel; `latency` simulates a provider's response time. */
export const makeLocalModel = (options: { readonly latency?: Duration.DurationInput } = {}) =>
  LanguageModel.make({
    generateText: (providerOptions) =>
      Effect.sync(() => reply(providerOptions)).pipe(
        options.latency !== undefined && Duration.toMillis(options.latency) > 0 ? Effect.delay(options.latency) : (e) => e
      ),
    streamText: () => {
      throw new Error("The local model does not stream")
    }
  })
