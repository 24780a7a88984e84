/**
 * The MCP endpoint's protocol layer (issue 23), with the SDK's own client and raw fetch: version
 * negotiation (2025-03-26, 2025-06-18, 2025-11-25) and JSON-RPC 2.0 batches, which exist up to 2025-03-26
 * and were removed in 2025-06-18.
 */
import { expect, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect, Schema } from "effect"
import { bodyAs } from "./support/Contract.js"
import { RpcError, RpcResult } from "./support/McpClient.js"
import { sqlRows } from "./support/Opportunities.js"
import { fetchJson, seedUser, TestServer, TestServerLive } from "./support/TestServer.js"

const VERSIONS = ["2025-03-26", "2025-06-18", "2025-11-25"] as const
const NEWEST = "2025-11-25"

const rpc = (id: number, method: string, params?: Record<string, unknown>) => ({
  jsonrpc: "2.0",
  id,
  method,
  ...(params !== undefined ? { params } : {})
})

const initialize = (id: number, protocolVersion: string) =>
  rpc(id, "initialize", { protocolVersion, capabilities: {}, clientInfo: { name: "raw", version: "1" } })

/** A raw `POST /mcp` with a JSON body as given (text sent as it is). */
const post = (token: string, body: unknown, protocolVersion?: string) =>
  Effect.flatMap(TestServer, ({ baseUrl }) =>
    fetchJson(`${baseUrl}/mcp`, {
      method: "POST",
      headers: {
        accept: "application/json, text/event-stream",
        "content-type": "application/json",
        authorization: `Bearer ${token}`,
        ...(protocolVersion !== undefined ? { "mcp-protocol-version": protocolVersion } : {})
      },
      body: typeof body === "string" ? body : JSON.stringify(body)
    }))

const invalidRequest = (id: string | number | null = null) => ({
  jsonrpc: "2.0",
  id,
  error: { code: -32600, message: expect.stringMatching(/^Invalid Request: /) }
})

const idOf = (member: unknown) =>
  typeof member === "object" && member !== null && "id" in member ? member.id : undefined

/** A batch's answers (or what they should be) in id order. */
const byId = (responses: ReadonlyArray<unknown>): Array<unknown> =>
  [...responses].sort((a, b) => String(idOf(a)).localeCompare(String(idOf(b))))

/** A batch's answer: an array of JSON-RPC answers, kept as they are. */
const Batch = Schema.Array(Schema.Unknown)
const Initialized = RpcResult(Schema.Struct({ protocolVersion: Schema.String }))
const ToolsListed = RpcResult(Schema.Struct({ tools: Schema.Array(Schema.Unknown) }))
const ToolCalled = RpcResult(Schema.Struct({ isError: Schema.optional(Schema.Boolean) }))

layer(TestServerLive(), { excludeTestServices: true })("MCP protocol: versions and batches", (it) => {
  it.effect("initialize answers the client's revision when it is one of the three, else the newest", () =>
    Effect.gen(function*() {
      const { token } = yield* seedUser()
      for (const version of VERSIONS) {
        const answer = yield* post(token, initialize(1, version))
        expect(answer.status, version).toBe(200)
        expect(bodyAs(answer, Initialized).result.protocolVersion, version).toBe(version)
        // and the next request, which names it in MCP-Protocol-Version, is served
        const listed = yield* post(token, rpc(2, "tools/list"), version)
        expect(listed.status, version).toBe(200)
        expect(bodyAs(listed, ToolsListed).result.tools.length, version).toBeGreaterThanOrEqual(33)
      }
      for (const other of ["2024-11-05", "2099-01-01", "not a version"]) {
        const answer = yield* post(token, initialize(1, other))
        expect(bodyAs(answer, Initialized).result.protocolVersion, other).toBe(NEWEST)
      }
    }))

  it.scoped("the SDK client negotiates 2025-11-25 and names it on every later request", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const { token } = yield* seedUser()
      const sent: Array<{ method: string; version: string | null; status: number }> = []
      const recording: typeof fetch = async (input, init) => {
        const response = await fetch(input, init)
        const body = typeof init?.body === "string" ? JSON.parse(init.body) : undefined
        sent.push({
          method: body?.method,
          version: new Headers(init?.headers).get("mcp-protocol-version"),
          status: response.status
        })
        return response
      }
      const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
        fetch: recording,
        requestInit: { headers: { authorization: `Bearer ${token}` } }
      })
      const client = new Client({ name: "protocol-test", version: "1.0.0" })
      yield* Effect.acquireRelease(Effect.promise(() => client.connect(transport)), () =>
        Effect.promise(() => client.close()))
      expect(transport.protocolVersion).toBe(NEWEST)
      const { tools } = yield* Effect.promise(() =>
        client.listTools()
      )
      expect(tools.length).toBeGreaterThanOrEqual(33)
      yield* Effect.promise(() => client.ping())
      const posts = sent.filter((s) => s.method !== undefined)
      expect(posts.map((s) => s.method)).toEqual(["initialize", "notifications/initialized", "tools/list", "ping"])
      expect(posts.slice(1).every((s) => s.version === NEWEST)).toBe(true)
      expect(posts.map((s) => s.status)).toEqual([200, 202, 200, 200])
    }))

  it.effect("2025-03-26 (or no MCP-Protocol-Version): a batch is answered with an array, also a batch of one", () =>
    Effect.gen(function*() {
      const { token } = yield* seedUser()
      for (const version of [undefined, "2025-03-26"]) {
        const one = yield* post(token, [rpc(1, "ping")], version)
        expect(one.status).toBe(200)
        expect(one.body).toEqual([{ jsonrpc: "2.0", id: 1, result: {} }])

        const two = yield* post(token, [rpc(1, "ping"), rpc(2, "tools/list"), {
          jsonrpc: "2.0",
          method: "notifications/initialized"
        }], version)
        expect(two.status).toBe(200)
        expect(two.body).toHaveLength(2)
        const [ping, list] = byId(bodyAs(two, Batch))
        expect(ping).toEqual({ jsonrpc: "2.0", id: 1, result: {} })
        expect(Schema.decodeUnknownSync(ToolsListed)(list).result.tools.length).toBeGreaterThanOrEqual(33)

        // only notifications: nothing to answer (JSON-RPC 2.0 6: no empty array)
        const quiet = yield* post(token, [{ jsonrpc: "2.0", method: "notifications/initialized" }], version)
        expect(quiet.status).toBe(202)
        expect(quiet.body).toBeNull()
      }
    }))

  it.effect("an empty batch is one invalid-request error; each invalid member of a batch gets its own", () =>
    Effect.gen(function*() {
      const { token } = yield* seedUser()
      const empty = yield* post(token, [])
      expect(empty.status).toBe(400)
      expect(empty.body).toEqual(invalidRequest())

      const allInvalid = yield* post(token, [1, 2, 3])
      expect(allInvalid.status).toBe(400)
      expect(allInvalid.body).toEqual([invalidRequest(), invalidRequest(), invalidRequest()])

      // a member that is not a request keeps its id when it has a usable one
      const mixed = yield* post(token, [rpc(1, "ping"), { foo: "bar" }, { jsonrpc: "1.0", id: 9, method: "ping" }, "x"])
      expect(mixed.status).toBe(200)
      expect(byId(bodyAs(mixed, Batch))).toEqual(
        byId([{ jsonrpc: "2.0", id: 1, result: {} }, invalidRequest(), invalidRequest(9), invalidRequest()])
      )

      // invalid members beside notifications only: the errors are still answered
      const withNotification = yield* post(token, [{ jsonrpc: "2.0", method: "notifications/initialized" }, 7])
      expect(withNotification.status).toBe(200)
      expect(withNotification.body).toEqual([invalidRequest()])

      // initialize is never part of a batch (2025-03-26 lifecycle); the rest of the batch is served
      const withInitialize = yield* post(token, [initialize(1, "2025-03-26"), rpc(2, "ping")])
      expect(withInitialize.status).toBe(200)
      expect(byId(bodyAs(withInitialize, Batch))).toEqual([invalidRequest(1), { jsonrpc: "2.0", id: 2, result: {} }])
    }))

  it.effect("2025-06-18 and 2025-11-25 have no batches: an array is one invalid-request error and nothing runs", () =>
    Effect.gen(function*() {
      const { token } = yield* seedUser()
      for (const version of ["2025-06-18", "2025-11-25"]) {
        const table = `batched ${version}`
        const create = (id: number) =>
          rpc(id, "tools/call", {
            name: "create_knowledge_table",
            arguments: {
              name: table,
              columns: [{ name: "question", data_type: "string", order: 1, is_searchable: true }]
            }
          })
        for (const batch of [[rpc(1, "ping")], [], [create(1)]]) {
          const refused = yield* post(token, batch, version)
          expect(refused.status, version).toBe(400)
          expect(refused.body, version).toEqual(invalidRequest())
          expect(bodyAs(refused, RpcError).error.message, version).toContain(version)
        }
        expect(yield* sqlRows`select 1 from knowledge_tables where name = ${table}`).toHaveLength(0)
        // one message is served as always
        const single = yield* post(token, create(2), version)
        expect(single.status).toBe(200)
        expect(bodyAs(single, ToolCalled).result.isError ?? false, JSON.stringify(single.body)).toBe(false)
        expect(yield* sqlRows`select 1 from knowledge_tables where name = ${table}`).toHaveLength(1)
      }
    }))

  it.effect("a body that is JSON but no JSON-RPC message is an invalid request; one that is not JSON a parse error", () =>
    Effect.gen(function*() {
      const { token } = yield* seedUser()
      for (const body of [{ foo: 1 }, "\"hello\"", "42", "null", { jsonrpc: "2.0", id: 4, method: 12 }]) {
        const refused = yield* post(token, body)
        expect(refused.status, JSON.stringify(body)).toBe(400)
        expect(refused.body, JSON.stringify(body)).toEqual(
          invalidRequest(typeof body === "object" && "id" in body ? 4 : null)
        )
      }
      const notJson = yield* post(token, "{not json")
      expect(notJson.status).toBe(400)
      expect(notJson.body).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } })
    }))
})
