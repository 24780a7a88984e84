/** The MCP SDK's client against the test server, as MCP clients connect. */
import { expect } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import { TestServer } from "./TestServer.js"

/** A tool result's text parts, joined. */
export const textOf = (result: CallToolResult) =>
  result.content.map((c) => (c.type === "text" ? c.text : "")).join("\n")

/** The SDK client over Streamable HTTP with the token as a bearer header; closed with the scope. */
export const mcpClient = (token: string) =>
  Effect.flatMap(TestServer, ({ baseUrl }) =>
    Effect.acquireRelease(
      Effect.promise(async () => {
        const client = new Client({ name: "parley-test", version: "1.0.0" })
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
            requestInit: { headers: { Authorization: `Bearer ${token}` } }
          })
        )
        return client
      }),
      (client) => Effect.promise(() => client.close())
    ))

export interface McpSession {
  readonly client: Client
  readonly call: (name: string, args?: Record<string, unknown>) => Effect.Effect<CallToolResult>
  /** A successful call's structuredContent, checked to be the call's only text block as compact JSON. */
  readonly ok: (name: string, args?: Record<string, unknown>) => Effect.Effect<any>
}

/**
 * A connected client that has listed the tools, so it checks every result's structuredContent against the
 * tool's outputSchema (the SDK client does once it knows the schemas).
 */
export const mcpSession = (token: string) =>
  Effect.gen(function*() {
    const client = yield* mcpClient(token)
    yield* Effect.promise(() => client.listTools())
    const call = (name: string, args: Record<string, unknown> = {}) =>
      Effect.promise(() => client.callTool({ name, arguments: args }) as Promise<CallToolResult>)
    const ok = (name: string, args: Record<string, unknown> = {}) =>
      Effect.map(call(name, args), (result) => {
        if (result.isError) expect(textOf(result)).toBe(`a successful ${name}`)
        expect(result.content).toEqual([{ type: "text", text: JSON.stringify(result.structuredContent) }])
        return result.structuredContent as any
      })
    return { client, call, ok } satisfies McpSession
  })
