/**
 * A judged criterion (docs/evals.md): the pipeline's own model reads the case's transcript and answers
 * PASS or FAIL with a reason. The local model's judgement is scripted (LocalModel.ts): every "quoted
 * phrase" of the criterion in the agent's lines, in the order given.
 */
import { Prompt } from "@effect/ai"
import { type EvalTranscriptEntry, EvalVerdict } from "@parley/domain"
import { costOf, type ModelRef, ModelRegistry, Prompting } from "@parley/worker"
import { Effect } from "effect"

const line = (e: EvalTranscriptEntry) =>
  e.text === null
    ? null
    : `${e.role === "contact" ? "Contact" : e.role === "operator" ? "Operator" : "Agent"}: ${
      e.text.replace(/\n+/g, " ")
    }`

export const judgePrompt = (criterion: string, transcript: ReadonlyArray<EvalTranscriptEntry>) =>
  Prompt.make([
    {
      role: "system",
      content: [
        Prompting.JUDGE_MARKER,
        "You judge a chat between a business's AI agent and a contact against one criterion. " +
        "Read the whole transcript. Answer with PASS or FAIL alone on the first line, then one sentence saying why.",
        `## Criterion\n${criterion.trim()}`
      ].join("\n\n")
    },
    { role: "user", content: transcript.map(line).filter((l) => l !== null).join("\n") }
  ])

/** PASS or FAIL from the answer's first word; anything else is a failure that says what came back. */
export const parseJudgement = (text: string) => {
  const trimmed = text.trim()
  const first = trimmed.split(/\s+/, 1)[0]?.replace(/[^A-Za-z]/g, "").toUpperCase()
  const reason = trimmed.split("\n").slice(1).join(" ").trim()
  if (first === "PASS") return { passed: true, detail: reason || "The model judged it met." }
  if (first === "FAIL") return { passed: false, detail: reason || "The model judged it not met." }
  return { passed: false, detail: `The model's answer was neither PASS nor FAIL: "${trimmed.slice(0, 200)}"` }
}

/** The criterion's verdict and the model's cost; a model that cannot be called fails the criterion, saying why. */
export const judge = (model: ModelRef, criterion: string, transcript: ReadonlyArray<EvalTranscriptEntry>) =>
  Effect.gen(function*() {
    const registry = yield* ModelRegistry
    const lm = yield* registry.languageModel(model)
    const response = yield* lm.generateText({ prompt: judgePrompt(criterion, transcript), toolChoice: "none" })
    const cost = costOf(model, {
      inputTokens: response.usage.inputTokens ?? 0,
      outputTokens: response.usage.outputTokens ?? 0
    })
    const { detail, passed } = parseJudgement(response.text)
    return {
      verdict: new EvalVerdict({ expectation: "judge", expected: criterion, passed, detail, message: null }),
      cost
    }
  }).pipe(
    Effect.catchAll((e) =>
      Effect.succeed({
        verdict: new EvalVerdict({
          expectation: "judge",
          expected: criterion,
          passed: false,
          detail: `The criterion could not be judged: ${e.message}`,
          message: null
        }),
        cost: 0
      })
    ),
    Effect.withSpan("Evals.judge")
  )
