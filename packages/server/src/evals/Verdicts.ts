/**
 * A case's expectations checked against what its conversation came to. Pure: the same outcome always
 * gives the same verdicts. Judged criteria are checked elsewhere (Judge.ts): they need a model.
 */
import {
  caseMessages,
  type EvalCaseSpec,
  type EvalOutcome,
  type EvalTranscriptEntry,
  EvalVerdict,
  type ExpectedAction,
  phrases,
  type ReplyExpectations
} from "@parley/domain"
import { findStage, type Stage } from "./CaseRules.js"

/** No-reply reasons that say the agent could not work, rather than chose not to answer (docs/agent.md). */
const FAULTS = new Set([
  "no_agent",
  "no_subscription",
  "no_credits",
  "model_not_configured",
  "provider_error",
  "reply_withheld"
])

const excerpt = (text: string) => (text.length > 200 ? `${text.slice(0, 200)}…` : text)
const quoted = (texts: ReadonlyArray<string>) =>
  texts.length === 0 ? "no reply" : texts.map((t) => `"${excerpt(t)}"`).join(", ")

const verdict = (
  expectation: string,
  expected: unknown,
  passed: boolean,
  detail: string,
  message: number | null = null
) => new EvalVerdict({ expectation, expected, passed, detail, message })

/** The agent's messages (replies, openings, bridges) after each contact message, before the next. */
export const repliesByMessage = (transcript: ReadonlyArray<EvalTranscriptEntry>): Array<Array<string>> => {
  const turns: Array<Array<string>> = []
  for (const entry of transcript) {
    if (entry.role === "contact") turns.push([])
    else if (entry.role === "agent" && entry.text !== null && turns.length > 0) {
      turns[turns.length - 1]!.push(entry.text)
    }
  }
  return turns
}

const replyVerdicts = (
  checks: ReplyExpectations | undefined,
  replies: ReadonlyArray<string>,
  message: number | null
) => {
  const lower = replies.map((r) => r.toLowerCase())
  return [
    ...phrases(checks?.reply_contains).map((p) =>
      verdict(
        "reply_contains",
        p,
        lower.some((r) => r.includes(p.toLowerCase())),
        `Replies: ${quoted(replies)}`,
        message
      )
    ),
    ...phrases(checks?.reply_not_contains).map((p) => {
      const found = replies.find((r) => r.toLowerCase().includes(p.toLowerCase()))
      return verdict(
        "reply_not_contains",
        p,
        found === undefined,
        found === undefined ? `No reply says it.` : `Said in "${excerpt(found)}"`,
        message
      )
    }),
    ...phrases(checks?.reply_matches).map((p) => {
      const re = new RegExp(p, "i")
      const match = replies.find((r) => re.test(r))
      return verdict(
        "reply_matches",
        p,
        match !== undefined,
        match === undefined ? `Replies: ${quoted(replies)}` : `Matched "${excerpt(match)}"`,
        message
      )
    })
  ]
}

/** `payload` fields of an expected action found in a recorded payload with equal values (objects compared as JSON). */
const payloadMatches = (expected: Readonly<Record<string, unknown>>, actual: unknown) =>
  typeof actual === "object" && actual !== null &&
  Object.entries(expected).every(([k, v]) =>
    JSON.stringify((actual as Record<string, unknown>)[k]) === JSON.stringify(v)
  )

const actionVerdicts = (expected: ReadonlyArray<string | ExpectedAction>, outcome: EvalOutcome) =>
  expected.map((e) => {
    const want = typeof e === "string" ? { name: e } : e
    const fired = outcome.actions.filter((a) => a.name === want.name && a.status === "recorded")
    if (fired.length === 0) {
      const other = outcome.actions.find((a) => a.name === want.name)
      return verdict(
        "action_fired",
        e,
        false,
        other
          ? `${want.name} did not fire: ${other.status} (${other.reason ?? "no reason"})`
          : `${want.name} did not fire.`
      )
    }
    if (want.payload === undefined) {
      return verdict("action_fired", e, true, `${want.name} fired ${fired.length} time(s).`)
    }
    const match = fired.find((a) => payloadMatches(want.payload!, a.payload))
    return verdict(
      "action_fired",
      e,
      match !== undefined,
      match
        ? `${want.name} fired with ${JSON.stringify(match.payload)}`
        : `${want.name} fired with ${fired.map((a) => JSON.stringify(a.payload)).join(", ")}`
    )
  })

/** Every expectation of the case except judged criteria. */
export const verdicts = (
  spec: EvalCaseSpec,
  outcome: EvalOutcome,
  stages: ReadonlyArray<Stage>
): Array<EvalVerdict> => {
  const expect = spec.expect ?? {}
  const turns = repliesByMessage(outcome.transcript)
  const all = outcome.transcript.flatMap((e) => (e.role === "agent" && e.text !== null ? [e.text] : []))
  const out: Array<EvalVerdict> = []
  caseMessages(spec).forEach((m, i) => out.push(...replyVerdicts(m.expect, turns[i] ?? [], i + 1)))
  out.push(...replyVerdicts(expect, all, null))
  if (expect.stage !== undefined) {
    const want = findStage(stages, expect.stage)
    out.push(
      verdict(
        "stage",
        expect.stage,
        want?.id === outcome.stage_id,
        `Reached "${outcome.stage_name}" (${outcome.stage_id}).`
      )
    )
  }
  if (expect.status !== undefined) {
    out.push(verdict("status", expect.status, outcome.status === expect.status, `Status: ${outcome.status}.`))
  }
  out.push(...actionVerdicts(expect.actions ?? [], outcome))
  for (const name of expect.actions_not_fired ?? []) {
    const fired = outcome.actions.filter((a) => a.name === name && a.status === "recorded")
    out.push(
      verdict(
        "action_not_fired",
        name,
        fired.length === 0,
        fired.length === 0 ? `${name} did not fire.` : `${name} fired ${fired.length} time(s).`
      )
    )
  }
  if (expect.handoff !== undefined) {
    out.push(
      verdict(
        "handoff",
        expect.handoff,
        outcome.handoff_requested === expect.handoff,
        outcome.handoff_requested ? "A person was asked for." : "No person was asked for."
      )
    )
  }
  if (expect.max_cost !== undefined) {
    out.push(verdict("max_cost", expect.max_cost, outcome.cost <= expect.max_cost, `Cost: ${outcome.cost}.`))
  }
  if (expect.max_ai_messages !== undefined) {
    out.push(
      verdict(
        "max_ai_messages",
        expect.max_ai_messages,
        outcome.ai_messages <= expect.max_ai_messages,
        `AI messages: ${outcome.ai_messages}.`
      )
    )
  }
  // a reply the agent could not make (no credits, no model key, a provider error) fails the case whatever it expects
  for (const [i, e] of outcome.transcript.filter((t) => t.role === "contact").entries()) {
    if (e.no_reply_reason !== null && FAULTS.has(e.no_reply_reason)) {
      out.push(verdict("replied", true, false, `No reply to message ${i + 1}: ${e.no_reply_reason}.`, i + 1))
    }
  }
  return out
}
