/**
 * What the schemas of the OpenAPI document say, for the API reference: `$ref`s resolved, wrappers taken
 * off, each node's constraints (as HTML) gathered.
 */
import { code, escapeHtml, plural } from "./ApiReferenceMarkup.js"

export type Json = { readonly [key: string]: unknown }
export const isJson = (x: unknown): x is Json => typeof x === "object" && x !== null && !Array.isArray(x)

/** What a schema says, `$ref`s resolved, wrappers (`allOf` of one, `anyOf` with null) taken off. */
export interface Shape {
  readonly type: string
  /** the component it is (an object schema), or whose array it is */
  readonly ref: string | undefined
  readonly nullable: boolean
  readonly description: string | undefined
  /** Effect's generated description ("a string at most 64 character(s) long"), shown when no keyword says as much */
  readonly generated: string | undefined
  /** HTML */
  readonly constraints: ReadonlyArray<string>
  readonly values: ReadonlyArray<unknown> | undefined
  readonly fields: ReadonlyArray<Field>
  /** how a nested field's name continues its parent's: `.` for an object, `[].` for an array of objects */
  readonly joint: string
  readonly circular: boolean
}

export interface Field {
  readonly name: string
  readonly required: boolean
  readonly shape: Shape
}

const anyShape: Shape = {
  type: "any",
  ref: undefined,
  nullable: false,
  description: undefined,
  generated: undefined,
  constraints: [],
  values: undefined,
  fields: [],
  joint: ".",
  circular: false
}

export const isGenerated = (description: string) => /^an? /.test(description)
// restating the type says nothing
const uninformative = new Set(["an integer", "a finite number"])

const range = (min: unknown, max: unknown, unit: string) => {
  const lo = typeof min === "number" ? min : undefined
  // the largest safe integer is Effect's bound for an id, not a limit anyone meets
  const hi = typeof max === "number" && max < Number.MAX_SAFE_INTEGER ? max : undefined
  if (lo !== undefined && hi !== undefined) return lo === hi ? plural(lo, unit) : `${lo} to ${plural(hi, unit)}`
  if (lo !== undefined) return `at least ${plural(lo, unit)}`
  if (hi !== undefined) return `at most ${plural(hi, unit)}`
  return undefined
}

const numberRange = (node: Json) => {
  const parts: Array<string> = []
  const min = typeof node["minimum"] === "number" ? node["minimum"] : undefined
  const max = typeof node["maximum"] === "number" && node["maximum"] < Number.MAX_SAFE_INTEGER
    ? node["maximum"]
    : undefined
  if (min !== undefined && max !== undefined) parts.push(`${min} to ${max}`)
  else if (min !== undefined) parts.push(`at least ${min}`)
  else if (max !== undefined) parts.push(`at most ${max}`)
  if (typeof node["exclusiveMinimum"] === "number") parts.push(`greater than ${node["exclusiveMinimum"]}`)
  if (typeof node["exclusiveMaximum"] === "number") parts.push(`less than ${node["exclusiveMaximum"]}`)
  return parts
}

const example = (value: unknown) => {
  const text = typeof value === "string" ? value : JSON.stringify(value)
  return text.length > 80 ? `${text.slice(0, 77)}...` : text
}

/** The keywords a schema node states itself, whatever it wraps. */
const constraintsOf = (node: Json): Array<string> => {
  const out = numberRange(node).map(escapeHtml)
  const chars = range(node["minLength"], node["maxLength"], "character")
  if (chars !== undefined) out.push(chars)
  const items = range(node["minItems"], node["maxItems"], "item")
  if (items !== undefined) out.push(items)
  if (typeof node["pattern"] === "string") out.push(`matches ${code(node["pattern"])}`)
  if (typeof node["format"] === "string") out.push(`format ${code(node["format"])}`)
  if (Array.isArray(node["examples"]) && node["examples"].length > 0) {
    out.push(`example ${code(example(node["examples"][0]))}`)
  }
  return out
}

export const componentName = (ref: string) => ref.replace(/^#\/components\/schemas\//, "")

export class Shapes {
  // a component reads the same wherever it is used (a cycle is cut where it was first met)
  private readonly components = new Map<string, Shape>()
  constructor(private readonly schemas: Json) {}

  of(node: unknown, seen: ReadonlySet<string> = new Set()): Shape {
    if (!isJson(node)) return anyShape
    const base = this.base(node, seen)
    const own = typeof node["description"] === "string" ? node["description"] : undefined
    const description = own !== undefined && !isGenerated(own) ? own : base.description
    const generated = own !== undefined && isGenerated(own) && !uninformative.has(own) ? own : base.generated
    const constraints = [...new Set([...constraintsOf(node), ...base.constraints])]
    return { ...base, description, generated, constraints }
  }

  private base(node: Json, seen: ReadonlySet<string>): Shape {
    const ref = node["$ref"]
    if (typeof ref === "string") {
      const name = componentName(ref)
      if (seen.has(name)) return { ...anyShape, type: name, ref: name, circular: true }
      const target = this.components.get(name) ?? this.of(this.schemas[name], new Set([...seen, name]))
      this.components.set(name, target)
      // a named object reads by its name; a named primitive (Int) by its type
      return target.fields.length > 0 ? { ...target, type: name, ref: name } : target
    }
    const allOf = node["allOf"]
    if (Array.isArray(allOf) && allOf.length === 1) return this.of(allOf[0], seen)
    const anyOf = Array.isArray(node["anyOf"])
      ? node["anyOf"]
      : Array.isArray(node["oneOf"])
      ? node["oneOf"]
      : undefined
    if (anyOf !== undefined) {
      const members = anyOf.filter((m) => !(isJson(m) && m["type"] === "null"))
      const nullable = members.length < anyOf.length
      if (members.length === 1) return { ...this.of(members[0], seen), nullable }
      const shapes = members.map((m) => this.of(m, seen))
      if (shapes.length > 0 && shapes.every((s) => s.values !== undefined)) {
        return { ...shapes[0]!, values: shapes.flatMap((s) => s.values ?? []), nullable }
      }
      const withFields = shapes.filter((s) => s.fields.length > 0)
      return {
        ...anyShape,
        type: [...new Set(shapes.map((s) => s.type))].join(" or "),
        nullable,
        fields: withFields.length === 1 ? withFields[0]!.fields : [],
        joint: withFields.length === 1 ? withFields[0]!.joint : "."
      }
    }
    const values = Array.isArray(node["enum"]) ? node["enum"] : "const" in node ? [node["const"]] : undefined
    const types = (Array.isArray(node["type"]) ? node["type"] : [node["type"]]).filter((t): t is string =>
      typeof t === "string"
    )
    const nullable = types.includes("null") && types.length > 1
    const type = types.find((t) => t !== "null") ?? (types.length > 0 ? "null" : undefined)
    if (values !== undefined) {
      return { ...anyShape, type: type ?? (typeof values[0] === "string" ? "string" : "any"), values, nullable }
    }
    if (type === "array") {
      const items = this.of(node["items"], seen)
      return {
        ...anyShape,
        type: `array of ${items.type}${items.nullable ? " or null" : ""}`,
        ref: items.ref,
        // the items' own limits, said of each
        constraints: items.constraints.map((c) => `each: ${c}`),
        generated: items.generated === undefined ? undefined : `each: ${items.generated}`,
        values: items.values,
        fields: items.fields,
        joint: "[].",
        circular: items.circular,
        nullable
      }
    }
    if (type === "object" || isJson(node["properties"])) {
      const properties = isJson(node["properties"]) ? node["properties"] : {}
      const required = new Set(Array.isArray(node["required"]) ? node["required"] : [])
      const fields = Object.entries(properties).map(([name, schema]) => ({
        name,
        required: required.has(name),
        shape: this.of(schema, seen)
      }))
      const extra = node["additionalProperties"]
      if (fields.length === 0 && isJson(extra)) {
        const value = this.of(extra, seen)
        return { ...anyShape, type: `object (any keys, ${value.type} values)`, nullable }
      }
      return {
        ...anyShape,
        type: fields.length === 0 && extra === false ? "object (empty)" : "object",
        fields,
        nullable
      }
    }
    return { ...anyShape, type: type ?? "any", nullable }
  }
}
