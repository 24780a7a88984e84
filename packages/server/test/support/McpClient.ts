/** The MCP SDK's client against the test server, as MCP clients connect. */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import { TestServer } from "./TestServer.js"

/** A tool result's text parts, joined. */
export const textOf = (result: CallToolResult) => result.content.map((c) => (c.type === "text" ? c.text : "")).join("\n")

/** The SDK client over Streamable HTTP with the token as a bearer header; closed with the scope. */
export const mcpClient = (token: string) =>
  Effect.flatMap(TestServer, ({ baseUrl }) =>
    Effect.acquireRelease(
      Effect.promise(async () => {
        const client = new Client({ name: "parley-test", version: "1.0.0" })
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } })
        )
        return client
      }),
      (client) => Effect.promise(() => client.close())
    ))
