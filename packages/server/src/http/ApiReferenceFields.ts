/**
 * The API reference's tables of fields: a request's expanded in full, a response's with each named
 * object as a link to its one section under Schemas.
 */
import { code, escapeHtml, prose } from "./ApiReferenceMarkup.js"
import type { Field, Shape } from "./ApiReferenceShapes.js"

export const schemaAnchor = (name: string) => `schema-${name}`

/** Names of schemas shown once in the Schemas section, in the order the page first links them. */
export class Linked {
  readonly names: Array<string> = []
  link(name: string) {
    if (!this.names.includes(name)) this.names.push(name)
    return `<a href="#${schemaAnchor(name)}">${escapeHtml(name)}</a>`
  }
}

export type Mode = { readonly _tag: "expand" } | { readonly _tag: "link"; readonly linked: Linked }

export const typeHtml = (shape: Shape, mode: Mode) => {
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
    parts.push(
      `<p class="values">One of: ${
        shape.values.map((v) => code(typeof v === "string" ? v : JSON.stringify(v))).join(", ")
      }</p>`
    )
  }
  if (shape.circular) parts.push(`<p class="constraints">the same shape as its parent ${code(shape.type)}</p>`)
  return parts.join("")
}

const MAX_DEPTH = 8

// a request names what it must send; a response (link mode) what it may leave out
const presence = (field: Field, mode: Mode) =>
  mode._tag === "expand"
    ? field.required ? `<span class="required">required</span>` : ""
    : field.required
    ? ""
    : `<span class="optional">optional</span>`

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

export const fieldTable = (id: string, labelledBy: string, fields: ReadonlyArray<Field>, mode: Mode, first = "Field") =>
  `<table class="fields" id="${id}" aria-labelledby="${labelledBy}"><thead><tr><th scope="col">${first}</th><th scope="col">Description</th></tr></thead>` +
  `<tbody>${fieldRows(fields, "", 0, mode)}</tbody></table>`
