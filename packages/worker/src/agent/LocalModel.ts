/**
 * Parley's local model: deterministic, no network, no key. It is not a language model; it answers the
 * way a careful rule-based assistant would, from what the prompt carries:
 * - Smart Routing: classifies the contact's message by length and by words that signal a demanding request;
 * - a reply: calls `move_to_stage` when the contact's recent messages meet a candidate stage's entry
 *   condition (most of the condition's content words appear), and answers with the sentences of the
 *   knowledge rows (and the passages the instructions quote for it to say: `say "..."`) that best match
 *   the contact's words, or says plainly that it has nothing on that. It
 *   never says the instructions part of its prompt (persona, instructions, stages, tools, notes): it only
 *   follows them, as a hosted model is told to;
 * - a contact's files (FileParts.ts): an image's description, a voice note's transcript and a document's text are
 *   read as the contact's words; an image or voice note of the latest message without them is answered by saying
 *   plainly that it cannot see images or listen to voice notes (it reads no bytes);
 * - an action (`trigger_action`): called when the contact names it (`#name`) or says most content words of its
 *   instructions; a `from_ai` extraction answers with an e-mail address or number the instruction asks for,
 *   else the contact's latest message;
 * - an opening message: a greeting and an offer to help;
 * - a followup: a nudge that names the step, an invitation to reply and the first sentence of the assets;
 * - a person (`request_human`, when offered): asked for when the contact asks for one ("talk to a human",
 *   "a real person", "an agent") or says most content words of the handoff instructions; the bridge
 *   message says a member of the team takes over; the summary gives what the contact wants (the first
 *   question no reply answered, else their latest request), what was answered, and the questions still open.
 * - an eval's judged criterion: PASS when the agent's lines say every "quoted phrase" of the criterion in the
 *   order given (or, with no quotes, most of its content words), FAIL naming what is missing.
 * Token counts are estimated (4 characters a token) so cost and limits behave as with a real provider.
 */
import { LanguageModel, type Prompt, type Response } from "@effect/ai"
import { Duration, Effect } from "effect"
import {
  ASKS_FOR_PERSON,
  conditionMet,
  judgement,
  NOTHING_FOUND,
  saidIn,
  sectionOf,
  sentences,
  stems,
  summaryText,
  textOf,
  unreadable,
  words
} from "./LocalText.js"
import {
  ASSETS_SECTION,
  BRIDGE_MARKER,
  EXTRACT_MARKER,
  FOLLOWUP_MARKER,
  HANDOFF_SECTION,
  JUDGE_MARKER,
  KNOWLEDGE_SECTION,
  OPENING_MARKER,
  ROUTER_MARKER,
  SUMMARY_MARKER
} from "./Prompting.js"

const COMPLEX = new Set([
  "integr",
  "compa",
  "contr",
  "enter",
  "migra",
  "archi",
  "secur",
  "compl",
  "negot",
  "custo",
  "api",
  "sla",
  "legal",
  "multi",
  "sever",
  "detai",
  "diffe",
  "vs",
  "versu"
])

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
  [...system.matchAll(/^- stage_id (\d+) "([^"]*)" \([a-z]+\): (.+)$/gm)].map((m) => ({
    id: Number(m[1]),
    name: m[2]!,
    condition: m[3]!
  }))

interface ActionCandidate {
  readonly id: number
  readonly name: string
  readonly instructions: string
}

/** `- action_id 5 "notify_crm": When the contact asks ...` lines of the reply prompt. */
const actionsIn = (system: string): ReadonlyArray<ActionCandidate> =>
  [...system.matchAll(/^- action_id (\d+) "([^"]*)": (.+)$/gm)].map((m) => ({
    id: Number(m[1]),
    name: m[2]!,
    instructions: m[3]!
  }))

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

/**
 * A `from_ai` value: an e-mail address or a number when the instruction asks for one, else the contact's latest
 * message.
 */
const extractValue = (system: string, contactMessages: ReadonlyArray<string>) => {
  const instruction = system.match(/only, no other words: (.*)$/m)?.[1]?.toLowerCase() ?? ""
  const all = contactMessages.join(" ")
  if (/e-?mail/.test(instruction)) return all.match(/[^\s@]+@[^\s@]+\.[a-z]{2,}/i)?.[0] ?? ""
  if (/phone|number|count|amount|how many|quantity/.test(instruction)) {
    return [...all.matchAll(/\d[\d.,]*/g)].pop()?.[0] ?? ""
  }
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

/** Sections of the instructions whose quoted passages are text written to be said (`say "..."`). */
const SAYABLE_IN =
  /^## (?:Agent type|Persona|Instructions|Current stage: [^\n]*|Routing instructions)\n([\s\S]*?)(?=\n##? |$(?![\s\S]))/gm

/** Passages of three words or more quoted in the instructions: what the agent is told to say, as written. */
const quotedToSay = (system: string) =>
  [...system.matchAll(SAYABLE_IN)].flatMap((m) => [...m[1]!.matchAll(/["“]([^"”\n]+)["”]/g)].map((q) => q[1]!.trim()))
    .filter((q) => words(q).length >= 3)

/**
 * The best-matching sentences for the contact's words, from the knowledge rows and the passages the
 * instructions quote for the agent to say; never the instructions themselves.
 */
const answerFrom = (system: string, contactText: string): string | null => {
  const asked = stems(contactText)
  if (asked.size === 0) return null
  // a row reads `column: value; column: value`: its values are what may be said; each row or quote is said whole
  const units = sectionOf(system, KNOWLEDGE_SECTION).split("\n").filter((l) => l.startsWith("- "))
    .map((l) => l.slice(2).split("; ").map((part) => part.replace(/^[\p{L}\p{N}_ -]{1,40}: /u, "")).join("; "))
    .concat(quotedToSay(system))
    .map((s) => s.trim())
    .filter((s) => s !== "")
  const scored = units
    .map((s, i) => {
      let score = 0
      for (const w of stems(s)) if (asked.has(w)) score++
      return { s, i, score }
    })
    .filter((x) => x.score > 0)
    .sort((a, b) => b.score - a.score || a.i - b.i)
    // a second unit only when it matches as well as the best
    .filter((x, _, best) => x.score === best[0]!.score)
    .slice(0, 2)
    .sort((a, b) => a.i - b.i)
  return scored.length === 0 ? null : scored.map((x) => x.s).join(" ")
}

const firstName = (system: string) => system.match(/^Name: (\S+)/m)?.[1] ?? null

/**
 * A followup: a nudge that depends on the step, an invitation to reply, and the first asset (the instructions are
 * followed, not said).
 */
const followupText = (system: string, name: string | null) => {
  const step = Number(system.match(/Write followup (\d+) of \d+/)?.[1] ?? "1")
  const hi = `Hi${name ? ` ${name}` : ""}`
  const opener = step === 1
    ? `${hi}, just following up on my last message.`
    : `${hi}, checking in once more (follow-up ${step}).`
  const ask = "Do you have any questions I can help with?"
  const asset = sentences(sectionOf(system, ASSETS_SECTION))[0]
  return [opener, ask, asset ? `This may help: ${asset}` : null].filter((p) => p !== null).join(" ")
}

/** The handoff instructions in the system prompt (after "or when:"), if any. */
const handoffCondition = (system: string) =>
  sectionOf(system, HANDOFF_SECTION).match(/or when: (.*?)\. (Then|A member)/)?.[1] ?? null

const wantsPerson = (system: string, contactText: string) => {
  if (ASKS_FOR_PERSON.test(contactText)) return "The contact asked to talk to a person"
  const condition = handoffCondition(system)
  return condition !== null && conditionMet(condition, contactText) >= 0.6
    ? `The handoff instructions apply: ${condition}`
    : null
}

const reply = (options: LanguageModel.ProviderOptions): Array<Response.PartEncoded> => {
  const messages = options.prompt.content
  const system = messages.filter((m) => m.role === "system").map(textOf).join("\n")

  if (system.includes(JUDGE_MARKER)) {
    const criterion = sectionOf(system, "Criterion").trim()
    return textParts(
      options.prompt,
      judgement(criterion, messages.filter((m) => m.role === "user").map(textOf).join("\n"))
    )
  }

  if (system.includes(ROUTER_MARKER)) {
    const contact = messages.filter((m) => m.role === "user").map(saidIn).join(" ")
    return textParts(options.prompt, classify(contact))
  }

  if (system.includes(EXTRACT_MARKER)) {
    return textParts(options.prompt, extractValue(system, messages.filter((m) => m.role === "user").map(saidIn)))
  }

  if (system.includes(SUMMARY_MARKER)) return textParts(options.prompt, summaryText(messages))

  const name = firstName(system)
  if (system.includes(BRIDGE_MARKER)) {
    return textParts(
      options.prompt,
      system.includes("waiting for a member of the team longer")
        ? `Thank you for your patience${
          name ? `, ${name}` : ""
        }. Our team has your conversation and will reply here as soon as they can.`
        : `I'm asking a member of our team to take over${name ? `, ${name}` : ""}. They will reply here shortly.`
    )
  }
  if (system.includes(FOLLOWUP_MARKER)) return textParts(options.prompt, followupText(system, name))

  if (system.includes(OPENING_MARKER)) {
    return textParts(options.prompt, `Hi${name ? ` ${name}` : ""}! How can I help you today?`)
  }

  // the contact's messages since the last assistant message: what this turn answers
  const lastAssistant = messages.map((m) => m.role).lastIndexOf("assistant")
  const toolResults = messages.slice(lastAssistant + 1).filter((m) => m.role === "tool")
  // a file's description, transcript or text is the contact's words too
  const turn = messages.slice(lastAssistant + 1).filter((m) => m.role === "user").map(saidIn).join(" ")
  const contactText = turn.trim() !== ""
    ? turn
    : messages.filter((m) => m.role === "user").map(saidIn).slice(-1).join(" ")

  const canMove = options.tools.some((t) => t.name === "move_to_stage") && options.toolChoice !== "none"
  const canTrigger = options.tools.some((t) => t.name === "trigger_action") && options.toolChoice !== "none"
  const canHandOff = options.tools.some((t) => t.name === "request_human") && options.toolChoice !== "none" &&
    system.includes(`## ${HANDOFF_SECTION}`)
  const handOff = canHandOff && toolResults.length === 0 ? wantsPerson(system, contactText) : null
  if (handOff !== null) {
    const call = {
      type: "tool-call" as const,
      id: "local_handoff",
      name: "request_human",
      params: { reason: handOff },
      providerExecuted: false
    }
    return [call, { type: "finish", reason: "tool-calls", usage: usageFor(options.prompt, call.name) }]
  }
  const handedOff = toolResults.flatMap((m) => (m.content as ReadonlyArray<any>))
    .some((p) => p.type === "tool-result" && p.name === "request_human" && (p.result as any)?.requested === true)
  if (handedOff) {
    return textParts(
      options.prompt,
      `I'm asking a member of our team to take over${name ? `, ${name}` : ""}. They will reply here shortly.`
    )
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
        ? [{
          type: "tool-call" as const,
          id: `local_${best.c.id}`,
          name: "move_to_stage",
          params: { stage_id: best.c.id, reason: `The contact said: ${contactText.slice(0, 200)}` },
          providerExecuted: false
        }]
        : []),
      ...triggered.map((a) => ({
        type: "tool-call" as const,
        id: `local_action_${a.id}`,
        name: "trigger_action",
        params: { action_id: a.id, reason: `The contact said: ${contactText.slice(0, 200)}` },
        providerExecuted: false
      }))
    ]
    if (calls.length > 0) {
      return [...calls, {
        type: "finish",
        reason: "tool-calls",
        usage: usageFor(options.prompt, calls.map((c: any) => c.name).join(" "))
      }]
    }
  }

  const moved = toolResults.flatMap((m) => (m.content as ReadonlyArray<any>)).find((p) =>
    p.type === "tool-result" && p.name === "move_to_stage"
  )
  // the stage is internal: the contact is thanked, never told its name
  const movedStage = moved !== undefined && (moved.result as { moved?: unknown } | null)?.moved === true
  const answer = answerFrom(system, contactText)
  // an image or a voice note of the latest message it was given no words for: it says so, plainly
  const latest = messages.filter((m) => m.role === "user").at(-1)
  const notice = latest === undefined ? null : unreadable(latest)
  const parts = [
    movedStage ? `Thank you${name ? `, ${name}` : ""}, I've noted that.` : null,
    notice,
    answer ?? (movedStage || notice !== null
      ? null
      : `Thanks for your message${name ? `, ${name}` : ""}! ${NOTHING_FOUND} Could you tell me a bit more?`)
  ].filter((p) => p !== null)
  return textParts(options.prompt, parts.join(" "))
}

/** The local model as an `@effect/ai` LanguageModel; `latency` simulates a provider's response time. */
export const makeLocalModel = (options: { readonly latency?: Duration.DurationInput } = {}) =>
  LanguageModel.make({
    generateText: (providerOptions) =>
      Effect.sync(() => reply(providerOptions)).pipe(
        options.latency !== undefined && Duration.toMillis(options.latency) > 0
          ? Effect.delay(options.latency)
          : (e) => e
      ),
    streamText: () => {
      throw new Error("The local model does not stream")
    }
  })
