/**
 * The API reference `/docs` serves: plain HTML rendered from the OpenAPI document of `Api` (what
 * `/openapi.json` serves), so reading it takes no script and the page is ready once its HTML has arrived.
 * Scopes are not in that document (every bearer operation says `bearer: []`), so they are read from the
 * contract: the `Authorized[scope]` middleware each endpoint adds.
 */
import { HttpApi, type HttpApiGroup, OpenApi } from "@effect/platform"
import { Authenticated, Authorized, Scopes } from "@parley/domain"
import { Context } from "effect"

type Json = { readonly [key: string]: unknown }
const isJson = (x: unknown): x is Json => typeof x === "object" && x !== null && !Array.isArray(x)

/** What a schema says, `$ref`s resolved, wrappers (`allOf` of one, `anyOf` with null) taken off. */
interface Shape {
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

interface Field {
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

export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

const code = (s: string) => `<code>${escapeHtml(s)}</code>`

/** The little markdown our descriptions use within a line: `code` and **bold**. */
const inline = (line: string) =>
  escapeHtml(line).replace(/`([^`]+)`/g, "<code>$1</code>").replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")

/** Descriptions: paragraphs and `- ` lists of `inline` text. */
const prose = (text: string) => {
  const blocks: Array<string> = []
  let paragraph: Array<string> = []
  let list: Array<string> = []
  const flush = () => {
    if (paragraph.length > 0) blocks.push(`<p>${paragraph.map(inline).join(" ")}</p>`)
    if (list.length > 0) blocks.push(`<ul>${list.map((item) => `<li>${inline(item)}</li>`).join("")}</ul>`)
    paragraph = []
    list = []
  }
  for (const raw of text.split("\n")) {
    const line = raw.trim()
    if (line === "") flush()
    else if (line.startsWith("- ")) {
      if (paragraph.length > 0) flush()
      list.push(line.slice(2))
    } else {
      if (list.length > 0) flush()
      paragraph.push(line)
    }
  }
  flush()
  return blocks.join("")
}

const isGenerated = (description: string) => /^an? /.test(description)
// restating the type says nothing
const uninformative = new Set(["an integer", "a finite number"])

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`

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
  const max = typeof node["maximum"] === "number" && node["maximum"] < Number.MAX_SAFE_INTEGER ? node["maximum"] : undefined
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
  if (Array.isArray(node["examples"]) && node["examples"].length > 0) out.push(`example ${code(example(node["examples"][0]))}`)
  return out
}

const componentName = (ref: string) => ref.replace(/^#\/components\/schemas\//, "")

class Shapes {
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
    const anyOf = Array.isArray(node["anyOf"]) ? node["anyOf"] : Array.isArray(node["oneOf"]) ? node["oneOf"] : undefined
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
    const types = (Array.isArray(node["type"]) ? node["type"] : [node["type"]]).filter((t): t is string => typeof t === "string")
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
      const fields = Object.entries(properties).map(([name, schema]) => ({ name, required: required.has(name), shape: this.of(schema, seen) }))
      const extra = node["additionalProperties"]
      if (fields.length === 0 && isJson(extra)) {
        const value = this.of(extra, seen)
        return { ...anyShape, type: `object (any keys, ${value.type} values)`, nullable }
      }
      return { ...anyShape, type: fields.length === 0 && extra === false ? "object (empty)" : "object", fields, nullable }
    }
    return { ...anyShape, type: type ?? "any", nullable }
  }
}

// --- HTML -------------------------------------------------------------------------------------------------

const slug = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "")
const schemaAnchor = (name: string) => `schema-${name}`
const methods = ["get", "post", "put", "patch", "delete", "head", "options", "trace"] as const

const methodBadge = (method: string) => `<span class="method method-${method}">${method.toUpperCase()}</span>`

/** Names of schemas shown once in the Schemas section, in the order the page first links them. */
class Linked {
  readonly names: Array<string> = []
  link(name: string) {
    if (!this.names.includes(name)) this.names.push(name)
    return `<a href="#${schemaAnchor(name)}">${escapeHtml(name)}</a>`
  }
}

type Mode = { readonly _tag: "expand" } | { readonly _tag: "link"; readonly linked: Linked }

const typeHtml = (shape: Shape, mode: Mode) => {
  let html = escapeHtml(shape.type)
  if (mode._tag === "link" && shape.ref !== undefined && !shape.circular) {
    html = shape.type === shape.ref
      ? mode.linked.link(shape.ref)
      : escapeHtml(shape.type.slice(0, shape.type.length - shape.ref.length)) + mode.linked.link(shape.ref)
  }
  return shape.nullable ? `${html} or null` : html
}

const detailsHtml = (shape: Shape, extraDescription?: string) => {
  const parts: Array<string> = []
  const description = extraDescription ?? shape.description
  if (description !== undefined) parts.push(prose(description))
  const constraints = shape.constraints.length > 0
    ? shape.constraints
    : shape.generated === undefined
    ? []
    : [escapeHtml(shape.generated)]
  if (constraints.length > 0) parts.push(`<p class="constraints">${constraints.join("; ")}</p>`)
  if (shape.values !== undefined) {
    parts.push(`<p class="values">One of: ${shape.values.map((v) => code(typeof v === "string" ? v : JSON.stringify(v))).join(", ")}</p>`)
  }
  if (shape.circular) parts.push(`<p class="constraints">the same shape as its parent ${code(shape.type)}</p>`)
  return parts.join("")
}

const MAX_DEPTH = 8

// a request names what it must send; a response (link mode) what it may leave out
const presence = (field: Field, mode: Mode) =>
  mode._tag === "expand"
    ? field.required ? `<span class="required">required</span>` : ""
    : field.required ? "" : `<span class="optional">optional</span>`

const fieldRows = (fields: ReadonlyArray<Field>, parent: string, depth: number, mode: Mode): string =>
  fields.map((field) => {
    const shape = field.shape
    const name = `${parent === "" ? "" : `<span class="parent">${escapeHtml(parent)}</span>`}${escapeHtml(field.name)}`
    const row = `<tr class="depth-${Math.min(depth, MAX_DEPTH)}"><th scope="row"><code class="field">${name}</code>` +
      `<span class="type">${typeHtml(shape, mode)}</span>` +
      presence(field, mode) +
      `</th><td>${detailsHtml(shape)}</td></tr>`
    // in link mode a named object is one link, shown once in Schemas
    const expand = !shape.circular && depth < MAX_DEPTH && (mode._tag === "expand" || shape.ref === undefined)
    return row + (expand ? fieldRows(shape.fields, `${parent}${field.name}${shape.joint}`, depth + 1, mode) : "")
  }).join("")

const fieldTable = (id: string, labelledBy: string, fields: ReadonlyArray<Field>, mode: Mode, first = "Field") =>
  `<table class="fields" id="${id}" aria-labelledby="${labelledBy}"><thead><tr><th scope="col">${first}</th><th scope="col">Description</th></tr></thead>` +
  `<tbody>${fieldRows(fields, "", 0, mode)}</tbody></table>`

const statusText: Record<string, string> = {
  "200": "OK",
  "201": "Created",
  "204": "No content",
  "400": "Bad request",
  "401": "Unauthenticated",
  "403": "Forbidden",
  "404": "Not found",
  "409": "Conflict",
  "413": "Body too large",
  "422": "Validation failed",
  "429": "Too many requests",
  "500": "Server error",
  "503": "Unavailable"
}

const refNames = (schema: unknown): Array<string> => {
  if (!isJson(schema)) return []
  if (typeof schema["$ref"] === "string") return [componentName(schema["$ref"])]
  const members = schema["anyOf"] ?? schema["oneOf"]
  return Array.isArray(members) ? members.flatMap(refNames) : []
}

const envelopeFields = ["status", "code", "message", "data"]

export interface ReferenceInput {
  readonly spec: OpenApi.OpenAPISpec
  /** operationId: the scope its bearer token needs, or `undefined` for any valid token */
  readonly scopes: ReadonlyMap<string, string | undefined>
}

/** operationId → scope, from the contract's middleware (the OpenAPI document names no scopes). */
export const operationScopes = <Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<Id, Groups, E, R>
): ReadonlyMap<string, string | undefined> => {
  const byKey = new Map(Scopes.map((s) => [Authorized[s].key, s]))
  const scopes = new Map<string, string | undefined>()
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group, middleware }) => {
      const id = Context.getOrElse(
        endpoint.annotations,
        OpenApi.Identifier,
        () => group.topLevel ? endpoint.name : `${group.identifier}.${endpoint.name}`
      )
      const keys = [...middleware].map((m) => m.key)
      const scope = keys.map((k) => byKey.get(k)).find((s) => s !== undefined)
      if (scope !== undefined) scopes.set(id, scope)
      else if (keys.includes(Authenticated.key)) scopes.set(id, undefined)
    }
  })
  return scopes
}

interface Operation {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly op: OpenApi.OpenAPISpecOperation
}

export interface Assets {
  readonly stylesheet: string
  readonly script: string
}

/** The whole page; `assets` are the URLs (relative to `/docs`) of its stylesheet and filter script. */
export const renderApiReference = ({ scopes, spec }: ReferenceInput, assets: Assets): string => {
  const shapes = new Shapes(isJson(spec.components.schemas) ? spec.components.schemas : {})
  const linked = new Linked()
  const operations: Array<Operation> = Object.entries(spec.paths).flatMap(([path, item]) =>
    methods.flatMap((method) => {
      const op = item[method]
      return op === undefined ? [] : [{ id: op.operationId, method, path, op }]
    })
  )
  const tags = [...spec.tags.map((t) => t.name), ...operations.flatMap((o) => o.op.tags)]
    .filter((name, i, all) => all.indexOf(name) === i)
  const tagInfo = new Map(spec.tags.map((t) => [t.name, t]))
  const byTag = (tag: string) => operations.filter((o) => o.op.tags[0] === tag)
  const title = (o: Operation) => o.op.summary ?? `${o.method.toUpperCase()} ${o.path}`
  const schemes = spec.components.securitySchemes

  const security = (o: Operation) => {
    if (o.op.security.length === 0) return "none"
    return o.op.security.map((requirement) =>
      Object.keys(requirement).map((name) => {
        const scheme = schemes[name]
        const http = scheme?.type === "http" ? scheme.scheme.toLowerCase() : undefined
        const kind = http === "basic" ? "HTTP Basic" : http === "bearer" ? "bearer token" : name
        const label = `<a href="#auth-${slug(name)}">${name === http ? kind : `${code(name)} ${kind}`}</a>`
        if (name !== "bearer" || !scopes.has(o.id)) return label
        const scope = scopes.get(o.id)
        return scope === undefined ? `${label}, any scope` : `${label} with scope ${code(scope)}`
      }).join(" and ")
    ).join(", or ")
  }

  const parameters = (o: Operation, location: "path" | "query", heading: string) => {
    const ps = o.op.parameters.filter((p) => p.in === location)
    if (ps.length === 0) return ""
    const id = `${o.id}-${location}`
    const fields = ps.map((p): Field => {
      const shape = shapes.of(p.schema)
      const description = p.description !== undefined && !isGenerated(p.description) ? p.description : shape.description
      return { name: p.name, required: p.required, shape: { ...shape, description } }
    })
    return `<h4 id="${id}-title">${heading}</h4>${fieldTable(id, `${id}-title`, fields, { _tag: "expand" }, "Parameter")}`
  }

  const requestBody = (o: Operation) => {
    const body = o.op.requestBody
    if (body === undefined) return ""
    return Object.entries(body.content).map(([contentType, media], i) => {
      const id = `${o.id}-body${i === 0 ? "" : `-${i}`}`
      const shape = shapes.of(media?.schema)
      const heading = `<h4 id="${id}-title">Request body <span class="content-type">${escapeHtml(contentType)}</span></h4>`
      const about = shape.description === undefined ? "" : `<div class="description">${prose(shape.description)}</div>`
      if (shape.fields.length === 0) return `${heading}${about}<p>${escapeHtml(shape.type)}</p>`
      return heading + about + fieldTable(id, `${id}-title`, shape.fields, { _tag: "expand" })
    }).join("")
  }

  const responses = (o: Operation) => {
    const mode: Mode = { _tag: "link", linked }
    const inlineData: Array<string> = []
    const rows = Object.entries(o.op.responses).map(([status, response]) => {
      const schema = response.content?.["application/json"]?.schema
      const names = refNames(schema)
      const shape = shapes.of(schema)
      const envelope = envelopeFields.every((f) => shape.fields.some((field) => field.name === f))
      const parts = [escapeHtml(statusText[status] ?? "")]
      if (response.description !== "" && response.description !== "Success" && !names.includes(response.description)) {
        parts.push(escapeHtml(response.description))
      }
      const data = shape.fields.find((f) => f.name === "data")?.shape
      if (envelope && data !== undefined && data.type !== "null") {
        parts.push(`${code("data")}: ${typeHtml(data, mode)}`)
        if (data.ref === undefined && data.fields.length > 0) {
          const id = `${o.id}-${status}-data`
          inlineData.push(
            `<h4 id="${id}-title">${escapeHtml(status)} response ${code("data")}</h4>` + fieldTable(id, `${id}-title`, data.fields, mode)
          )
        }
      } else if (envelope && status.startsWith("2")) parts.push(`${code("data")}: null`)
      const schemaCell = names.length > 0 ? names.map(code).join(" or ") : envelope ? "envelope" : escapeHtml(shape.type)
      return `<tr><th scope="row">${escapeHtml(status)}</th><td>${schemaCell}</td><td>${parts.filter((p) => p !== "").join(". ")}</td></tr>`
    })
    const id = `${o.id}-responses`
    return `<h4 id="${id}-title">Responses</h4><table class="responses" aria-labelledby="${id}-title"><thead><tr><th scope="col">Status</th>` +
      `<th scope="col">Schema</th><th scope="col">Description</th></tr></thead><tbody>${rows.join("")}</tbody></table>${inlineData.join("")}`
  }

  const operation = (o: Operation) => {
    const text = [o.method, o.path, title(o).replace(/`/g, ""), o.id, o.op.tags[0] ?? ""].join(" ").toLowerCase()
    return `<section class="operation" id="${escapeHtml(o.id)}" aria-labelledby="${escapeHtml(o.id)}-heading" data-filter="${escapeHtml(text)}">` +
      `<h3 id="${escapeHtml(o.id)}-heading">${inline(title(o))}</h3>` +
      `<p class="endpoint">${methodBadge(o.method)} <code>${escapeHtml(o.path)}</code></p>` +
      `<p class="security">Authorization: ${security(o)}</p>` +
      (o.op.deprecated === true ? `<p class="deprecated">Deprecated.</p>` : "") +
      (o.op.description === undefined ? "" : `<div class="description">${prose(o.op.description)}</div>`) +
      parameters(o, "path", "Path parameters") +
      parameters(o, "query", "Query parameters") +
      requestBody(o) +
      responses(o) +
      `<p class="top"><a href="#contents">Back to contents</a></p></section>`
  }

  const groups = tags.map((tag) => {
    const ops = byTag(tag)
    if (ops.length === 0) return ""
    const id = `tag-${slug(tag)}`
    const description = tagInfo.get(tag)?.description
    return `<section class="group" id="${id}" aria-labelledby="${id}-heading"><h2 id="${id}-heading">${escapeHtml(tag)}</h2>` +
      (description === undefined ? "" : `<div class="description">${prose(description)}</div>`) +
      ops.map(operation).join("") + `</section>`
  }).join("")

  // rendered after the operations, which decide what it holds; each schema may link more
  const schemaSections: Array<string> = []
  for (let i = 0; i < linked.names.length; i++) {
    const name = linked.names[i]!
    const shape = shapes.of({ $ref: `#/components/schemas/${name}` })
    const id = schemaAnchor(name)
    schemaSections.push(
      `<section class="schema" id="${id}" aria-labelledby="${id}-heading"><h3 id="${id}-heading">${escapeHtml(name)}</h3>` +
        (shape.description === undefined ? "" : `<div class="description">${prose(shape.description)}</div>`) +
        fieldTable(`${id}-fields`, `${id}-heading`, shape.fields, { _tag: "link", linked }) + `</section>`
    )
  }

  const toc = tags.map((tag) => {
    const ops = byTag(tag)
    if (ops.length === 0) return ""
    return `<li class="toc-group"><a href="#tag-${slug(tag)}">${escapeHtml(tag)}</a><ul>` +
      ops.map((o) => `<li data-operation="${escapeHtml(o.id)}"><a href="#${escapeHtml(o.id)}">${methodBadge(o.method)} ${inline(title(o))}</a></li>`).join("") +
      `</ul></li>`
  }).join("")

  const authList = Object.entries(schemes).map(([name, scheme]) => {
    const kind = scheme.type === "http" ? `HTTP ${escapeHtml(scheme.scheme)}` : escapeHtml(scheme.type)
    return `<li id="auth-${slug(name)}">${code(name)} (${kind})${scheme.description === undefined ? "" : `: ${inline(scheme.description)}`}</li>`
  }).join("")

  const info = spec.info
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${escapeHtml(info.title)} reference</title>
${info.description === undefined ? "" : `<meta name="description" content="${escapeHtml(info.description)}">\n`}<link rel="stylesheet" href="${escapeHtml(assets.stylesheet)}">
<script src="${escapeHtml(assets.script)}" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to the reference</a>
<header class="banner">
<p class="brand">${escapeHtml(info.title)} <span class="version">${escapeHtml(info.version)}</span></p>
<p class="links"><a href="docs/try">Try requests (interactive, needs JavaScript)</a> <a href="openapi.json">OpenAPI document</a></p>
</header>
<div class="layout">
<nav class="toc" id="contents" aria-labelledby="contents-heading">
<h2 id="contents-heading">Contents</h2>
<p class="filter" hidden><label for="filter">Filter operations</label> <input id="filter" type="search" autocomplete="off" spellcheck="false" aria-controls="main"></p>
<p class="filter-status" id="filter-status" role="status" aria-live="polite"></p>
<ul>
<li><a href="#conventions">Conventions</a></li>
${toc}
${schemaSections.length === 0 ? "" : `<li><a href="#schemas">Schemas</a></li>`}
</ul>
</nav>
<main id="main">
<h1>${escapeHtml(info.title)} reference</h1>
${info.description === undefined ? "" : `<div class="description">${prose(info.description)}</div>`}
<p>${plural(operations.length, "operation")} in ${plural(tags.filter((t) => byTag(t).length > 0).length, "group")}. This page is generated from <a href="openapi.json"><code>/openapi.json</code></a>; <a href="docs/try">the interactive reference</a> sends requests from the browser.</p>
<section id="conventions" aria-labelledby="conventions-heading">
<h2 id="conventions-heading">Conventions</h2>
<h3 id="authentication">Authentication</h3>
<ul class="auth">${authList}</ul>
<p>Each <code>/api/user</code> operation below names the scope its token needs; a token without it gets 403 <code>Missing required scope: &lt;scope&gt;</code>, a missing, unknown, expired or revoked one 401 <code>Unauthenticated.</code> Scopes: ${Scopes.map(code).join(", ")}. A super user may add <code>X-Act-As-User: &lt;user id&gt;</code> to act as that user.</p>
<h3 id="envelope">The envelope</h3>
<p>Every <code>/api/user</code> answer, errors included, is one JSON object:</p>
<pre><code>{ "status": true, "code": 200, "validation": [], "message": "OK", "data": { } }</code></pre>
<p><code>status</code> is true on success, <code>code</code> repeats the HTTP status, <code>data</code> is the payload (null on errors), <code>message</code> says what happened, and <code>validation</code> lists <code>{field, message}</code> per bad field on a 422 (dotted paths such as <code>is_model_routing.2.ai_model_id</code>). A response schema named <code>...WithoutValidation</code> has no <code>validation</code> key.</p>
<h3 id="errors">Errors</h3>
<table class="responses" aria-labelledby="errors"><thead><tr><th scope="col">Status</th><th scope="col">When</th></tr></thead><tbody>
<tr><th scope="row">400</th><td>The body is not JSON (<code>The request body is not valid JSON.</code>), or a request the operation refuses (its description says when)</td></tr>
<tr><th scope="row">401</th><td>Credentials missing or bad</td></tr>
<tr><th scope="row">403</th><td>The token lacks the operation's scope, or (widget) the page's origin is not allowed</td></tr>
<tr><th scope="row">404</th><td>Not found in your workspaces (another workspace's resources answer the same), or an unknown route (<code>Not found.</code>)</td></tr>
<tr><th scope="row">413</th><td>The body is over its limit</td></tr>
<tr><th scope="row">422</th><td>The body or query fails validation: <code>validation</code> names every bad field at once</td></tr>
<tr><th scope="row">500</th><td>A defect on our side: <code>message</code> names the request id, which the server's error log carries too</td></tr>
</tbody></table>
<p>Every answer carries <code>X-Request-Id</code> (yours when you send a plain one of up to 128 letters, digits and <code>._:-</code>, else a new UUID). Timestamps are ISO 8601 UTC with six fractional digits: <code>2026-11-21T10:28:55.001000Z</code>.</p>
</section>
${groups}
${schemaSections.length === 0 ? "" : `<section id="schemas" aria-labelledby="schemas-heading"><h2 id="schemas-heading">Schemas</h2><p>The <code>data</code> of the responses above, and what they hold.</p>${schemaSections.join("")}</section>`}
</main>
</div>
</body>
</html>
`
}
