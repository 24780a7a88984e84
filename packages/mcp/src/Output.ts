/**
 * The tools' output schemas: the top level of each result, with the type of every field, so a client can
 * check `structuredContent` and a model knows where the ids and the next page are. Every field listed is
 * always present (null when it has no value). Nested records are `object`s: their fields are the REST API's
 * (docs/api.md), and listing them in every tool would cost more of a model's context than it tells.
 */
import type { Schema } from "effect"
import { fieldsOf, type JsonObjectSchema } from "./JsonSchema.js"

type Json = Record<string, unknown>

export const object: Json = { type: "object" }
export const objects: Json = { type: "array" }
export const integer: Json = { type: "integer" }
export const string: Json = { type: "string" }
export const boolean: Json = { type: "boolean" }
export const number: Json = { type: "number" }
/** Lists of ids or words are left open too: the field's name says what they hold. */
export const strings: Json = objects
export const integers: Json = objects
export const nullable = (schema: Json): Json => ({ anyOf: [schema, { type: "null" }] })
export const describe = (schema: Json, description: string): Json => ({ ...schema, description })

export const result = (properties: Record<string, Json>): JsonObjectSchema => ({ type: "object", properties })

/**
 * What every paged list answers besides its rows: whether there is more, and the arguments that fetch it
 * (null on the last page). Said once in the server's instructions rather than in every tool.
 */
export const paged = { has_more: boolean, next_page: nullable(object) }

/** What to call next, in words with the ids filled in (the server's instructions say so once). */
export const nextSteps = strings

/** The arguments of the next page: the ones given, with the page moved on. */
export const nextPage = (args: Record<string, unknown>, more: boolean, next: Record<string, unknown>) =>
  more ? Object.fromEntries(Object.entries({ ...args, ...next }).filter(([, v]) => v !== undefined)) : null

/** A result that is a domain record as it is: its fields and their types. */
export const resultOf = (schema: Schema.Schema.Any, more: Record<string, Json> = {}): JsonObjectSchema =>
  result({ ...fieldsOf(schema), ...more })

/** One page of rows a backend returns whole: the rows under `key`, and the arguments of the next page. */
export const paginate = <A>(
  key: string,
  rows: ReadonlyArray<A>,
  args: { readonly page: number; readonly per_page: number }
) => {
  const more = args.page * args.per_page < rows.length
  return {
    [key]: rows.slice((args.page - 1) * args.per_page, args.page * args.per_page),
    has_more: more,
    next_page: nextPage(args, more, { page: args.page + 1 })
  }
}
