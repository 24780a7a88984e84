/**
 * The API reference `/docs` serves: plain HTML rendered from the OpenAPI document of `Api` (what
 * `/openapi.json` serves), so reading it takes no script and the page is ready once its HTML has arrived.
 * Scopes are not in that document (every bearer operation says `bearer: []`), so they are read from the
 * contract: the `Authorized[scope]` middleware each endpoint adds.
 */
import { HttpApi, type HttpApiGroup, OpenApi } from "@effect/platform"
import { Authenticated, Authorized, Scopes } from "@parley/domain"
import { Context } from "effect"
import { fieldTable, Linked, schemaAnchor } from "./ApiReferenceFields.js"
import { code, escapeHtml, inline, plural, prose, slug } from "./ApiReferenceMarkup.js"
import { methodBadge, type Operation, operationRenderer, operationTitle } from "./ApiReferenceOperations.js"
import { isJson, Shapes } from "./ApiReferenceShapes.js"

export { escapeHtml } from "./ApiReferenceMarkup.js"

const methods = ["get", "post", "put", "patch", "delete", "head", "options", "trace"] as const

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
  const schemes = spec.components.securitySchemes

  const operation = operationRenderer({ shapes, linked, scopes, schemes })

  const groups = tags.map((tag) => {
    const ops = byTag(tag)
    if (ops.length === 0) return ""
    const id = `tag-${slug(tag)}`
    const description = tagInfo.get(tag)?.description
    return `<section class="group" id="${id}" aria-labelledby="${id}-heading"><h2 id="${id}-heading">${
      escapeHtml(tag)
    }</h2>` +
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
      `<section class="schema" id="${id}" aria-labelledby="${id}-heading"><h3 id="${id}-heading">${
        escapeHtml(name)
      }</h3>` +
        (shape.description === undefined ? "" : `<div class="description">${prose(shape.description)}</div>`) +
        fieldTable(`${id}-fields`, `${id}-heading`, shape.fields, { _tag: "link", linked }) + `</section>`
    )
  }

  const toc = tags.map((tag) => {
    const ops = byTag(tag)
    if (ops.length === 0) return ""
    return `<li class="toc-group"><a href="#tag-${slug(tag)}">${escapeHtml(tag)}</a><ul>` +
      ops.map((o) =>
        `<li data-operation="${escapeHtml(o.id)}"><a href="#${escapeHtml(o.id)}">${methodBadge(o.method)} ${
          inline(operationTitle(o))
        }</a></li>`
      ).join("") +
      `</ul></li>`
  }).join("")

  const authList = Object.entries(schemes).map(([name, scheme]) => {
    const kind = scheme.type === "http" ? `HTTP ${escapeHtml(scheme.scheme)}` : escapeHtml(scheme.type)
    return `<li id="auth-${slug(name)}">${code(name)} (${kind})${
      scheme.description === undefined ? "" : `: ${inline(scheme.description)}`
    }</li>`
  }).join("")

  const info = spec.info
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${escapeHtml(info.title)} reference</title>
${
    info.description === undefined
      ? ""
      : `<meta name="description" content="${escapeHtml(info.description)}">\n`
  }<link rel="stylesheet" href="${escapeHtml(assets.stylesheet)}">
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
<p>${plural(operations.length, "operation")} in ${
    plural(tags.filter((t) => byTag(t).length > 0).length, "group")
  }. This page is generated from <a href="openapi.json"><code>/openapi.json</code></a>; <a href="docs/try">the interactive reference</a> sends requests from the browser.</p>
<section id="conventions" aria-labelledby="conventions-heading">
<h2 id="conventions-heading">Conventions</h2>
<h3 id="authentication">Authentication</h3>
<ul class="auth">${authList}</ul>
<p>Each <code>/api/user</code> operation below names the scope its token needs; a token without it gets 403 <code>Missing required scope: &lt;scope&gt;</code>, a missing, unknown, expired or revoked one 401 <code>Unauthenticated.</code> Scopes: ${
    Scopes.map(code).join(", ")
  }. A super user may add <code>X-Act-As-User: &lt;user id&gt;</code> to act as that user.</p>
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
${
    schemaSections.length === 0
      ? ""
      : `<section id="schemas" aria-labelledby="schemas-heading"><h2 id="schemas-heading">Schemas</h2><p>The <code>data</code> of the responses above, and what they hold.</p>${
        schemaSections.join("")
      }</section>`
  }
</main>
</div>
</body>
</html>
`
}
