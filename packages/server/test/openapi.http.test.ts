import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { bodyAs } from "./support/Contract.js"
import { call, TestServer, TestServerLive } from "./support/TestServer.js"

/** A JSON Schema as the document writes it: the keywords these tests read. */
interface JsonSchemaNode {
  readonly $ref?: string | undefined
  readonly type?: string | undefined
  readonly required?: ReadonlyArray<string> | undefined
  readonly properties?: { readonly [name: string]: JsonSchemaNode } | undefined
  readonly items?: JsonSchemaNode | undefined
  readonly anyOf?: ReadonlyArray<JsonSchemaNode> | undefined
  readonly oneOf?: ReadonlyArray<JsonSchemaNode> | undefined
  readonly allOf?: ReadonlyArray<JsonSchemaNode> | undefined
  readonly minimum?: number | undefined
  readonly maximum?: number | undefined
  readonly enum?: ReadonlyArray<unknown> | undefined
}
const JsonSchemaNode: Schema.Schema<JsonSchemaNode> = Schema.Struct({
  $ref: Schema.optional(Schema.String),
  type: Schema.optional(Schema.String),
  required: Schema.optional(Schema.Array(Schema.String)),
  properties: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.suspend(() => JsonSchemaNode) })),
  items: Schema.optional(Schema.suspend(() => JsonSchemaNode)),
  anyOf: Schema.optional(Schema.Array(Schema.suspend(() => JsonSchemaNode))),
  oneOf: Schema.optional(Schema.Array(Schema.suspend(() => JsonSchemaNode))),
  allOf: Schema.optional(Schema.Array(Schema.suspend(() => JsonSchemaNode))),
  minimum: Schema.optional(Schema.Number),
  maximum: Schema.optional(Schema.Number),
  enum: Schema.optional(Schema.Array(Schema.Unknown))
})

const Content = Schema.Record({ key: Schema.String, value: Schema.Struct({ schema: JsonSchemaNode }) })

const Operation = Schema.Struct({
  security: Schema.optional(Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Array(Schema.String) }))),
  parameters: Schema.optional(Schema.Array(Schema.Struct({
    name: Schema.String,
    in: Schema.String,
    required: Schema.optional(Schema.Boolean),
    schema: JsonSchemaNode
  }))),
  requestBody: Schema.optional(Schema.Struct({ content: Content })),
  responses: Schema.Record({ key: Schema.String, value: Schema.Struct({ content: Content }) })
})
type Operation = typeof Operation.Type
type Response = Operation["responses"][string]

/**
 * The OpenAPI document, as far as these tests read it. Keywords it does not name are kept (not dropped by the
 * decoding), so `toEqual` on a part of it still sees everything the server sent.
 */
const OpenApiDocument = Schema.Struct({
  openapi: Schema.String,
  info: Schema.Struct({ title: Schema.String, version: Schema.String }),
  paths: Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: Operation }) }),
  components: Schema.Struct({
    schemas: Schema.Record({ key: Schema.String, value: JsonSchemaNode }),
    securitySchemes: Schema.Record({
      key: Schema.String,
      value: Schema.Struct({ type: Schema.String, scheme: Schema.String })
    })
  })
}).annotations({ parseOptions: { onExcessProperty: "preserve" } })
type OpenApiDocument = typeof OpenApiDocument.Type

const openapi = Effect.map(call("/openapi.json"), (r) => {
  expect(r.status).toBe(200)
  return bodyAs(r, OpenApiDocument)
})

/** The operation at `path` and `method`; the test fails if the document has none. */
const operation = (doc: OpenApiDocument, path: string, method: string): Operation =>
  doc.paths[path]?.[method] ?? expect.fail(`no ${method} ${path} in the document`)

/** Follows `$ref`s (and a single-entry `allOf`) to the component they name. */
const resolve = (doc: OpenApiDocument, schema: JsonSchemaNode | undefined): JsonSchemaNode => {
  if (schema === undefined) return expect.fail("no schema where the document should have one")
  if (schema.$ref !== undefined) {
    const name = schema.$ref.replace("#/components/schemas/", "")
    expect(doc.components.schemas).toHaveProperty(name)
    return resolve(doc, doc.components.schemas[name])
  }
  if (schema.allOf !== undefined && schema.allOf.length === 1) return resolve(doc, schema.allOf[0])
  return schema
}

/** A schema's properties; the test fails if it has none. */
const propertiesOf = (schema: JsonSchemaNode) =>
  schema.properties ?? expect.fail(`no properties in ${JSON.stringify(schema)}`)

const jsonSchema = (response: Response | undefined): JsonSchemaNode =>
  response?.content["application/json"]?.schema ?? expect.fail(`no JSON schema in ${JSON.stringify(response)}`)

/** Every schema of a response, whether one or an `anyOf` of several, resolved. */
const alternatives = (doc: OpenApiDocument, response: Response | undefined): Array<JsonSchemaNode> => {
  const schema = jsonSchema(response)
  return (schema.anyOf ?? [schema]).map((s) => resolve(doc, s))
}

const expectEnvelope = (schema: JsonSchemaNode) => {
  expect(schema.type).toBe("object")
  expect(schema.required).toBeDefined()
  expect([...schema.required ?? []].sort()).toEqual(["code", "data", "message", "status", "validation"])
}

layer(TestServerLive())("OpenAPI document and docs page", (it) => {
  it.effect("/openapi.json is an OpenAPI 3.1 document, served without a token", () =>
    Effect.gen(function*() {
      const doc = yield* openapi
      expect(doc.openapi).toMatch(/^3\.1\./)
      expect(doc.info).toMatchObject({ title: "Parley API", version: "0.1.0" })
    }))

  it.effect("declares bearer and basic schemes: web-chat operations take channel credentials, every other /api/user one a token", () =>
    Effect.gen(function*() {
      const doc = yield* openapi
      expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" })
      expect(doc.components.securitySchemes.basic).toMatchObject({ type: "http", scheme: "basic" })
      const webChat = new Set(["/api/user/web-chat/initiate", "/api/user/messages/webchat"])
      const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.entries(ops).map(([method, op]) => ({ path, method, op }))
      )
      expect(operations.length).toBeGreaterThanOrEqual(15)
      for (const { op, path } of operations) {
        if (path.startsWith("/api/user/")) {
          expect(op.security).toEqual([webChat.has(path) ? { basic: [] } : { bearer: [] }])
        }
      }
    }))

  it.effect("contains the pipeline, stage, channel and account paths with their methods", () =>
    Effect.gen(function*() {
      const doc = yield* openapi
      const methods = (path: string) => Object.keys(doc.paths[path] ?? {}).sort()
      expect(methods("/api/user/me")).toEqual(["get"])
      expect(methods("/api/user/pipeline-options")).toEqual(["get"])
      expect(methods("/api/user/pipelines")).toEqual(["get", "post"])
      expect(methods("/api/user/pipelines/{pipeline}")).toEqual(["get", "put"])
      expect(methods("/api/user/pipelines/{pipeline}/stages")).toEqual(["get", "post"])
      expect(methods("/api/user/stages/{stage}")).toEqual(["delete", "put"])
      expect(methods("/api/user/channels")).toEqual(["get", "post"])
      expect(methods("/api/user/channels/{channel}")).toEqual(["get", "put"])
      expect(methods("/api/user/channels/{channel}/rotate")).toEqual(["post"])
      const param = operation(doc, "/api/user/pipelines/{pipeline}", "get").parameters
      expect(param).toEqual(
        expect.arrayContaining([expect.objectContaining({ name: "pipeline", in: "path", required: true })])
      )
    }))

  it.effect("lists the query parameters of every GET that takes them, the conversation and widget reads included", () =>
    Effect.gen(function*() {
      const doc = yield* openapi
      const query = (path: string) => {
        const { parameters } = operation(doc, path, "get")
        if (parameters === undefined) return expect.fail(`GET ${path} lists no parameters`)
        return parameters.filter((p) => p.in === "query").map((p) => p.name)
      }
      expect(query("/api/user/conversations")).toEqual(expect.arrayContaining([
        "workspace_id",
        "pipeline_id",
        "channel_id",
        "status",
        "handoff",
        "assignee_id",
        "opportunity_id",
        "stage_id",
        "contact_id",
        "q",
        "unread",
        "order",
        "cursor",
        "per_page"
      ]))
      expect(query("/api/user/conversations/{id}/messages")).toEqual(["cursor", "direction", "per_page"])
      expect(query("/api/widget/messages")).not.toEqual([])
      expect(query("/api/user/opportunities")).toContain("per_page")
    }))

  it.effect("every integer a request sends (body or query) states its bounds in one schema, as its column holds them", () =>
    Effect.gen(function*() {
      const doc = yield* openapi
      const unbounded: Array<string> = []
      let integers = 0
      const walk = (schema: JsonSchemaNode | undefined, at: string, seen: ReadonlySet<string>): void => {
        if (schema === undefined) return
        if (schema.$ref !== undefined) {
          const name = schema.$ref.replace("#/components/schemas/", "")
          if (seen.has(name)) return
          return walk(doc.components.schemas[name], at, new Set([...seen, name]))
        }
        if (schema.type === "integer") integers++
        if (schema.type === "integer" && (schema.maximum === undefined || schema.minimum === undefined)) {
          unbounded.push(at)
        }
        for (const [key, value] of Object.entries(schema.properties ?? {})) walk(value, `${at}.${key}`, seen)
        for (const key of ["anyOf", "oneOf", "allOf"] as const) {
          for (const member of schema[key] ?? []) walk(member, at, seen)
        }
        if (schema.items !== undefined) walk(schema.items, `${at}[]`, seen)
      }
      for (const [path, operations] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(operations)) {
          for (const parameter of op.parameters ?? []) {
            walk(parameter.schema, `${method} ${path} ?${parameter.name}`, new Set())
          }
          const body = op.requestBody?.content?.["application/json"]?.schema
          if (body !== undefined) {
            walk(body, `${method} ${path} body`, new Set())
          }
        }
      }
      expect(unbounded).toEqual([])
      expect(integers).toBeGreaterThan(50)
    }))

  it.effect("POST /api/user/pipelines lists 401, 403 and 422 as error envelopes", () =>
    Effect.gen(function*() {
      const doc = yield* openapi
      const op = operation(doc, "/api/user/pipelines", "post")
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(["200", "400", "401", "403", "422"]))
      for (const code of ["400", "401", "403", "422"]) {
        for (const schema of alternatives(doc, op.responses[code])) {
          expectEnvelope(schema)
          expect(propertiesOf(schema).data).toEqual({ type: "null" })
        }
      }
      const anyOf422 = jsonSchema(op.responses["422"]).anyOf
      expect(anyOf422).toBeDefined()
      const names422 = (anyOf422 ?? []).map((s) => s.$ref).sort()
      expect(names422).toEqual(["#/components/schemas/Unprocessable", "#/components/schemas/ValidationError"])
      expect(jsonSchema(op.responses["401"]).$ref).toBe("#/components/schemas/Unauthorized")
      expect(jsonSchema(op.responses["403"]).$ref).toBe("#/components/schemas/Forbidden")
      const body = resolve(doc, op.requestBody?.content["application/json"]?.schema)
      expect(body.required).toEqual(expect.arrayContaining(["name", "agent_type_id", "ai_model_id", "language_id"]))
    }))

  it.effect("a 404 is documented by name where a path id is looked up, with SPEC.md's message", () =>
    Effect.gen(function*() {
      const doc = yield* openapi
      const named = (path: string, method: string) => {
        const schema = jsonSchema(operation(doc, path, method).responses["404"])
        return (schema.anyOf ?? [schema]).map((s) => s.$ref).sort()
      }
      const ref = (name: string) => `#/components/schemas/${name}`
      expect(named("/api/user/pipelines/{pipeline}", "get")).toEqual([ref("PipelineNotFound")])
      expect(named("/api/user/pipelines/{pipeline}", "put")).toEqual([ref("PipelineNotFound")])
      expect(named("/api/user/pipelines/{pipeline}/stages", "post")).toEqual([
        ref("PipelineNotFound"),
        ref("StageNotFound")
      ])
      expect(named("/api/user/stages/{stage}", "delete")).toEqual([ref("StageNotFound")])
      expect(named("/api/user/channels/{channel}/rotate", "post")).toEqual([ref("ChannelNotFound")])
      expect(operation(doc, "/api/user/pipelines", "get").responses).not.toHaveProperty("404")
      // on the wire a named 404 is the error envelope with its fixed message
      const pipelineNotFound = resolve(doc, { $ref: ref("PipelineNotFound") })
      expectEnvelope(pipelineNotFound)
      expect(propertiesOf(pipelineNotFound).message?.enum).toEqual(["Pipeline not found."])
      expect(propertiesOf(pipelineNotFound).code?.enum).toEqual([404])
    }))

  it.effect("success responses are envelopes whose data is the resource, not the envelope again", () =>
    Effect.gen(function*() {
      const doc = yield* openapi
      const dataOf = (path: string, method: string) => {
        const envelope = resolve(doc, jsonSchema(operation(doc, path, method).responses["200"]))
        expectEnvelope(envelope)
        return propertiesOf(envelope).data ?? expect.fail(`no data in the answer of ${method} ${path}`)
      }
      const pipeline = resolve(doc, dataOf("/api/user/pipelines", "post"))
      expect(Object.keys(propertiesOf(pipeline))).toEqual(
        expect.arrayContaining(["id", "name", "stages", "is_model_routing"])
      )
      expect(pipeline.properties).not.toHaveProperty("validation")
      const stages = dataOf("/api/user/pipelines/{pipeline}/stages", "get")
      expect(stages.type).toBe("array")
      expect(Object.keys(propertiesOf(resolve(doc, stages.items)))).toEqual(
        expect.arrayContaining(["id", "pipeline_id", "order"])
      )
      const stage = resolve(doc, dataOf("/api/user/pipelines/{pipeline}/stages", "post"))
      expect(Object.keys(propertiesOf(stage))).toEqual(expect.arrayContaining(["order", "enter_condition"]))
      const me = resolve(doc, dataOf("/api/user/me", "get"))
      expect(Object.keys(propertiesOf(me)).sort()).toEqual(["acting_as", "token", "user", "workspaces"])
      // no component is an envelope whose data points back at itself
      for (const [name, schema] of Object.entries(doc.components.schemas)) {
        expect(schema.properties?.data?.$ref, name).not.toBe(`#/components/schemas/${name}`)
      }
    }))

  it.effect("only the channel create and rotate answers document client_secret", () =>
    Effect.gen(function*() {
      const doc = yield* openapi
      const dataOf = (path: string, method: string) =>
        resolve(doc, propertiesOf(resolve(doc, jsonSchema(operation(doc, path, method).responses["200"]))).data)
      expect(dataOf("/api/user/channels", "post").properties).toHaveProperty("client_secret")
      expect(dataOf("/api/user/channels/{channel}/rotate", "post").properties).toHaveProperty("client_secret")
      expect(dataOf("/api/user/channels/{channel}", "get").properties).not.toHaveProperty("client_secret")
      expect(dataOf("/api/user/channels/{channel}", "put").properties).not.toHaveProperty("client_secret")
      expect(dataOf("/api/user/channels/{channel}", "get").properties).toHaveProperty("client_id")
    }))

  it.effect("/docs returns an HTML page", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const r = yield* Effect.promise(async () => {
        const response = await fetch(`${baseUrl}/docs`)
        return { status: response.status, type: response.headers.get("content-type"), text: await response.text() }
      })
      expect(r.status).toBe(200)
      expect(r.type).toMatch(/^text\/html/)
      expect(r.text.toLowerCase()).toContain("<html")
      expect(r.text).toContain("Parley API")
    }))

  it.effect("/docs runs no inline script or style and sends a CSP, frame and sniffing protection", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const page = yield* Effect.promise(async () => {
        const response = await fetch(`${baseUrl}/docs`)
        return { headers: response.headers, text: await response.text() }
      })
      expectPageHeaders(page.headers)
      const csp = directives(page.headers)
      expect(csp.get("script-src")).toEqual(["'self'"])
      expect(csp.get("style-src")).toEqual(["'self'"])
      expect(csp.get("connect-src")).toBeUndefined()
      // the one script is the optional filter, by URL
      const scripts = [...page.text.matchAll(/<script([^>]*)>/g)].map((m) => m[1]!)
      expect(scripts).toHaveLength(1)
      expect(scripts[0]).toMatch(/src="docs\/reference\.js\?v=[\w-]{16}"/)
    }))

  it.effect("/docs/try (Scalar) runs no inline script and sends a CSP, frame and sniffing protection; Scalar's bundle is a cacheable file", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const page = yield* Effect.promise(async () => {
        const response = await fetch(`${baseUrl}/docs/try`)
        return { headers: response.headers, text: await response.text() }
      })
      expectPageHeaders(page.headers)
      const csp = directives(page.headers)
      expect(csp.get("script-src")).toEqual(["'self'", "'wasm-unsafe-eval'"])
      expect(csp.get("connect-src")).toEqual(["'self'"])
      // the spec is a JSON data block; the only script that runs is the bundle, by URL
      const scripts = [...page.text.matchAll(/<script([^>]*)>/g)].map((m) => m[1]!)
      expect(scripts).toHaveLength(2)
      expect(scripts[0]).toContain(`type="application/json"`)
      const src = /src="([^"]+)"/.exec(scripts[1]!)![1]!
      expect(src).toMatch(/^scalar\.js\?v=[\w-]{16}$/)
      const bundle = yield* Effect.promise(async () => {
        const response = await fetch(new URL(src, `${baseUrl}/docs/try`))
        return { status: response.status, headers: response.headers, text: await response.text() }
      })
      expect(bundle.status).toBe(200)
      expect(bundle.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
      expect(bundle.headers.get("cache-control")).toContain("immutable")
      expect(bundle.headers.get("x-content-type-options")).toBe("nosniff")
      expect(bundle.text).toContain("@scalar/api-reference")
    }))

  it.effect("the page of links at / (no demo seeded) sends a CSP that runs no script, with frame and sniffing protection", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const response = yield* Effect.promise(() => fetch(`${baseUrl}/`))
      expect(response.status).toBe(200)
      expectPageHeaders(response.headers)
      expect(directives(response.headers).get("script-src")).toBeUndefined()
    }))
})

/** A CSP's directives by name. */
const directives = (headers: Headers) =>
  new Map(
    (headers.get("content-security-policy") ?? "").split(";").map((d) => {
      const [name, ...sources] = d.trim().split(/\s+/)
      return [name!, sources] as const
    })
  )

const expectPageHeaders = (headers: Headers) => {
  const csp = directives(headers)
  expect(csp.get("default-src")).toEqual(["'none'"])
  expect(csp.get("frame-ancestors")).toEqual(["'none'"])
  expect(csp.get("base-uri")).toEqual(["'none'"])
  expect(csp.get("script-src") ?? []).not.toContain("'unsafe-inline'")
  expect(headers.get("x-frame-options")).toBe("DENY")
  expect(headers.get("x-content-type-options")).toBe("nosniff")
  expect(headers.get("referrer-policy")).toBe("no-referrer")
}
