/**
 * The points of an upsert checked against the table's columns (SPEC.md 4.3): a `default_id` each, known
 * columns only, values of the column's type, no `default_id` twice, and `is_unique` values unique within
 * the request (the stored rows are checked against the database). Every problem is named by its field.
 */
import type { ColumnDataType, KnowledgeColumn } from "@parley/domain"
import { charCount } from "@parley/domain/Schemas"

export interface Problem {
  readonly field: string
  readonly message: string
}

export interface PointInput {
  readonly defaultId: string
  readonly data: Record<string, unknown>
}

/** A point's text: `column: value` lines of the columns `only` keeps (all by default), empty values left out. */
export const render = (
  columns: ReadonlyArray<KnowledgeColumn>,
  data: Record<string, unknown>,
  only?: (c: KnowledgeColumn) => boolean
) =>
  columns
    .filter((c) =>
      (only ? only(c) : true) && data[c.name] !== undefined && data[c.name] !== null && data[c.name] !== ""
    )
    .map((c) => `${c.name}: ${String(data[c.name])}`)
    .join("\n")

const typeError = (type: ColumnDataType, value: unknown): string | null => {
  if (value === null) return null
  switch (type) {
    case "string":
      return typeof value === "string"
        ? (charCount(value) > 20_000 ? "may not be greater than 20000 characters" : null)
        : "must be a string"
    case "number":
      return typeof value === "number" && Number.isFinite(value) ? null : "must be a number"
    case "boolean":
      return typeof value === "boolean" ? null : "must be true or false"
    case "date":
      return typeof value === "string" && /^\d{4}-\d{2}-\d{2}/.test(value) && !Number.isNaN(Date.parse(value))
        ? null
        : "must be an ISO 8601 date"
  }
}

const defaultIdError = (value: unknown): string | null => {
  if (value === undefined || value === null || value === "") return "is required"
  if (!(typeof value === "string" || (typeof value === "number" && Number.isInteger(value)))) {
    return "must be a string or an integer"
  }
  // stored as text: past 2^53 a JSON number is no longer the integer the client wrote
  if (typeof value === "number" && !Number.isSafeInteger(value)) {
    return `must be an integer between -${Number.MAX_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER}`
  }
  return charCount(String(value)) > 255 ? "may not be greater than 255 characters" : null
}

/** The points as written, with the problems of the request (none: it may be written). */
export const readPoints = (columns: ReadonlyArray<KnowledgeColumn>, input: ReadonlyArray<Record<string, unknown>>) => {
  const byName = new Map(columns.map((c) => [c.name, c]))
  const problems: Array<Problem> = []
  const points = input.map((p, i): PointInput => {
    const idError = defaultIdError(p.default_id)
    if (idError) problems.push({ field: `points.${i}.default_id`, message: idError })
    const data: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(p)) {
      if (key === "default_id") continue
      const column = byName.get(key)
      if (!column) {
        problems.push({ field: `points.${i}.${key}`, message: "is not a column of this table" })
        continue
      }
      const error = typeError(column.data_type, value)
      if (error) problems.push({ field: `points.${i}.${key}`, message: error })
      else data[key] = value
    }
    return { defaultId: String(p.default_id), data }
  })
  // a default_id twice in one request: the later one would silently win
  const firstIndex = new Map<string, number>()
  points.forEach((p, i) => {
    if (firstIndex.has(p.defaultId)) {
      problems.push({ field: `points.${i}.default_id`, message: "appears more than once in points" })
    } else firstIndex.set(p.defaultId, i)
  })
  return { points, problems }
}

/**
 * A unique column's values within the request: a value repeated is a problem; the others are returned
 * (as JSON, the key of their first row) to be checked against the table.
 */
export const uniqueWithin = (column: KnowledgeColumn, rows: ReadonlyArray<PointInput>, problems: Array<Problem>) => {
  const seen = new Map<string, number>()
  for (const [i, r] of rows.entries()) {
    const value = r.data[column.name]
    if (value === undefined || value === null) continue
    const k = JSON.stringify(value)
    if (seen.has(k)) {
      problems.push({ field: `points.${i}.${column.name}`, message: `has the same value as points.${seen.get(k)}` })
    } else seen.set(k, i)
  }
  return [...seen.keys()].map((k) => JSON.parse(k) as unknown)
}
