import type { SqlError } from "@effect/sql/SqlError"
import {
  Action,
  type ActionId,
  ActionNotFound,
  type ActionResultsQuery,
  beforeAiTriggers,
  type CreateAction,
  type CreateVariable,
  CurrentActor,
  type FixedTrigger,
  HEADER_NAME,
  jsonPath,
  type PipelineId,
  PipelineNotFound,
  placeholders,
  suggestedVariables,
  templatedStrings,
  Unprocessable,
  type UpdateAction,
  type UpdateVariable,
  valueFormatIssue,
  type Variable,
  VARIABLE_NAME,
  type VariableId,
  VariableNotFound,
  type VariableType
} from "@parley/domain"
import { Effect, Schema } from "effect"
import { isUniqueViolation } from "../db/SqlErrors.js"
import { OutboundTargets } from "../outbound/OutboundTargets.js"
import { someOrFail } from "../util/Effects.js"
import { type ActionRow, AutomationRepo } from "./AutomationRepo.js"

interface Issue {
  readonly field: string
  readonly message: string
}

/** 422 naming each bad field once (its first problem). */
const failOn = (issues: ReadonlyArray<Issue>) => {
  const seen = new Set<string>()
  const first = issues.filter((i) => (seen.has(i.field) ? false : (seen.add(i.field), true)))
  return first.length > 0 ? Effect.fail(Unprocessable.of(first)) : Effect.void
}

const nameTaken = (constraint: string, what: string) => (e: SqlError) =>
  isUniqueViolation(e, constraint)
    ? Effect.fail(
      Unprocessable.of([{ field: "name", message: `has already been taken by another of this pipeline's ${what}.` }])
    )
    : Effect.die(e)

const toAction = (row: ActionRow) =>
  Schema.decodeUnknown(Action)({ ...row, suggested_variables: suggestedVariables(row.name, row.response_example) })
    .pipe(Effect.orDie)

/** Actions whose url, headers or payload reference `{{name}}`. */
const actionsUsing = (actions: ReadonlyArray<ActionRow>, name: string) =>
  actions.filter((a) => templatedStrings(a).some((s) => placeholders(s.text).includes(name)))

/** A variable's value checked against its type: system fields, and actions (with their response example). */
const variableIssues = (
  v: { readonly name: string; readonly type: VariableType; readonly value: string },
  actions: ReadonlyArray<ActionRow>
): Array<Issue> => {
  const format = valueFormatIssue(v.type, v.value)
  if (format !== undefined) return [{ field: "value", message: format }]
  const issues: Array<Issue> = []
  if (v.type === "from_action") {
    const [actionName, kind, ...path] = v.value.split(".")
    const action = actions.find((a) => a.name === actionName)
    if (!action) {
      issues.push({
        field: "value",
        message: `must name an action of this pipeline; there is no action "${actionName}"`
      })
    } else if (
      kind === "response" && action.response_example !== null && jsonPath(action.response_example, path) === undefined
    ) {
      issues.push({
        field: "value",
        message: `must be a path of the response example of "${actionName}" (${
          suggestedVariables(action.name, action.response_example).join(", ")
        })`
      })
    }
  }
  if (v.type === "from_ai") {
    const early = actionsUsing(actions, v.name).find((a) => beforeAiTriggers.includes(a.fixed_trigger))
    if (early) {
      issues.push({
        field: "type",
        message:
          `may not be from_ai: the ${early.fixed_trigger} action "${early.name}" uses it and fires before the AI runs`
      })
    }
  }
  return issues
}

/** Placeholders of an action: variables only, known ones, and no `from_ai` on triggers that fire before the AI. */
const templateIssues = (
  trigger: FixedTrigger,
  parts: { readonly url: string; readonly headers: Readonly<Record<string, string>>; readonly payload: unknown },
  variables: ReadonlyArray<Variable>
): Array<Issue> => {
  const byName = new Map(variables.map((v) => [v.name, v]))
  const issues: Array<Issue> = Object.keys(parts.headers)
    .filter((name) => !HEADER_NAME.test(name))
    .map((name) => ({
      field: `headers.${name}`,
      message: "must be a valid header name (letters, digits and -_.!#$%&'*+^`|~)"
    }))
  for (const { field, text } of templatedStrings(parts)) {
    for (const name of placeholders(text)) {
      const variable = byName.get(name)
      if (!VARIABLE_NAME.test(name)) {
        issues.push({
          field,
          message:
            `may not contain the placeholder {{${name}}}: runtime values reach actions only through variables ({{variable_name}})`
        })
      } else if (!variable) {
        issues.push({ field, message: `must reference variables of this pipeline; {{${name}}} is not one` })
      } else if (variable.type === "from_ai" && beforeAiTriggers.includes(trigger)) {
        issues.push({
          field,
          message: `may not use the from_ai variable {{${name}}}: ${trigger} actions fire before the AI runs`
        })
      }
    }
  }
  return issues
}

/** Variables and actions of the caller's pipelines, and the record of action runs (SPEC.md 4.5). */
export class Automation extends Effect.Service<Automation>()("@parley/server/Automation", {
  dependencies: [AutomationRepo.Default, OutboundTargets.Default],
  effect: Effect.gen(function*() {
    const repo = yield* AutomationRepo
    const targets = yield* OutboundTargets

    const ownPipeline = (id: PipelineId) =>
      Effect.flatMap(
        CurrentActor,
        (actor) => repo.pipelineWorkspace(actor.workspaceIds, id).pipe(someOrFail(() => new PipelineNotFound()))
      )
    const findVariable = (id: VariableId) =>
      Effect.flatMap(
        CurrentActor,
        (actor) => repo.findVariable(actor.workspaceIds, id).pipe(someOrFail(() => new VariableNotFound()))
      )
    const findAction = (id: ActionId) =>
      Effect.flatMap(
        CurrentActor,
        (actor) => repo.findAction(actor.workspaceIds, id).pipe(someOrFail(() => new ActionNotFound()))
      )

    const stageIssues = (pipelineId: number, stageId: number | null | undefined) =>
      stageId === undefined || stageId === null
        ? Effect.succeed<Array<Issue>>([])
        : Effect.map(
          repo.stageInPipeline(pipelineId, stageId),
          (ok) => ok ? [] : [{ field: "stage_id", message: "must be a stage of this pipeline" }]
        )

    const listVariables = Effect.fn("Automation.listVariables")(
      function*(pipelineId: PipelineId, q: string | undefined) {
        yield* ownPipeline(pipelineId)
        const pattern = q === undefined || q.trim() === "" ? null : `%${q.trim().replace(/[\\%_]/g, (c) => `\\${c}`)}%`
        return yield* repo.variables(pipelineId, pattern)
      }
    )

    const createVariable = Effect.fn("Automation.createVariable")(
      function*(pipelineId: PipelineId, input: CreateVariable) {
        const workspaceId = yield* ownPipeline(pipelineId)
        yield* failOn(variableIssues(input, yield* repo.actions(pipelineId)))
        const id = yield* repo.insertVariable(workspaceId, pipelineId, input).pipe(
          Effect.catchTag("SqlError", nameTaken("variables_pipeline_name_key", "variables"))
        )
        return yield* findVariable(id).pipe(Effect.orDie)
      }
    )

    const updateVariable = Effect.fn("Automation.updateVariable")(function*(id: VariableId, input: UpdateVariable) {
      const current = yield* findVariable(id)
      const merged = {
        ...current,
        ...Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined))
      } as Variable
      const actions = yield* repo.actions(current.pipeline_id)
      const issues = variableIssues(merged, actions)
      if (merged.name !== current.name) {
        const user = actionsUsing(actions, current.name)[0]
        if (user) {
          issues.push({ field: "name", message: `may not change: the action "${user.name}" uses {{${current.name}}}` })
        }
      }
      yield* failOn(issues)
      yield* repo.updateVariable(merged).pipe(
        Effect.catchTag("SqlError", nameTaken("variables_pipeline_name_key", "variables"))
      )
      return yield* findVariable(id).pipe(Effect.orDie)
    })

    const deleteVariable = Effect.fn("Automation.deleteVariable")(function*(id: VariableId) {
      const current = yield* findVariable(id)
      const user = actionsUsing(yield* repo.actions(current.pipeline_id), current.name)[0]
      if (user) {
        return yield* Unprocessable.of([{
          field: "id",
          message: `The variable is used by the action "${user.name}"; remove {{${current.name}}} there first.`
        }])
      }
      yield* repo.deleteVariable(id)
      return { id, deleted: true }
    })

    const listActions = Effect.fn("Automation.listActions")(
      function*(pipelineId: PipelineId, stageId: number | undefined) {
        yield* ownPipeline(pipelineId)
        return yield* Effect.forEach(yield* repo.actions(pipelineId, stageId), toAction)
      }
    )

    const createAction = Effect.fn("Automation.createAction")(function*(pipelineId: PipelineId, input: CreateAction) {
      const workspaceId = yield* ownPipeline(pipelineId)
      yield* failOn([
        ...(yield* stageIssues(pipelineId, input.stage_id)),
        ...templateIssues(input.fixed_trigger, {
          url: input.url,
          headers: input.headers ?? {},
          payload: input.payload ?? null
        }, yield* repo.variables(pipelineId)),
        ...targets.issues("url", input.url)
      ])
      const id = yield* repo.insertAction(workspaceId, pipelineId, input).pipe(
        Effect.catchTag("SqlError", nameTaken("actions_pipeline_name_key", "actions"))
      )
      return yield* findAction(id).pipe(Effect.orDie, Effect.flatMap(toAction))
    })

    const updateAction = Effect.fn("Automation.updateAction")(function*(id: ActionId, input: UpdateAction) {
      const current = yield* findAction(id)
      const next = {
        name: input.name ?? current.name,
        description: input.description === undefined ? current.description : input.description,
        method: input.method ?? current.method,
        url: input.url ?? current.url,
        headers: input.headers ?? current.headers,
        payload: input.payload === undefined ? current.payload : input.payload,
        instructions: input.instructions === undefined ? current.instructions : input.instructions,
        is_active: input.is_active ?? current.is_active,
        fixed_trigger: input.fixed_trigger ?? current.fixed_trigger,
        stage_id: input.stage_id === undefined ? current.stage_id : input.stage_id,
        max_fires: input.max_fires === undefined ? current.max_fires : input.max_fires,
        retries: input.retries ?? current.retries,
        order: input.order ?? current.order,
        response_example: input.response_example === undefined ? current.response_example : input.response_example
      }
      const issues: Array<Issue> = []
      // SPEC.md 3.5: stage_started and on_any_message are fixed after creation; on_user_message and custom swap
      if (
        next.fixed_trigger !== current.fixed_trigger &&
        (beforeAiTriggers.includes(current.fixed_trigger) || beforeAiTriggers.includes(next.fixed_trigger))
      ) {
        issues.push({
          field: "fixed_trigger",
          message:
            `may not change from ${current.fixed_trigger} to ${next.fixed_trigger}: stage_started and on_any_message are fixed after creation`
        })
      }
      issues.push(...(yield* stageIssues(current.pipeline_id, input.stage_id)))
      const variables = yield* repo.variables(current.pipeline_id)
      issues.push(...templateIssues(next.fixed_trigger, next, variables))
      // only a new url: one saved while OUTBOUND_ALLOW_PRIVATE was on stays editable
      issues.push(...targets.issues("url", input.url))
      if (next.name !== current.name) {
        const reader = variables.find((v) => v.type === "from_action" && v.value.split(".")[0] === current.name)
        if (reader) {
          issues.push({
            field: "name",
            message: `may not change: the variable ${reader.name} reads this action's response`
          })
        }
      }
      yield* failOn(issues)
      yield* repo.updateAction(id, next).pipe(
        Effect.catchTag("SqlError", nameTaken("actions_pipeline_name_key", "actions"))
      )
      return yield* findAction(id).pipe(Effect.orDie, Effect.flatMap(toAction))
    })

    const deleteAction = Effect.fn("Automation.deleteAction")(function*(id: ActionId) {
      yield* findAction(id)
      yield* repo.deleteAction(id)
      return { id, deleted: true }
    })

    const results = Effect.fn("Automation.results")(function*(pipelineId: PipelineId, query: ActionResultsQuery) {
      yield* ownPipeline(pipelineId)
      return yield* repo.results(pipelineId, query)
    })

    return {
      listVariables,
      createVariable,
      updateVariable,
      deleteVariable,
      listActions,
      createAction,
      updateAction,
      deleteAction,
      results
    }
  })
}) {}
