/**
 * Hostile input, generated (support/Fuzz.ts): every operation of the OpenAPI document, the receiver (JSON
 * and multipart) and every MCP tool get known-good requests with one thing spoiled. Whatever comes back
 * is a 4xx or 2xx in its listener's envelope, never a 5xx or a reset, and a refused request writes
 * nothing (row counts and the configuration tables' contents are the same before and after).
 * FUZZ_RUNS sets the cases per operation (the nightly run uses 150), FUZZ_SEED the seed.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Cause, Effect, Layer, Logger, Runtime, Schema } from "effect"
import fc from "fast-check"
import * as Fs from "node:fs"
import {
  describeMutation,
  fuzzRuns,
  fuzzSeed,
  type JsonSchema,
  type Mutation,
  mutations,
  schemaPaths,
  setAt,
  toJsonText,
  valuePaths
} from "./support/Fuzz.js"
import { baseArguments, type BaseRequest, baseRequests, type Fixture, seedFixture } from "./support/FuzzFixture.js"
import { databaseMode, TestServer, TestServerLive } from "./support/TestServer.js"

/** What a refused request must leave as it was: counts of data tables, full contents of configuration tables. */
const COUNTED = [
  "users",
  "workspaces",
  "memberships",
  "access_tokens",
  "contacts",
  "opportunities",
  "conversations",
  "conversation_opportunity",
  "tags",
  "opportunity_tags",
  "knowledge_points",
  "files",
  "idempotency_keys"
]
const HASHED = [
  "pipelines",
  "stages",
  "channels",
  "variables",
  "actions",
  "followups",
  "knowledge_tables",
  "knowledge_columns",
  "pipeline_knowledge_tables"
]

/**
 * Eval runs play their cases in the background after the request that started them answered (2xx): their
 * sandbox rows (is_eval) may appear while a later request is checked, so they are not counted.
 */
const notEval: Record<string, string> = {
  contacts: "where not is_eval",
  opportunities: "where not is_eval",
  conversations: "where not is_eval",
  conversation_opportunity:
    "where not exists (select 1 from conversations c where c.id = conversation_id and c.is_eval)"
}

const snapshot = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const columns = [
    ...COUNTED.map((t) => `(select count(*) from ${t} ${notEval[t] ?? ""})::text as "${t}"`),
    // AI, opening and followup messages are written in the background: contact and operator messages only
    `(select count(*) from messages m where (m.role = 'user' or m.sender_id is not null)
       and not exists (select 1 from conversations c where c.id = m.conversation_id and c.is_eval))::text as "messages"`,
    ...HASHED.map((t) => `(select md5(coalesce(string_agg(x::text, '|' order by x::text), '')) from ${t} x) as "${t}"`)
  ]
  const rows = yield* sql.unsafe<Record<string, string>>(`select ${columns.join(", ")}`)
  return rows[0]!
}).pipe(Effect.orDie)

interface Sent {
  readonly headers: Headers
  readonly status: number
  readonly text: string
  readonly json: unknown
}

const send = async (url: string, init: RequestInit): Promise<Sent> => {
  const response = await fetch(url, init)
  const text = await response.text()
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, headers: response.headers, text, json }
}

/** A JSON body outside the HTTP contract (MCP's JSON-RPC), decoded with the schema of what the test reads. */
const decoded = <A, I>(label: string, r: Sent, schema: Schema.Schema<A, I>): A => {
  const result = Schema.decodeUnknownEither(schema)(r.json)
  if (result._tag === "Left") expect.fail(`${label}: ${result.left.message}: ${r.text.slice(0, 300)}`)
  return result.right
}

/** `tools/list`: each tool's name and the JSON Schema of its arguments. */
const ToolList = Schema.Struct({
  result: Schema.Struct({
    tools: Schema.Array(
      Schema.Struct({ name: Schema.String, inputSchema: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })
    )
  })
})

/** A `tools/call` answer: a JSON-RPC error, or a result whose first content item may carry text. */
const ToolAnswer = Schema.Struct({
  jsonrpc: Schema.String,
  error: Schema.optional(Schema.Struct({ code: Schema.Number })),
  result: Schema.optional(Schema.Struct({
    isError: Schema.optional(Schema.Boolean),
    content: Schema.optional(Schema.Array(Schema.Struct({ text: Schema.optional(Schema.String) })))
  }))
})

const describeCase = (label: string, m: Mutation) => `${label} ${describeMutation(m)}`

/** REST: `{status, code, message, data}` (with `validation` where SPEC.md has it), `code` equal to the status. */
const expectRestEnvelope = (label: string, r: Sent) => {
  expect(r.json, `${label}: not JSON: ${r.text.slice(0, 200)}`).toBeTypeOf("object")
  const body = r.json as Record<string, unknown>
  expect(body.status, label).toBe(r.status < 300)
  expect(body.code, label).toBe(r.status)
  expect(typeof body.message, label).toBe("string")
  expect("data" in body, label).toBe(true)
}

/** Requests sent per surface and status, written to test-results/ for docs/reliability.md. */
const tally: Record<string, Record<number, number>> = { rest: {}, receiver: {}, mcp: {} }
const count = (surface: keyof typeof tally, status: number) => {
  const bySurface = tally[surface]!
  bySurface[status] = (bySurface[status] ?? 0) + 1
}

/** Runs the property with the fixed seed; fast-check's report names the seed and the failing case. */
const check = <A>(arbitrary: fc.Arbitrary<A>, runs: number, run: (a: A) => Promise<void>) =>
  Effect.promise(() =>
    fc.assert(fc.asyncProperty(arbitrary, run), { seed: fuzzSeed, numRuns: runs, endOnFailure: true })
  )

/** The request a mutation makes of an operation's known-good request. */
const build = (
  op: { readonly method: string; readonly path: string },
  base: BaseRequest,
  m: Mutation
) => {
  const pathValues = { ...base.path }
  const query = { ...base.query }
  let body = typeof base.body === "function" ? (base.body as () => unknown)() : base.body
  let text: string | undefined
  let contentType: string | undefined = base.body === undefined ? undefined : "application/json"
  let authorization = base.authorization
  switch (m.kind) {
    case "field":
      body = setAt(body, m.path, m.value)
      break
    case "drop":
      body = setAt(body, m.path, undefined, true)
      break
    case "extra":
      body = setAt(body, [m.key], m.value)
      break
    case "body":
      text = m.text
      contentType = m.contentType
      break
    case "path":
      pathValues[m.name] = m.value
      break
    case "query":
      query[m.name] = m.value
      break
    case "auth":
      authorization = m.authorization
      break
    case "as-is":
      break
  }
  const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => pathValues[name] ?? "1")
  // query values are sent as written (some are percent-encodings on purpose)
  const search = Object.entries(query).map(([k, v]) => `${encodeURIComponent(k)}=${v}`).join("&")
  if (text === undefined && body !== undefined) text = toJsonText(body)
  const headers: Record<string, string> = { accept: "application/json", ...base.headers }
  if (contentType !== undefined) headers["content-type"] = contentType
  if (authorization !== undefined) headers.authorization = authorization
  return {
    url: `${path}${search === "" ? "" : `?${search}`}`,
    init: { method: op.method, headers, ...(text !== undefined ? { body: text } : {}) }
  }
}

/** Each test's time grows with the cases per operation (about 60 operations, 35 tools). */
const timeout = { timeout: 60_000 + fuzzRuns(10) * 3_000 }

/** What the server logged at Error while the suite ran: a 5xx's cause, found by its request id. */
const serverErrors: Array<{ message: string; annotations: Record<string, unknown> }> = []
const CaptureErrors = Logger.add(Logger.make(({ annotations, cause, logLevel, message }) => {
  if (logLevel._tag !== "Error") return
  serverErrors.push({
    message: `${String(message)} ${Cause.pretty(cause, { renderErrorCause: true })}`,
    annotations: Object.fromEntries(annotations)
  })
}))

layer(TestServerLive({ WIDGET_SESSIONS_PER_HOUR: "100000" }).pipe(Layer.provide(CaptureErrors)), { timeout: 600_000 })(
  "fuzz: bad input never gets a 5xx",
  (it) => {
    let fixture: Fixture

    it.effect("seeds two workspaces to aim at", () =>
      Effect.gen(function*() {
        fixture = yield* seedFixture
        expect(fixture.a.pipelineId).toBeGreaterThan(0)
      }))

    describe("REST", () => {
      it.effect(
        "every operation of the OpenAPI document answers bad input with a 4xx envelope and writes nothing",
        () =>
          Effect.gen(function*() {
            const { baseUrl } = yield* TestServer
            const runtime = yield* Effect.runtime<SqlClient.SqlClient>()
            const operations = yield* restOperations(fixture)
            for (const { base, key, method, path, space } of operations) {
              yield* check(mutations(space), fuzzRuns(10), async (m) => {
                const label = describeCase(key, m)
                const { url, init } = build({ method, path }, base, m)
                const before = await Runtime.runPromise(runtime)(snapshot)
                const r = await send(baseUrl + url, init)
                count("rest", r.status)
                expect(r.status, `${label}: ${r.text.slice(0, 300)}`).toBeLessThan(500)
                expectRestEnvelope(label, r)
                if (r.status >= 400) {
                  expect(await Runtime.runPromise(runtime)(snapshot), `${label} wrote rows`).toEqual(before)
                }
              })
            }
            expect(operations.length).toBeGreaterThanOrEqual(50)
          }),
        timeout
      )

      it.effect(
        "another workspace's ids in the path are not found (404), never served; 403 or an empty list only where SPEC.md says so",
        () =>
          Effect.gen(function*() {
            const { baseUrl } = yield* TestServer
            const runtime = yield* Effect.runtime<SqlClient.SqlClient>()
            // SPEC.md 4.1 and 4.2: a foreign opportunity (GET) and a foreign conversation (send) are 403
            const spec403 = new Set([
              "GET /api/user/opportunities/{identifier}",
              "POST /api/user/{conversation}/messages"
            ])
            // SPEC.md 4.1: "No match returns 200 with empty data, never 404"
            const specEmpty = "GET /api/user/contacts/{identifier}/opportunities"
            const foreign = (yield* restOperations(fixture)).filter((op) =>
              op.space.pathParams.length > 0 && op.space.pathParams.every((name) =>
                fixture.b.pathValues[name] !== undefined
              ) &&
              op.base.authorization === fixture.a.bearer
            )
            const wrong: Array<string> = []
            for (const op of foreign) {
              const base = { ...op.base, path: { ...op.base.path, ...fixture.b.pathValues } }
              const { init, url } = build(op, base, { kind: "as-is" } as Mutation)
              const before = yield* Effect.promise(() => Runtime.runPromise(runtime)(snapshot))
              const r = yield* Effect.promise(() => send(baseUrl + url, init))
              // a 422 here is the body's (the known-good request of some operations has none): no id is looked up
              const allowed = r.status === 404 || r.status === 422 || (r.status === 403 && spec403.has(op.key)) ||
                (op.key === specEmpty && r.status === 200 && Array.isArray((r.json as { data?: unknown }).data) &&
                  (r.json as { data: Array<unknown> }).data.length === 0)
              if (!allowed) wrong.push(`${op.key} ${url}: ${r.status} ${r.text.slice(0, 200)}`)
              expect(yield* Effect.promise(() => Runtime.runPromise(runtime)(snapshot)), `${op.key} wrote rows`)
                .toEqual(before)
            }
            expect(wrong, wrong.join("\n")).toEqual([])
            expect(foreign.length).toBeGreaterThanOrEqual(30)
          }),
        timeout
      )

      it.effect(
        "four at a time, as real clients send them, no case of any operation gets a 5xx",
        () =>
          Effect.gen(function*() {
            const { baseUrl } = yield* TestServer
            // the destructive operations would take the other cases' targets from under them: they run alone above
            const operations = (yield* restOperations(fixture)).filter((op) => !destructive(op))
            const cases = operations.flatMap((op) =>
              fc.sample(mutations(op.space), { seed: fuzzSeed, numRuns: fuzzRuns(6) }).map((m) => ({ op, m }))
            )
            const failures: Array<string> = []
            yield* Effect.forEach(cases, ({ m, op }) =>
              Effect.promise(async () => {
                const { init, url } = build(op, op.base, m)
                const r = await send(baseUrl + url, init)
                count("rest", r.status)
                if (r.status < 500) return
                const requestId = r.headers.get("x-request-id")
                const cause = serverErrors.find((l) => l.annotations.request_id === requestId)
                failures.push(
                  `${describeCase(op.key, m)}\n  request: ${init.method} ${url} ${
                    String(init.body ?? "").slice(0, 300)
                  }` +
                    `\n  response: ${r.status} ${r.text.slice(0, 300)}\n  logged: ${
                      cause?.message.slice(0, 1500) ?? "(nothing at Error)"
                    }`
                )
              }), { concurrency: 4, discard: true })
            expect(failures, failures.join("\n\n")).toEqual([])
            expect(cases.length).toBeGreaterThanOrEqual(operations.length)
          }),
        timeout
      )
    })

    describe("receiver", () => {
      it.effect(
        "POST /web-chat/message answers bad JSON and multipart with a 4xx receiver envelope and writes nothing",
        () =>
          Effect.gen(function*() {
            const { receiverUrl } = yield* TestServer
            const runtime = yield* Effect.runtime<SqlClient.SqlClient>()
            const base = { contact_id: "fuzz-contact", message: "Hello there" }
            const space = {
              bodyPaths: [
                ["contact_id"],
                ["message"],
                ["attachments"],
                ["attachments", 0, "url"],
                ["attachments", 0, "type"],
                ["files"],
                ["files", 0, "path"]
              ],
              hasBody: true,
              pathParams: [],
              queryParams: [],
              foreignPathValues: [],
              authorizations: [
                undefined,
                "Basic Zm9vOmJhcg==",
                fixture.b.basic,
                "Bearer nope",
                "Basic " + "x".repeat(5000)
              ]
            }
            const arbitrary = fc.oneof(
              mutations(space).map((m) => ({ multipart: false as const, m })),
              fc.record({
                field: fc.constantFrom("contact_id", "message", "attachments", "files", "files[]"),
                value: fc.constantFrom("\u0000", "x\ud800", "", "y".repeat(300_000), "[{\"type\":\"image\"}]", "😀"),
                fileName: fc.constantFrom(
                  "a.txt",
                  "nul\u0000.txt",
                  "\ud800.png",
                  "x".repeat(5000),
                  "../../../etc/passwd",
                  ""
                ),
                fileType: fc.constantFrom("text/plain", "image/png\u0000", "", "application/x-\u00ff")
              }).map((p) => ({
                multipart: true as const,
                p,
                [fc.toStringMethod]: () => `multipart ${JSON.stringify(p).slice(0, 200)}`
              }))
            )
            yield* check(arbitrary, fuzzRuns(40), async (c) => {
              let init: RequestInit
              let label: string
              if (c.multipart) {
                label = `multipart ${JSON.stringify(c.p).slice(0, 200)}`
                const form = new FormData()
                form.set("contact_id", "fuzz-contact")
                form.set("message", "Hello")
                form.set(c.p.field, c.p.value)
                form.append("files", new Blob(["content"], { type: c.p.fileType }), c.p.fileName)
                init = { method: "POST", headers: { authorization: fixture.a.basic }, body: form }
              } else {
                label = describeCase("receiver", c.m)
                init = build({ method: "POST", path: "/web-chat/message" }, {
                  path: {},
                  query: {},
                  body: base,
                  authorization: fixture.a.basic
                }, c.m).init
              }
              const before = await Runtime.runPromise(runtime)(snapshot)
              const r = await send(`${receiverUrl}/web-chat/message`, init)
              count("receiver", r.status)
              expect(r.status, `${label}: ${r.text.slice(0, 300)}`).toBeLessThan(500)
              expect(Object.keys(r.json as object).sort(), label).toEqual(["data", "message", "status"])
              if (r.status >= 400) {
                expect(await Runtime.runPromise(runtime)(snapshot), `${label} wrote rows`).toEqual(before)
              }
            })
          }),
        timeout
      )
    })

    describe("multipart edge cases", () => {
      /** Bodies and Content-Types a multipart parser must refuse (or read) without a 5xx or a hang. */
      const part = (headers: string, value: string) => `--edge\r\n${headers}\r\n\r\n${value}\r\n`
      const fields = part("Content-Disposition: form-data; name=\"contact_id\"", "edge-contact") +
        part("Content-Disposition: form-data; name=\"message\"", "Hello")
      const cases: ReadonlyArray<readonly [string, string, string]> = [
        ["an empty boundary", "multipart/form-data; boundary=", `${fields}--edge--\r\n`],
        ["an empty quoted boundary", "multipart/form-data; boundary=\"\"", `${fields}--edge--\r\n`],
        ["no boundary", "multipart/form-data", `${fields}--edge--\r\n`],
        ["a boundary that never closes", "multipart/form-data; boundary=edge", fields],
        [
          "a part without a name",
          "multipart/form-data; boundary=edge",
          `${fields}${part("Content-Disposition: form-data", "x")}--edge--\r\n`
        ],
        [
          "a file part of 0 bytes",
          "multipart/form-data; boundary=edge",
          `${fields}${
            part(
              "Content-Disposition: form-data; name=\"files[]\"; filename=\"empty.txt\"\r\nContent-Type: text/plain",
              ""
            )
          }--edge--\r\n`
        ],
        [
          "a body that ends inside a part's headers",
          "multipart/form-data; boundary=edge",
          `${fields}--edge\r\nContent-Disposition: form-da`
        ],
        [
          "a body that ends inside a part",
          "multipart/form-data; boundary=edge",
          `${fields}--edge\r\nContent-Disposition: form-data; name="files[]"; filename="a.txt"\r\n\r\nhalf a fi`
        ],
        ["only a preamble", "multipart/form-data; boundary=edge", "no parts here"]
      ]
      it.effect("the receiver and the operator's send answer each with a 4xx (or a 2xx when it is readable), never a 5xx or silence", () =>
        Effect.gen(function*() {
          const { baseUrl, receiverUrl } = yield* TestServer
          const runtime = yield* Effect.runtime<SqlClient.SqlClient>()
          const targets = [
            { name: "receiver", url: `${receiverUrl}/web-chat/message`, authorization: fixture.a.basic, rest: false },
            {
              name: "operator send",
              url: `${baseUrl}/api/user/${fixture.a.conversationId}/messages`,
              authorization: fixture.a.bearer,
              rest: true
            }
          ]
          for (const target of targets) {
            for (const [what, contentType, body] of cases) {
              const label = `${target.name}, ${what}`
              const before = yield* Effect.promise(() => Runtime.runPromise(runtime)(snapshot))
              const r = yield* Effect.promise(() =>
                send(target.url, {
                  method: "POST",
                  headers: { authorization: target.authorization, "content-type": contentType },
                  body,
                  signal: AbortSignal.timeout(15_000)
                })
              )
              expect(r.status, `${label}: ${r.text.slice(0, 300)}`).toBeLessThan(500)
              if (target.rest) expectRestEnvelope(label, r)
              else expect(Object.keys(r.json as object).sort(), label).toEqual(["data", "message", "status"])
              if (r.status >= 400) {
                expect(yield* Effect.promise(() => Runtime.runPromise(runtime)(snapshot)), `${label} wrote rows`)
                  .toEqual(before)
              }
            }
          }
        }))
    })

    describe("MCP", () => {
      it.effect(
        "every tool answers bad arguments with a tool error or invalid params, never an internal error, and writes nothing",
        () =>
          Effect.gen(function*() {
            const { baseUrl } = yield* TestServer
            const runtime = yield* Effect.runtime<SqlClient.SqlClient>()
            const rpc = (body: string, authorization = fixture.a.bearer) =>
              send(`${baseUrl}/mcp`, {
                method: "POST",
                headers: {
                  accept: "application/json, text/event-stream",
                  "content-type": "application/json",
                  authorization
                },
                body
              })
            const listed = decoded(
              "tools/list",
              yield* Effect.promise(() => rpc(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }))),
              ToolList
            )
            const tools = listed.result.tools
            expect(tools.length).toBeGreaterThanOrEqual(33)
            const args = baseArguments(fixture)
            for (
              const tool of [...tools].sort((x, y) =>
                Number(x.name.startsWith("delete")) - Number(y.name.startsWith("delete"))
              )
            ) {
              const baseOf = args[tool.name] ?? (() => ({}))
              const base = baseOf()
              const resolve = (ref: string) =>
                ref.split("/").slice(1).reduce<JsonSchema | undefined>(
                  (node, key) => node?.[key],
                  tool.inputSchema
                )
              const paths = [...schemaPaths(tool.inputSchema, resolve), ...valuePaths(base)]
              const space = {
                bodyPaths: [...new Map(paths.map((p) => [JSON.stringify(p), p])).values()],
                hasBody: false,
                pathParams: [],
                queryParams: [],
                foreignPathValues: [],
                authorizations: [fixture.a.bearer]
              }
              yield* check(mutations(space).filter((m) => m.kind !== "auth"), fuzzRuns(8), async (m) => {
                const label = describeCase(`tools/call ${tool.name}`, m)
                const fresh = baseOf()
                const argsOf = m.kind === "field"
                  ? setAt(fresh, m.path, m.value)
                  : m.kind === "drop"
                  ? setAt(fresh, m.path, undefined, true)
                  : fresh
                const text = toJsonText({
                  jsonrpc: "2.0",
                  id: 2,
                  method: "tools/call",
                  params: { name: tool.name, arguments: argsOf }
                })
                const before = await Runtime.runPromise(runtime)(snapshot)
                const r = await rpc(text)
                count("mcp", r.status)
                expect(r.status, `${label}: ${r.text.slice(0, 300)}`).toBeLessThan(500)
                const body = decoded(label, r, ToolAnswer)
                expect(body.jsonrpc, `${label}: ${r.text.slice(0, 300)}`).toBe("2.0")
                if (body.error !== undefined) {
                  expect(body.error.code, `${label}: ${r.text.slice(0, 300)}`).not.toBe(-32603)
                } else {
                  expect(body.result, `${label}: neither an error nor a result`).toBeDefined()
                  expect(body.result?.content?.[0]?.text ?? "", label).not.toMatch(/failed unexpectedly/)
                }
                if (body.error !== undefined || body.result?.isError === true || r.status >= 400) {
                  expect(await Runtime.runPromise(runtime)(snapshot), `${label} wrote rows`).toEqual(before)
                }
              })
            }
          }),
        timeout
      )
    })

    it.effect("reports what was sent", () =>
      Effect.sync(() => {
        const total = Object.values(tally).flatMap((bySurface) => Object.values(bySurface)).reduce((a, b) => a + b, 0)
        const report = {
          runs_per_operation: fuzzRuns(10),
          seed: fuzzSeed,
          database: databaseMode,
          total,
          by_surface: tally
        }
        Fs.mkdirSync("test-results", { recursive: true })
        Fs.writeFileSync(`test-results/fuzz-${databaseMode}.json`, JSON.stringify(report, null, 2))
        expect(Object.values(tally).flatMap((bySurface) => Object.keys(bySurface).map(Number)).every((s) => s < 500))
          .toBe(true)
      }))
  }
)

const destructive = (op: { readonly method: string; readonly path: string }) =>
  op.method === "DELETE" || op.path.endsWith("/rotate")

/** Every operation of the OpenAPI document with its known-good request and the space of its mutations. */
const restOperations = (fixture: Fixture) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestServer
    const doc = (yield* Effect.promise(() => send(`${baseUrl}/openapi.json`, {}))).json as JsonSchema
    const resolve = (ref: string) =>
      ref.split("/").slice(1).reduce<JsonSchema | undefined>((node, key) => node?.[key], doc)
    const bases = baseRequests(fixture)
    return Object.entries(doc.paths as Record<string, Record<string, JsonSchema>>)
      .flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method: method.toUpperCase(), op })))
      // what destroys the fixture's credentials or rows goes last
      .sort((x, y) => Number(destructive(x)) - Number(destructive(y)))
      .map(({ method, op, path }) => {
        const key = `${method} ${path}`
        const base: BaseRequest = bases[key] ??
          {
            path: fixture.a.pathValues,
            query: {},
            body: op.requestBody ? {} : undefined,
            authorization: fixture.a.bearer
          }
        const params = (op.parameters as Array<JsonSchema> | undefined) ?? []
        const bodySchema = op.requestBody?.content?.["application/json"]?.schema as JsonSchema | undefined
        const bodyPaths = [
          ...schemaPaths(bodySchema, resolve),
          ...valuePaths(typeof base.body === "function" ? base.body() : base.body)
        ]
        const space = {
          bodyPaths: [...new Map(bodyPaths.map((p) => [JSON.stringify(p), p])).values()],
          hasBody: op.requestBody !== undefined,
          pathParams: params.filter((p) => p.in === "path").map((p) => p.name as string),
          queryParams: params.filter((p) => p.in === "query").map((p) => p.name as string),
          foreignPathValues: Object.values(fixture.b.pathValues),
          authorizations: [
            undefined,
            "Bearer pat_nope",
            "Basic Zm9vOmJhcg==",
            fixture.b.bearer,
            "Bearer \u00ff",
            "Bearer " + "x".repeat(5000)
          ]
        }
        return { key, method, path, base, space }
      })
  })
