/**
 * What a case must satisfy beyond its schema, against the pipeline it runs on: its stages exist, its
 * regular expressions compile. Pure: each problem is a field path and a message (a 422's `validation`).
 */
import { caseMessages, type EvalCaseSpec, phrases, type StageId } from "@parley/domain"

export interface Stage {
  readonly id: StageId
  readonly name: string
}

export interface Issue {
  readonly field: string
  readonly message: string
}

/** A stage named by id or by name (case-insensitive). */
export const findStage = (stages: ReadonlyArray<Stage>, ref: number | string): Stage | undefined =>
  typeof ref === "number"
    ? stages.find((s) => s.id === ref)
    : stages.find((s) => s.name.toLowerCase() === ref.trim().toLowerCase())

export const regexIssue = (pattern: string): string | null => {
  try {
    new RegExp(pattern, "i")
    return null
  } catch (e) {
    return `is not a valid regular expression: ${e instanceof Error ? e.message : String(e)}`
  }
}

/** Every problem of one case, its fields under `prefix` (`cases.2.` in a run, nothing for a stored case). */
export const caseIssues = (spec: EvalCaseSpec, stages: ReadonlyArray<Stage>, prefix = ""): Array<Issue> => {
  const issues: Array<Issue> = []
  if (stages.length === 0) {
    issues.push({ field: `${prefix}stage`, message: "The pipeline has no stages: create a stage first." })
  }
  if (spec.stage !== undefined && stages.length > 0 && findStage(stages, spec.stage) === undefined) {
    issues.push({ field: `${prefix}stage`, message: "is not a stage of this pipeline" })
  }
  if (spec.expect?.stage !== undefined && stages.length > 0 && findStage(stages, spec.expect.stage) === undefined) {
    issues.push({ field: `${prefix}expect.stage`, message: "is not a stage of this pipeline" })
  }
  phrases(spec.expect?.reply_matches).forEach((p, i) => {
    const problem = regexIssue(p)
    if (problem !== null) {
      issues.push({
        field: `${prefix}expect.reply_matches${typeof spec.expect?.reply_matches === "string" ? "" : `.${i}`}`,
        message: problem
      })
    }
  })
  caseMessages(spec).forEach((m, i) => {
    phrases(m.expect?.reply_matches).forEach((p) => {
      const problem = regexIssue(p)
      if (problem !== null) issues.push({ field: `${prefix}messages.${i}.expect.reply_matches`, message: problem })
    })
  })
  return issues
}
