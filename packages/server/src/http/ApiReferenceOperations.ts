/**
 * One operation of the API reference: its authorization (with the scope the contract names), parameters,
 * request body and responses; the schemas its responses name are linked, to be shown once under Schemas.
 */
import type { OpenApi } from "@effect/platform"
import { fieldTable, type Linked, type Mode, typeHtml } from "./ApiReferenceFields.js"
import { code, escapeHtml, inline, prose, slug } from "./ApiReferenceMarkup.js"
import { componentName, type Field, isGenerated, isJson, type Shapes } from "./ApiReferenceShapes.js"

export interface Operation {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly op: OpenApi.OpenAPISpecOperation
}

export const methodBadge = (method: string) => `<span class="method method-${method}">${method.toUpperCase()}</span>`

export const operationTitle = (o: Operation) => o.op.summary ?? `${o.method.toUpperCase()} ${o.path}`

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

export interface OperationContext {
  readonly shapes: Shapes
  readonly linked: Linked
  /** operationId: the scope its bearer token needs, or `undefined` for any valid token */
  readonly scopes: ReadonlyMap<string, string | undefined>
  readonly schemes: Record<string, OpenApi.OpenAPISecurityScheme>
}

/** Renders an operation's section; call it in page order, the order in which Schemas lists what responses link. */
export const operationRenderer = ({ linked, schemes, scopes, shapes }: OperationContext) => {
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
    return `<h4 id="${id}-title">${heading}</h4>${
      fieldTable(id, `${id}-title`, fields, { _tag: "expand" }, "Parameter")
    }`
  }

  const requestBody = (o: Operation) => {
    const body = o.op.requestBody
    if (body === undefined) return ""
    return Object.entries(body.content).map(([contentType, media], i) => {
      const id = `${o.id}-body${i === 0 ? "" : `-${i}`}`
      const shape = shapes.of(media?.schema)
      const heading = `<h4 id="${id}-title">Request body <span class="content-type">${
        escapeHtml(contentType)
      }</span></h4>`
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
            `<h4 id="${id}-title">${escapeHtml(status)} response ${code("data")}</h4>` +
              fieldTable(id, `${id}-title`, data.fields, mode)
          )
        }
      } else if (envelope && status.startsWith("2")) parts.push(`${code("data")}: null`)
      const schemaCell = names.length > 0
        ? names.map(code).join(" or ")
        : envelope
        ? "envelope"
        : escapeHtml(shape.type)
      return `<tr><th scope="row">${escapeHtml(status)}</th><td>${schemaCell}</td><td>${
        parts.filter((p) => p !== "").join(". ")
      }</td></tr>`
    })
    const id = `${o.id}-responses`
    return `<h4 id="${id}-title">Responses</h4><table class="responses" aria-labelledby="${id}-title"><thead><tr><th scope="col">Status</th>` +
      `<th scope="col">Schema</th><th scope="col">Description</th></tr></thead><tbody>${rows.join("")}</tbody></table>${
        inlineData.join("")
      }`
  }

  return (o: Operation): string => {
    const text = [o.method, o.path, operationTitle(o).replace(/`/g, ""), o.id, o.op.tags[0] ?? ""].join(" ")
      .toLowerCase()
    return `<section class="operation" id="${escapeHtml(o.id)}" aria-labelledby="${
      escapeHtml(o.id)
    }-heading" data-filter="${escapeHtml(text)}">` +
      `<h3 id="${escapeHtml(o.id)}-heading">${inline(operationTitle(o))}</h3>` +
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
}
