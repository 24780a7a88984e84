/**
 * The MCP endpoint over the SDK's web-standard Streamable HTTP transport, stateless (a new server and
 * transport per request) with JSON responses (SPEC.md 4.5, 9). The caller has been authenticated: the
 * tools run with the request's `CurrentActor` and `McpBackend`.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import {
  CallToolRequestSchema,
  ErrorCode,
  InitializeRequestSchema,
  type InitializeResult,
  ListToolsRequestSchema,
  type ListToolsResult,
  McpError
} from "@modelcontextprotocol/sdk/types.js"
import type { CurrentActor } from "@parley/domain"
import { Effect, Runtime } from "effect"
import { z } from "zod"
import type { McpBackend } from "./Backend.js"
import { toolByName, Tools } from "./Tools.js"

/** SPEC.md 9: revision 2025-03-26 is the one this endpoint speaks; 2025-06-18 clients get their own. */
export const PROTOCOL_VERSION = "2025-03-26"
export const ACCEPTED_PROTOCOL_VERSIONS: ReadonlyArray<string> = ["2025-06-18", PROTOCOL_VERSION]

/** The requested revision when we speak it, else ours (the client then decides whether to go on). */
export const negotiateProtocolVersion = (requested: string) =>
  ACCEPTED_PROTOCOL_VERSIONS.includes(requested) ? requested : PROTOCOL_VERSION

const serverInfo = { name: "parley", title: "Parley", version: "1.0.0" }

const instructions =
  "Tools for a Parley account: analytics, discovery (pipelines, stages, actions, variables, contacts, opportunities, messages, knowledge), " +
  "building pipelines (start with start_pipeline_journey) and updating them, and conversations (read them, hand them between the agent and a person). " +
  "Tools act as the token's user and need the token's scopes."

const toolList: ListToolsResult = {
  tools: Tools.map((t) => ({
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: t.inputSchema as ListToolsResult["tools"][number]["inputSchema"],
    annotations: {
      title: t.title,
      readOnlyHint: t.readOnly,
      destructiveHint: t.destructive,
      openWorldHint: false
    }
  }))
}

const capabilities = { tools: {} }

/**
 * Registered for `tools/call` instead of the SDK's own schema: the SDK parses with the registered schema
 * before its tools/call wrapper checks the params, so a call without `name` would be an internal error
 * (-32603) rather than invalid params (-32602). The wrapper still validates against `CallToolRequestSchema`.
 */
const ToolsCall = z.object({ method: z.literal("tools/call"), params: z.unknown().optional() })

const makeServer = (runtime: Runtime.Runtime<McpBackend | CurrentActor>) => {
  const server = new Server(serverInfo, { capabilities, instructions })
  // the SDK answers initialize with its newest revision; ours is SPEC.md 9's
  server.removeRequestHandler("initialize")
  server.setRequestHandler(InitializeRequestSchema, (request): InitializeResult => ({
    protocolVersion: negotiateProtocolVersion(request.params.protocolVersion),
    capabilities,
    serverInfo,
    instructions
  }))
  server.setRequestHandler(ListToolsRequestSchema, () => toolList)
  server.setRequestHandler(ToolsCall, (raw) => {
    const request = CallToolRequestSchema.parse(raw)
    const tool = toolByName.get(request.params.name)
    if (tool === undefined) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`)
    return Runtime.runPromise(runtime)(tool.call(request.params.arguments))
  })
  return server
}

/** One JSON-RPC exchange (`POST`) or session end (`DELETE`): web Request in, web Response out. */
export const handleMcpRequest = (request: Request): Effect.Effect<Response, never, McpBackend | CurrentActor> =>
  Effect.gen(function*() {
    // the SDK calls our handlers with promises: they run on this request's runtime (its actor and backend)
    const server = makeServer(yield* Effect.runtime<McpBackend | CurrentActor>())
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true })
    yield* Effect.acquireRelease(Effect.promise(() => server.connect(transport)), () => Effect.promise(() => server.close()))
    return yield* Effect.promise(() => transport.handleRequest(request))
  }).pipe(Effect.scoped)
