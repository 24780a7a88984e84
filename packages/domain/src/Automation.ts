/**
 * Variables and actions (SPEC.md 4.5 create_variable, create_action, list_action_results) and the pure
 * rules around them: `{{variable}}` placeholders, the `from_system` fields, value conversion by
 * `data_type`, and JSON paths into an earlier action's response.
 */
import { Schema } from "effect"
import { ActionId, PipelineId, StageId, VariableId } from "./Ids.js"
import { all, IntAtLeast, IntBetween, IntFromQuery, maxChars, NonEmptyString, Text, Timestamp } from "./Schemas.js"

export const VariableType = Schema.Literal("fixed", "from_system", "from_action", "from_ai")
export type VariableType = typeof VariableType.Type
export const VariableDataType = Schema.Literal("string", "integer", "boolean", "float")
export type VariableDataType = typeof VariableDataType.Type
export const ActionMethod = Schema.Literal("GET", "POST", "PUT", "PATCH", "DELETE")
export const FixedTrigger = Schema.Literal("stage_started", "on_any_message", "on_user_message", "custom")
export type FixedTrigger = typeof FixedTrigger.Type

/** Triggers that fire before the AI runs: no `from_ai` variable can be answered for them. */
export const beforeAiTriggers: ReadonlyArray<FixedTrigger> = ["stage_started", "on_any_message"]
/** Triggers the model decides on: offered to it as a tool. */
export const aiTriggers: ReadonlyArray<FixedTrigger> = ["on_user_message", "custom"]

/** SPEC.md 4.5 create_variable: the `from_system` fields by entity. */
export const SystemFields: Readonly<Record<string, ReadonlyArray<string>>> = {
  opportunity: [
    "id",
    "contact_id",
    "stage_id",
    "pipeline_id",
    "name",
    "notes",
    "status",
    "contact_name",
    "contact_priority",
    "contact_identifier",
    "contact_email",
    "contact_phone",
    "nature",
    "conversation_id"
  ],
  stage: ["id", "pipeline_id", "pipeline_name", "name", "order"],
  message: ["id", "message", "is_manual", "role", "call_type", "files", "status", "error"]
}

export const VARIABLE_NAME = /^[A-Za-z0-9_]+$/

const VariableName = Schema.String.pipe(
  maxChars(255, { message: () => "may not be greater than 255 characters" }),
  Schema.pattern(VARIABLE_NAME, { message: () => "must contain only letters, digits and underscores" })
)

export class Variable extends Schema.Class<Variable>("Variable")({
  id: VariableId,
  pipeline_id: PipelineId,
  name: Schema.String,
  value: Schema.String,
  type: VariableType,
  data_type: VariableDataType,
  is_required: Schema.Boolean,
  description: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

const variable = {
  name: "Letters, digits and _, unique in the pipeline; used as {{name}}",
  value: "By type: the literal, entity.field, action_name.response.path, or an extraction instruction",
  type: "fixed, from_system, from_action or from_ai",
  is_required: "Must resolve before an action using it fires",
  description: "What the value is",
  data_type: "The value's type once resolved"
}

export const CreateVariable = Schema.Struct({
  name: Schema.propertySignature(VariableName).annotations({ description: variable.name }),
  value: Schema.propertySignature(NonEmptyString(2000)).annotations({ description: variable.value }),
  type: Schema.propertySignature(VariableType).annotations({ description: variable.type }),
  is_required: Schema.propertySignature(Schema.Boolean).annotations({ description: variable.is_required }),
  description: Schema.optional(Schema.NullOr(Text(2000))).annotations({ description: variable.description }),
  data_type: Schema.optionalWith(VariableDataType, { default: () => "string" as const }).annotations({
    description: variable.data_type,
    default: "string"
  })
}).annotations({ ...all, identifier: "CreateVariable" })
export type CreateVariable = typeof CreateVariable.Type

export const UpdateVariable = Schema.Struct({
  name: Schema.optional(VariableName).annotations({ description: variable.name }),
  value: Schema.optional(NonEmptyString(2000)).annotations({ description: variable.value }),
  type: Schema.optional(VariableType).annotations({ description: variable.type }),
  is_required: Schema.optional(Schema.Boolean).annotations({ description: variable.is_required }),
  description: Schema.optional(Schema.NullOr(Text(2000))).annotations({ description: variable.description }),
  data_type: Schema.optional(VariableDataType).annotations({ description: variable.data_type })
}).annotations({ ...all, identifier: "UpdateVariable" })
export type UpdateVariable = typeof UpdateVariable.Type

export const VariablesQuery = Schema.Struct({
  q: Schema.optional(Schema.String).annotations({ description: "Case-insensitive part of the variable name" })
}).annotations(all)

const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })
/** Values on one line (a line break would split the header); names are checked by `headerNameIssues`. */
const Headers = Schema.Record({
  key: Schema.String,
  value: Schema.String.pipe(
    maxChars(8000, { message: () => "may not be greater than 8000 characters" }),
    Schema.pattern(/^[^\r\n]*$/, { message: () => "may not contain line breaks" })
  )
})

/** RFC 9110 field names (`X-Api-Key`). */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

export class Action extends Schema.Class<Action>("Action")({
  id: ActionId,
  pipeline_id: PipelineId,
  stage_id: Schema.NullOr(StageId),
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  method: ActionMethod,
  url: Schema.String,
  headers: Headers,
  payload: Schema.NullOr(JsonObject),
  instructions: Schema.NullOr(Schema.String),
  is_active: Schema.Boolean,
  fixed_trigger: FixedTrigger,
  max_fires: Schema.NullOr(Schema.Int),
  retries: Schema.Int,
  order: Schema.Int,
  response_example: Schema.NullOr(JsonObject),
  /** `from_action` variable values the response example offers (`<name>.response.<path>`, `<name>.status`) */
  suggested_variables: Schema.Array(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

const actionFields = {
  description: Schema.optional(Schema.NullOr(Text(5000))).annotations({ description: "What the action does" }),
  headers: Schema.optional(Headers).annotations({ description: "Request headers; values may hold {{variable_name}}" }),
  payload: Schema.optional(Schema.NullOr(JsonObject)).annotations({
    description: "JSON body; strings may hold {{variable_name}}"
  }),
  instructions: Schema.optional(Schema.NullOr(Text(5000))).annotations({
    description: "When the AI should fire it (on_user_message, custom)"
  }),
  max_fires: Schema.optional(Schema.NullOr(IntAtLeast(1))).annotations({
    description: "Most runs per opportunity; null: no limit"
  }),
  retries: Schema.optional(IntBetween(1, 10)).annotations({ description: "Attempts when the request fails" }),
  order: Schema.optional(IntAtLeast(1)).annotations({
    description: "Lower runs first among actions of the same trigger"
  }),
  response_example: Schema.optional(Schema.NullOr(JsonObject)).annotations({
    description: "A sample response; its fields become from_action variable values"
  })
}

const action = {
  name: "Unique in the pipeline",
  method: "HTTP method",
  url: "Address to call; may hold {{variable_name}}",
  is_active: "false keeps it a draft",
  fixed_trigger:
    "stage_started: an opportunity enters stage_id; on_any_message: every message; on_user_message: the AI decides per contact message; custom: the AI decides by instructions",
  stage_id: "Its stage; omit for a pipeline-level action"
}

export const CreateAction = Schema.Struct({
  name: Schema.propertySignature(NonEmptyString(255)).annotations({ description: action.name }),
  method: Schema.propertySignature(ActionMethod).annotations({ description: action.method }),
  url: Schema.propertySignature(NonEmptyString(2000)).annotations({ description: action.url }),
  is_active: Schema.propertySignature(Schema.Boolean).annotations({ description: action.is_active }),
  fixed_trigger: Schema.propertySignature(FixedTrigger).annotations({ description: action.fixed_trigger }),
  stage_id: Schema.optional(Schema.NullOr(StageId)).annotations({ description: action.stage_id }),
  ...actionFields
}).annotations({ ...all, identifier: "CreateAction" })
export type CreateAction = typeof CreateAction.Type

export const UpdateAction = Schema.Struct({
  name: Schema.optional(NonEmptyString(255)).annotations({ description: action.name }),
  method: Schema.optional(ActionMethod).annotations({ description: action.method }),
  url: Schema.optional(NonEmptyString(2000)).annotations({ description: action.url }),
  is_active: Schema.optional(Schema.Boolean).annotations({ description: action.is_active }),
  fixed_trigger: Schema.optional(FixedTrigger).annotations({
    description: "on_user_message and custom may switch; the others are fixed"
  }),
  stage_id: Schema.optional(Schema.NullOr(StageId)).annotations({ description: action.stage_id }),
  ...actionFields
}).annotations({ ...all, identifier: "UpdateAction" })
export type UpdateAction = typeof UpdateAction.Type

export const ActionsQuery = Schema.Struct({
  stage_id: Schema.optional(IntFromQuery.pipe(Schema.compose(IntAtLeast(1)))).annotations({
    description: "Only this stage's actions; without it, every action of the pipeline (pipeline-level and stage-level)"
  })
}).annotations(all)

export const ActionRunStatus = Schema.Literal("pending", "sending", "succeeded", "failed", "skipped")

export class ActionAttempt extends Schema.Class<ActionAttempt>("ActionAttempt")({
  attempt: Schema.Int,
  status_code: Schema.NullOr(Schema.Int),
  duration_ms: Schema.Int,
  error: Schema.NullOr(Schema.String),
  response_excerpt: Schema.NullOr(Schema.String),
  created_at: Timestamp
}) {}

/** One run of an action (SPEC.md 4.5 list_action_results): the request made, what came back, every attempt. */
export class ActionResult extends Schema.Class<ActionResult>("ActionResult")({
  id: Schema.Int,
  action_id: ActionId,
  action_name: Schema.String,
  pipeline_id: PipelineId,
  opportunity_id: Schema.NullOr(Schema.Int),
  conversation_id: Schema.NullOr(Schema.Int),
  stage_id: Schema.NullOr(Schema.Int),
  message_id: Schema.NullOr(Schema.String),
  trigger: FixedTrigger,
  status: ActionRunStatus,
  reason: Schema.NullOr(Schema.String),
  request: Schema.NullOr(Schema.Struct({
    method: Schema.String,
    url: Schema.String,
    headers: Headers,
    body: Schema.NullOr(Schema.String)
  })),
  response_status: Schema.NullOr(Schema.Int),
  response_excerpt: Schema.NullOr(Schema.String),
  attempts: Schema.Array(ActionAttempt),
  created_at: Timestamp,
  finished_at: Schema.NullOr(Timestamp)
}) {}

export const ActionResultsQuery = Schema.Struct({
  opportunity_id: Schema.optional(IntFromQuery.pipe(Schema.compose(IntAtLeast(1)))),
  conversation_id: Schema.optional(IntFromQuery.pipe(Schema.compose(IntAtLeast(1)))),
  action_id: Schema.optional(IntFromQuery.pipe(Schema.compose(IntAtLeast(1)))),
  limit: Schema.optionalWith(IntFromQuery.pipe(Schema.compose(IntBetween(1, 100))), { default: () => 50 }),
  offset: Schema.optionalWith(IntFromQuery.pipe(Schema.compose(IntAtLeast(0))), { default: () => 0 })
}).annotations(all)
export type ActionResultsQuery = typeof ActionResultsQuery.Type

// ---------------------------------------------------------------------------------------------------
// Pure rules

/** Every `{{...}}` placeholder in a text, trimmed (`{{ name }}` is `name`). */
export const placeholders = (text: string): Array<string> =>
  [...text.matchAll(/\{\{\s*([^{}]*?)\s*\}\}/g)].map((m) => m[1]!)

/** Every string of a request part with where it sits (`url`, `headers.X-Key`, `payload.customer.id`). */
export const templatedStrings = (parts: {
  readonly url?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly payload?: unknown
}): Array<{ readonly field: string; readonly text: string }> => {
  const out: Array<{ field: string; text: string }> = []
  if (parts.url !== undefined) out.push({ field: "url", text: parts.url })
  for (const [k, v] of Object.entries(parts.headers ?? {})) out.push({ field: `headers.${k}`, text: v })
  const walk = (value: unknown, path: string) => {
    if (typeof value === "string") out.push({ field: path, text: value })
    else if (Array.isArray(value)) value.forEach((v, i) => walk(v, `${path}.${i}`))
    else if (typeof value === "object" && value !== null) {
      for (const [k, v] of Object.entries(value)) walk(v, `${path}.${k}`)
    }
  }
  if (parts.payload !== undefined && parts.payload !== null) walk(parts.payload, "payload")
  return out
}

/** Why a `from_system` or `from_action` value is malformed, or undefined when it is fine. */
export const valueFormatIssue = (type: VariableType, value: string): string | undefined => {
  if (type === "from_system") {
    const [entity, field, ...rest] = value.split(".")
    const fields = entity === undefined ? undefined : SystemFields[entity]
    if (fields === undefined || field === undefined || rest.length > 0) {
      return "must be entity.field with entity opportunity, stage or message"
    }
    if (!fields.includes(field)) return `must name a field of ${entity}: ${fields.join(", ")}`
  }
  if (type === "from_action") {
    const parts = value.split(".")
    const ok = parts.length >= 2 && parts.every((p) => p !== "") &&
      ((parts[1] === "status" && parts.length === 2) || (parts[1] === "response" && parts.length >= 3))
    if (!ok) return "must be action_name.response.path.to.field or action_name.status"
  }
  return undefined
}

/** `{ data: { id: 7 } }` with path `data.id` is 7; array indices are numbers (`items.0.id`). */
export const jsonPath = (value: unknown, path: ReadonlyArray<string>): unknown => {
  let current = value
  for (const key of path) {
    if (Array.isArray(current) && /^\d+$/.test(key)) current = current[Number(key)]
    else if (typeof current === "object" && current !== null && key in current) {
      current = (current as Record<string, unknown>)[key]
    } else return undefined
  }
  return current
}

/** Every leaf path of a response example, as `from_action` values for the action named `name`. */
export const suggestedVariables = (name: string, example: unknown): Array<string> => {
  const out = [`${name}.status`]
  const walk = (value: unknown, path: Array<string>) => {
    if (typeof value === "object" && value !== null) {
      const entries = Array.isArray(value)
        ? value.slice(0, 1).map((v, i) => [String(i), v] as const)
        : Object.entries(value)
      for (const [k, v] of entries) walk(v, [...path, k])
    } else if (path.length > 0) out.push(`${name}.response.${path.join(".")}`)
  }
  if (example !== null && example !== undefined) walk(example, [])
  return out
}

/** A resolved value as its `data_type`; undefined when it cannot be read as that type. */
export const convert = (raw: unknown, dataType: VariableDataType): string | number | boolean | undefined => {
  if (raw === undefined || raw === null) return undefined
  const text = typeof raw === "string" ? raw.trim() : typeof raw === "object" ? JSON.stringify(raw) : String(raw)
  switch (dataType) {
    case "string":
      return typeof raw === "string" ? raw : text
    case "integer": {
      const n = Number(text)
      return text !== "" && Number.isFinite(n) ? Math.trunc(n) : undefined
    }
    case "float": {
      const n = Number(text)
      return text !== "" && Number.isFinite(n) ? n : undefined
    }
    case "boolean": {
      const t = text.toLowerCase()
      if (["true", "1", "yes", "y", "on"].includes(t)) return true
      if (["false", "0", "no", "n", "off"].includes(t)) return false
      return undefined
    }
  }
}

type Resolved = Readonly<Record<string, string | number | boolean | null>>

/** Replaces placeholders in a text; `encode` for URLs. */
export const renderText = (text: string, values: Resolved, encode = false): string =>
  text.replace(/\{\{\s*([^{}]*?)\s*\}\}/g, (_, name: string) => {
    const v = values[name]
    const s = v === undefined || v === null ? "" : String(v)
    return encode ? encodeURIComponent(s) : s
  })

/** A payload with its placeholders filled; a string that is exactly one placeholder takes the value's type. */
export const renderJson = (value: unknown, values: Resolved): unknown => {
  if (typeof value === "string") {
    const whole = /^\{\{\s*([A-Za-z0-9_]+)\s*\}\}$/.exec(value)
    if (whole) return values[whole[1]!] ?? null
    return renderText(value, values)
  }
  if (Array.isArray(value)) return value.map((v) => renderJson(v, values))
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderJson(v, values)]))
  }
  return value
}
