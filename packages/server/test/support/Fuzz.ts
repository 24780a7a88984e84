/**
 * Bad input generated from the OpenAPI document and the MCP tool schemas (fast-check): each case takes a
 * known-good request and spoils one thing of it (a field, a path or query parameter, the whole body, the
 * credentials), so a refusal can come from anywhere between the decoder and the database.
 */
import fc from "fast-check"

/** A fragment of JSON text that `JSON.stringify` cannot write (`1e400`, very deep nesting). */
export class RawJson {
  constructor(readonly text: string) {}
}

/** JSON text of a value that may hold `RawJson` fragments. */
export const toJsonText = (value: unknown): string => {
  const raws: Array<string> = []
  const text =
    JSON.stringify(value, (_key, v: unknown) => v instanceof RawJson ? `\u0001RAW${raws.push(v.text) - 1}\u0001` : v) ??
      "null"
  return text.replace(/"\\u0001RAW(\d+)\\u0001"/g, (_, i: string) => raws[Number(i)]!)
}

const deepArray = (n: number) => new RawJson("[".repeat(n) + "]".repeat(n))
const deepObject = (n: number) => new RawJson("{\"a\":".repeat(n) + "1" + "}".repeat(n))
const MB = 1024 * 1024

/** Values a hostile client puts in a JSON field. */
export const badValues: ReadonlyArray<unknown> = [
  null,
  true,
  0,
  -1,
  1.5,
  2147483648,
  -2147483649,
  // eslint-disable-next-line no-loss-of-precision -- a literal past 2^53 on purpose: an id past every column's range
  9007199254740993,
  1e308,
  -1e308,
  new RawJson("1e400"),
  new RawJson("-0"),
  "",
  " ",
  "\u0000",
  "nul\u0000x",
  "\ud800",
  "x\udfffy",
  "\u0001\u001f\u007f\u200b\ufeff",
  "😀".repeat(300),
  "x".repeat(70_000),
  "y".repeat(MB),
  "1e0",
  "0x1",
  " 1",
  "NaN",
  "Infinity",
  "<script>alert(1)</script>",
  "'; drop table users; --",
  "../../etc/passwd",
  "http://127.0.0.1:1/x",
  [],
  [null],
  [1, "a", null, {}],
  Array.from({ length: 5000 }, (_, i) => i),
  {},
  { "__proto__": { polluted: true } },
  { "nul\u0000key": 1 },
  { [("k").repeat(10_000)]: 1 },
  deepArray(5000),
  deepObject(5000),
  deepArray(64)
]

/** Values of a query-string parameter (already URL-encoded where it matters). */
export const badQueryValues: ReadonlyArray<string> = [
  "",
  "%00",
  "a%00b",
  "%ED%A0%80",
  "%E0%A4%A",
  "abc",
  "-1",
  "0",
  "1e0",
  "0x1",
  "%201",
  "1.5",
  "99999999999999999999",
  "2147483648",
  "true",
  "null",
  "x".repeat(10_000),
  "%F0%9F%98%80",
  "[]",
  "2026-13-45",
  "2026-02-30T25:61:61Z"
]

/** Path ids that are not `^[1-9][0-9]*$` or that name nothing. */
export const badPathValues: ReadonlyArray<string> = [
  "%201",
  "1e0",
  "0x1",
  "1.0",
  "+1",
  "01",
  "0",
  "-1",
  "abc",
  "%00",
  "1%00",
  "99999999999999999999",
  "9007199254740993",
  "2147483648",
  "%E0%A4%A",
  "%2e%2e",
  "x".repeat(2000),
  "%F0%9F%98%80"
]

/** Whole bodies: malformed, of the wrong kind, or under the wrong content type. */
export const badBodies: ReadonlyArray<{ readonly contentType: string | undefined; readonly text: string }> = [
  { contentType: "application/json", text: "{" },
  { contentType: "application/json", text: "" },
  { contentType: "application/json", text: "null" },
  { contentType: "application/json", text: "[]" },
  { contentType: "application/json", text: "\"text\"" },
  { contentType: "application/json", text: "12345678901234567890" },
  { contentType: "application/json", text: "{\"a\":1,\"a\":2}" },
  { contentType: "application/json", text: "[".repeat(100_000) },
  { contentType: "application/json", text: deepArray(5000).text },
  { contentType: "application/json", text: "\u0000" },
  { contentType: "application/json", text: "{\"x\":\"\\u0000\"}" },
  { contentType: "application/json; charset=utf-16", text: "{}" },
  { contentType: "text/plain", text: "{}" },
  { contentType: "application/octet-stream", text: "\u0000\u0001\u0002" },
  { contentType: "application/x-www-form-urlencoded", text: "a=%00&b=1" },
  { contentType: "multipart/form-data", text: "--x\r\n" },
  { contentType: "multipart/form-data; boundary=XYZ", text: "garbage without parts" },
  {
    contentType: "multipart/form-data; boundary=XYZ",
    text: "--XYZ\r\nContent-Disposition: form-data; name=\"message\"\r\n\r\nhi\u0000\r\n--XYZ--\r\n"
  },
  { contentType: undefined, text: "{}" },
  { contentType: "application/xml", text: "<a/>" }
]

export type Path = ReadonlyArray<string | number>

/** A JSON Schema, as the OpenAPI document and `tools/list` give them. */
// any: the walkers read arbitrary keywords ($ref, items, properties...) of schemas of any shape
export type JsonSchema = Record<string, any>

/** Every property path a schema describes (objects, array items as index 0), `$ref`s resolved. */
export const schemaPaths = (
  schema: JsonSchema | undefined,
  resolve: (ref: string) => JsonSchema | undefined,
  depth = 0
): Array<Path> => {
  if (schema === undefined || depth > 4) return []
  if (typeof schema.$ref === "string") return schemaPaths(resolve(schema.$ref), resolve, depth)
  const out: Array<Path> = []
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    for (const member of (schema[key] as Array<JsonSchema> | undefined) ?? []) {
      out.push(...schemaPaths(member, resolve, depth))
    }
  }
  for (const [name, inner] of Object.entries((schema.properties as Record<string, JsonSchema> | undefined) ?? {})) {
    out.push([name])
    for (const p of schemaPaths(inner, resolve, depth + 1)) out.push([name, ...p])
  }
  if (schema.items !== undefined && typeof schema.items === "object") {
    out.push([0])
    for (const p of schemaPaths(schema.items as JsonSchema, resolve, depth + 1)) out.push([0, ...p])
  }
  const seen = new Set<string>()
  return out.filter((p) => {
    const key = JSON.stringify(p)
    return seen.has(key) ? false : (seen.add(key), true)
  })
}

/** The leaf and container paths of a value. */
export const valuePaths = (value: unknown, prefix: Path = []): Array<Path> => {
  if (Array.isArray(value)) return value.flatMap((v, i) => [[...prefix, i], ...valuePaths(v, [...prefix, i])])
  if (typeof value === "object" && value !== null) {
    return Object.entries(value).flatMap(([k, v]) => [[...prefix, k], ...valuePaths(v, [...prefix, k])])
  }
  return []
}

const clone = <A>(value: A): A => structuredClone(value)

/** A copy of `value` with `path` set (missing containers created) or removed. */
export const setAt = (value: unknown, path: Path, replacement: unknown, remove = false): unknown => {
  if (path.length === 0) return replacement
  // any: builds malformed requests, walking and writing containers of any shape along `path`
  const root: any = typeof value === "object" && value !== null ? clone(value) : {}
  let node = root
  for (let i = 0; i < path.length - 1; i++) {
    const key = path[i]!
    if (typeof node[key] !== "object" || node[key] === null) node[key] = typeof path[i + 1] === "number" ? [] : {}
    node = node[key]
  }
  const last = path[path.length - 1]!
  if (remove) {
    if (Array.isArray(node) && typeof last === "number") node.splice(last, 1)
    else delete node[last]
  } else node[last] = replacement
  return root
}

export type Mutation =
  | { readonly kind: "as-is" }
  | { readonly kind: "field"; readonly path: Path; readonly value: unknown }
  | { readonly kind: "drop"; readonly path: Path }
  | { readonly kind: "extra"; readonly key: string; readonly value: unknown }
  | { readonly kind: "body"; readonly contentType: string | undefined; readonly text: string }
  | { readonly kind: "path"; readonly name: string; readonly value: string }
  | { readonly kind: "query"; readonly name: string; readonly value: string }
  | { readonly kind: "auth"; readonly authorization: string | undefined }

export interface MutationSpace {
  /** Property paths of the body (from its schema and the known-good body). */
  readonly bodyPaths: ReadonlyArray<Path>
  readonly hasBody: boolean
  readonly pathParams: ReadonlyArray<string>
  readonly queryParams: ReadonlyArray<string>
  /** Path values that are well-formed but another workspace's or nobody's. */
  readonly foreignPathValues: ReadonlyArray<string>
  readonly authorizations: ReadonlyArray<string | undefined>
}

/** One spoiled thing per case, weighted towards the body's fields. */
export const mutations = (space: MutationSpace): fc.Arbitrary<Mutation> => {
  const arbs: Array<fc.WeightedArbitrary<Mutation>> = [
    { weight: 1, arbitrary: fc.constant<Mutation>({ kind: "as-is" }) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(...space.authorizations).map((authorization): Mutation => ({
        kind: "auth",
        authorization
      }))
    }
  ]
  if (space.hasBody) {
    arbs.push({ weight: 2, arbitrary: fc.constantFrom(...badBodies).map((b): Mutation => ({ kind: "body", ...b })) })
    arbs.push({
      weight: 1,
      arbitrary: fc.record({
        key: fc.constantFrom("unknown_field", "__proto__", "constructor", "id", "workspace_id"),
        value: fc.constantFrom(...badValues)
      })
        .map((e): Mutation => ({ kind: "extra", ...e }))
    })
  }
  if (space.bodyPaths.length > 0) {
    arbs.push({
      weight: 8,
      arbitrary: fc.record({ path: fc.constantFrom(...space.bodyPaths), value: fc.constantFrom(...badValues) })
        .map((f): Mutation => ({ kind: "field", ...f }))
    })
    arbs.push({
      weight: 2,
      arbitrary: fc.constantFrom(...space.bodyPaths).map((path): Mutation => ({ kind: "drop", path }))
    })
  }
  if (space.pathParams.length > 0) {
    arbs.push({
      weight: 3,
      arbitrary: fc.record({
        name: fc.constantFrom(...space.pathParams),
        value: fc.constantFrom(...badPathValues, ...space.foreignPathValues)
      }).map((p): Mutation => ({ kind: "path", ...p }))
    })
  }
  if (space.queryParams.length > 0) {
    arbs.push({
      weight: 3,
      arbitrary: fc.record({
        name: fc.constantFrom(...space.queryParams, "unknown", "page", "per_page"),
        value: fc.constantFrom(...badQueryValues)
      })
        .map((q): Mutation => ({ kind: "query", ...q }))
    })
  }
  // fast-check prints a failing case with this: short, not the megabyte it may hold
  return fc.oneof(...arbs).map((m) => Object.assign(m, { [fc.toStringMethod]: () => describeMutation(m) }))
}

const short = (_key: string, v: unknown) =>
  typeof v === "string" && v.length > 60
    ? `${v.slice(0, 30)}...(${v.length} chars)`
    : v instanceof RawJson
    ? `raw JSON ${v.text.slice(0, 30)}${v.text.length > 30 ? `...(${v.text.length} chars)` : ""}`
    : Array.isArray(v) && v.length > 20
    ? `[array of ${v.length}]`
    : v

/** One line naming what a case spoiled. */
export const describeMutation = (m: Mutation): string => JSON.stringify(m, short)

/** How many cases per operation: a quick run in `pnpm test`, a long one with FUZZ_RUNS (nightly). */
export const fuzzRuns = (quick: number) => Number(process.env.FUZZ_RUNS ?? quick)
/** The seed: fixed, so a failure reproduces; fast-check prints it (and the case) when a property fails. */
export const fuzzSeed = Number(process.env.FUZZ_SEED ?? 20261124)
