/**
 * A tool's input schema as JSON Schema a model and any MCP client read alike (issue 23): generated from the
 * tool's Effect Schema, then made portable. Definitions are inlined (no `$ref`, `$defs` or single-member
 * `allOf`), a property's description sits on the property (not inside an `anyOf` branch), Effect's generated
 * titles and descriptions (`between(1, 100)`, "a string that will be trimmed") are dropped, a value of any
 * JSON type is declared as what it is, and bounds that only reflect storage (2^53 - 1 for ids, 2^31 - 1 for
 * counts) are left out: they are limits of the database, not of what a caller means to send.
 */
import { JSONSchema, Schema } from "effect"
import * as AST from "effect/SchemaAST"

export type Json = { [key: string]: unknown }

/** What every tool's input and output schema is at the top. */
export interface JsonObjectSchema {
  readonly type: "object"
  readonly properties?: Record<string, unknown>
  readonly required?: ReadonlyArray<string>
  readonly [key: string]: unknown
}

/**
 * Effect's built-in descriptions all read "a string ...", "an integer", "a number between ..."; ours are
 * sentences that start with a capital letter (or a quoted value), so the two never collide.
 */
export const isGeneratedDescription = (text: string) => /^an? [a-zA-Z0-9-]/.test(text)

const STORAGE_BOUNDS = new Set([Number.MAX_SAFE_INTEGER, 2_147_483_647])

/** Free text this long or longer is bounded by storage, not by what it means: the limit is left to validation. */
const TEXT_STORAGE_LENGTH = 2000

/** Arguments nested this deep (a case's message's checks) are published as objects with a description. */
const MAX_DEPTH = 3

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

/** A JSON Schema that says nothing (Effect's `unknown` and `any` are `{$id, title}`). */
const isUnconstrained = (schema: Json) => Object.keys(schema).length === 0

const humanDescription = (schema: Json): string | undefined =>
  typeof schema.description === "string" && !isGeneratedDescription(schema.description) ? schema.description : undefined

const clean = (node: unknown, defs: Record<string, unknown>): unknown => {
  if (Array.isArray(node)) return node.map((n) => clean(n, defs))
  if (!isObject(node)) return node
  let schema: Json = { ...node }
  // inline a definition, the reference's own keys winning
  if (typeof schema.$ref === "string") {
    const name = schema.$ref.replace("#/$defs/", "")
    const { $ref: _, ...rest } = schema
    schema = { ...(defs[name] as Json), ...rest }
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length === 1) {
    const { allOf, ...rest } = schema
    schema = { ...(allOf[0] as Json), ...rest }
    if (typeof schema.$ref === "string") return clean(schema, defs)
  }
  // an id (1 to 2^53 - 1): its type says enough, ids come from other tools' results
  const isId = schema.minimum === 1 && schema.maximum === Number.MAX_SAFE_INTEGER
  const out: Json = {}
  for (const [key, value] of Object.entries(schema)) {
    if (isId && key === "minimum") continue
    if (key === "title" || key === "$id" || key === "$schema" || key === "$defs") continue
    if (key === "description" && (typeof value !== "string" || isGeneratedDescription(value))) continue
    if ((key === "maximum" || key === "minimum") && typeof value === "number" && STORAGE_BOUNDS.has(Math.abs(value))) {
      continue
    }
    if (key === "properties" && isObject(value)) {
      out.properties = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, property(clean(v, defs) as Json)]))
      continue
    }
    out[key] = clean(value, defs)
  }
  // a record of any values: a free-form object
  if (isObject(out.additionalProperties) && isUnconstrained(out.additionalProperties)) delete out.additionalProperties
  if (
    out.type === "object" && isObject(out.properties) && Object.keys(out.properties).length === 0 &&
    out.additionalProperties === undefined
  ) {
    delete out.properties
  }
  if (Array.isArray(out.required) && out.required.length === 0) delete out.required
  return out
}

/** A property's description and default belong to the property, not to the branch of its `anyOf`. */
const property = (schema: Json): Json => {
  if (!Array.isArray(schema.anyOf)) return schema
  const branches = schema.anyOf as Array<Json>
  const description = humanDescription(schema) ?? branches.map(humanDescription).find((d) => d !== undefined)
  const def = "default" in schema ? schema.default : branches.find((b) => "default" in b)?.default
  const anyOf = branches.map(({ description: _d, default: _f, ...rest }) => rest)
  const { description: _, default: __, anyOf: ___, ...rest } = schema
  return {
    ...(description === undefined ? {} : { description }),
    ...rest,
    anyOf,
    ...(def === undefined ? {} : { default: def })
  }
}

const typeOnly = (schema: Json): Json => {
  if (Array.isArray(schema.anyOf)) return { anyOf: (schema.anyOf as Array<Json>).map(typeOnly) }
  if (schema.type === undefined && Array.isArray(schema.enum)) return { type: typeof schema.enum[0] }
  return schema.type === undefined ? {} : { type: schema.type }
}

/** The top level of a result's JSON Schema: each field and its type, nested objects and arrays left open. */
export const fieldsOf = (schema: Schema.Schema.Any): Record<string, Json> => {
  const json = made(schema)
  if (!isObject(json.properties)) throw new Error(`not an object schema: ${JSON.stringify(json).slice(0, 80)}`)
  return Object.fromEntries(Object.entries(json.properties).map(([k, v]) => [k, typeOnly(v as Json)]))
}

const made = (schema: Schema.Schema.Any): Json => {
  const generated = JSONSchema.make(schema) as unknown as Json
  return clean(generated, isObject(generated.$defs) ? generated.$defs : {}) as Json
}

/**
 * Descriptions of the decoded side where the encoded side has none. A struct with a field that has a default
 * (`optionalWith`) is a transformation, whose encoded side keeps the other fields' types but not their
 * annotations, so JSON Schema, written from the encoded side, would lose their descriptions.
 */
const withDescriptionsOf = (encoded: Json, decoded: Json): Json => {
  const out: Json = { ...encoded }
  if (humanDescription(out) === undefined) {
    const description = humanDescription(decoded)
    if (description !== undefined) out.description = description
  }
  const properties = decoded.properties
  if (isObject(encoded.properties) && isObject(properties)) {
    out.properties = Object.fromEntries(
      Object.entries(encoded.properties).map((
        [k, v]
      ) => [k, isObject(properties[k]) && isObject(v) ? withDescriptionsOf(v, properties[k]) : v])
    )
  }
  if (isObject(encoded.items) && isObject(decoded.items)) out.items = withDescriptionsOf(encoded.items, decoded.items)
  const theirs = decoded.anyOf
  if (Array.isArray(encoded.anyOf) && Array.isArray(theirs) && encoded.anyOf.length === theirs.length) {
    out.anyOf = encoded.anyOf.map((b, i) => (isObject(b) && isObject(theirs[i]) ? withDescriptionsOf(b, theirs[i]) : b))
  }
  return out
}

const isNull = (schema: unknown) => isObject(schema) && schema.type === "null" && Object.keys(schema).length === 1

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

export interface LeanOptions {
  /**
   * Publish `null` where the argument takes it. Off for creates, where null and leaving the argument out are the same.
   */
  readonly nullable: boolean
}

/**
 * What a model needs of a schema and nothing it pays for without use (issue 23: `tools/list` is read into the
 * context of every conversation). `additionalProperties: false` is left out (unknown arguments are refused
 * all the same, the refusal naming them); free text's storage limit is left to validation; a value that is
 * one item or a list of them is published as the list; `null` only where it means something; objects nested
 * more than `MAX_DEPTH` arguments deep are left open.
 */
const lean = (node: unknown, options: LeanOptions, depth = 0): unknown => {
  if (Array.isArray(node)) return node.map((n) => lean(n, options, depth))
  if (!isObject(node)) return node
  let schema: Json = node
  // an object nested deeper is left open, as output schemas are: its description says what it takes
  if (depth >= MAX_DEPTH && isObject(schema.properties)) {
    const { properties: _, required: __, ...rest } = schema
    schema = rest
  }
  if (Array.isArray(schema.anyOf) && schema.anyOf.length === 2) {
    const [one, two] = schema.anyOf as [Json, Json]
    const { anyOf: _, ...rest } = schema
    // one item or a list of them: the list
    if (two.type === "array" && sameJson(two.items, one)) schema = { ...two, ...rest }
    else if (!options.nullable && isNull(two)) schema = { ...one, ...rest }
  }
  const out: Json = {}
  for (const [key, value] of Object.entries(schema)) {
    if (key === "additionalProperties" && value === false) continue
    if (key === "properties" && isObject(value) && Object.keys(value).length === 0) continue
    if (key === "maxLength" && typeof value === "number" && value >= TEXT_STORAGE_LENGTH) continue
    out[key] = key === "properties" && isObject(value)
      ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, lean(v, options, depth + 1)]))
      : lean(value, options, depth)
  }
  return out
}

/** The portable JSON Schema of a tool's arguments: always a top-level object. */
export const inputSchemaOf = (
  schema: Schema.Schema.Any,
  options: LeanOptions = { nullable: true }
): JsonObjectSchema => {
  // JSON Schema renders an empty struct as "any object or array"; a tool without parameters takes `{}`
  const ast = schema.ast
  if (AST.isTypeLiteral(ast) && ast.propertySignatures.length === 0 && ast.indexSignatures.length === 0) {
    return { type: "object", properties: {}, additionalProperties: false }
  }
  const { description: _, ...json } = withDescriptionsOf(made(schema), made(Schema.typeSchema(schema)))
  if (json.type !== "object") {
    throw new Error(`an MCP tool's input schema must be an object, got ${JSON.stringify(json).slice(0, 80)}`)
  }
  return lean(json, options) as JsonObjectSchema
}
