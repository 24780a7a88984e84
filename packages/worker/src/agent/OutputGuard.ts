/**
 * The output guard (docs/agent.md, "The output guard"): every text a model writes for the contact is
 * checked before it is stored. It is withheld when it repeats what the prompt gives the agent only:
 * - a span of the instructions part (persona, pipeline, stage and routing instructions, stage conditions,
 *   action instructions, a note from the team, the handoff guidance) or of a tool's description: seven
 *   words in a row, or the whole of an instruction sentence of four to six words;
 * - a tool's name (`request_human`, `stage_id`...) or a task marker;
 * - a stage's name set off as a label: in brackets or quotes, or next to the word "stage".
 * What the agent may say is never withheld: a span that the knowledge and context part, the conversation,
 * the bridge text or a passage quoted in the instructions ("say \"...\"") also holds is allowed.
 */
import type { TurnContext } from "@parley/domain"
import { instructionsPart, knowledgePart } from "./Prompting.js"
import { toolTexts } from "./Tools.js"

/** Words in a row that count as repeating the instructions. */
const SPAN = 7
/** A shorter instruction sentence counts when repeated whole, from this many words. */
const MIN_SPAN = 4

const wordsOf = (text: string) =>
  text.toLowerCase().normalize("NFKC").match(/[\p{L}\p{N}]+(?:['’_][\p{L}\p{N}]+)*/gu) ?? []

const grams = (words: ReadonlyArray<string>, k: number) => {
  const out: Array<string> = []
  for (let i = 0; i + k <= words.length; i++) out.push(words.slice(i, i + k).join(" "))
  return out
}

const sentencesOf = (text: string) => text.split(/(?<=[.!?;:])\s+|\n+/)

/** Passages quoted in the instructions: text the agent is told to say. */
const quoted = (text: string) => [...text.matchAll(/["“]([^"”]{3,})["”]/g)].map((m) => m[1]!)

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

export interface GuardTexts {
  /** what the agent follows and never says */
  readonly instructions: ReadonlyArray<string>
  /** what the agent may say: knowledge and context, the conversation, texts written to be said */
  readonly allowed: ReadonlyArray<string>
  readonly stageNames: ReadonlyArray<string>
}

/**
 * The guard's texts for a turn: the prompt's instructions part and the tools (and `extra.instructions`,
 * a followup's), against its knowledge part, its messages (and `extra.allowed`, a followup's assets).
 */
export const guardTexts = (
  ctx: TurnContext,
  tierInstructions: string | null,
  extra: { readonly instructions?: ReadonlyArray<string | null>; readonly allowed?: ReadonlyArray<string | null> } = {}
): GuardTexts => {
  const given = (texts: ReadonlyArray<string | null> | undefined) =>
    (texts ?? []).filter((t): t is string => t !== null)
  const instructions = [instructionsPart(ctx, tierInstructions), ...toolTexts, ...given(extra.instructions)]
  return {
    instructions,
    allowed: [
      knowledgePart(ctx),
      ...ctx.history.map((m) => m.text),
      ctx.handoff?.bridgeText ?? "",
      ...instructions.flatMap(quoted),
      ...given(extra.allowed)
    ],
    stageNames: ctx.stages.map((s) => s.name).filter((n) => wordsOf(n).length > 0)
  }
}

const TOOL_WORDS = new Set(["move_to_stage", "trigger_action", "request_human", "stage_id", "action_id"])

/** Why `reply` may not be sent (a phrase for "the draft ..."), or null when it may. */
export const withheldBecause = (reply: string, texts: GuardTexts): string | null => {
  const words = wordsOf(reply)
  const tool = words.find((w) => TOOL_WORDS.has(w))
  if (tool !== undefined) return `named a tool (${tool})`
  if (reply.includes("[task:")) return "repeated a task marker"

  const allowedText = texts.allowed.join("\n")
  const allowedWords = wordsOf(allowedText)
  for (let k = SPAN; k >= MIN_SPAN; k--) {
    const own = new Set<string>()
    for (const text of texts.instructions) {
      for (const sentence of sentencesOf(text)) {
        const w = wordsOf(sentence)
        if (w.length >= MIN_SPAN && Math.min(SPAN, w.length) === k) { for (const g of grams(w, k)) own.add(g) }
      }
    }
    if (own.size === 0) continue
    const allowed = new Set(grams(allowedWords, k))
    const hit = grams(words, k).find((g) => own.has(g) && !allowed.has(g))
    if (hit !== undefined) return `repeated the instructions ("${hit}")`
  }

  const lower = reply.toLowerCase()
  const allowedLower = allowedText.toLowerCase()
  for (const name of texts.stageNames) {
    const n = escape(name.toLowerCase().trim())
    const label = new RegExp(
      `[("“'\\[]\\s*${n}\\s*[)"”'\\]]|\\bstage\\s*:?\\s*["“']?${n}\\b|\\b${n}["”']?\\s+stage\\b`,
      "u"
    )
    if (label.test(lower) && !label.test(allowedLower)) return `named an internal stage ("${name}")`
  }
  return null
}
