/**
 * The MCP endpoint over the SDK's web-standard Streamable HTTP transport, stateless (a new server and
 * transport per request) with JSON responses (SPEC.md 4.5, 9). The caller has been authenticated: the
 * tools run with the request's `CurrentActor` and `McpBackend`.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import { Protocol } from "@modelcontextprotocol/sdk/shared/protocol.js"
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  InitializeRequestSchema,
  type InitializeResult,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  type ListToolsResult,
  ReadResourceRequestSchema
} from "@modelcontextprotocol/sdk/types.js"
import type { CurrentActor } from "@parley/domain"
import { Effect, Runtime } from "effect"
import { z } from "zod"
import type { McpBackend } from "./Backend.js"
import { getPrompt, prompts } from "./Prompts.js"
import { listResources, readResource, resourceTemplates } from "./Resources.js"
import { toolByName, Tools } from "./Tools.js"

/** SPEC.md's revision 2025-03-26 and the two after it, newest first (all in the SDK's SUPPORTED_PROTOCOL_VERSIONS). */
export const ACCEPTED_PROTOCOL_VERSIONS: ReadonlyArray<string> = ["2025-11-25", "2025-06-18", "2025-03-26"]

/** The requested revision when we speak it, else the newest (lifecycle: the client then decides whether to go on). */
export const negotiateProtocolVersion = (requested: string) =>
  ACCEPTED_PROTOCOL_VERSIONS.includes(requested) ? requested : ACCEPTED_PROTOCOL_VERSIONS[0]!

const serverInfo = { name: "parley", title: "Parley", version: "1.0.0" }

const instructions =
  "Tools for a Parley account: analytics, discovery (pipelines, stages, actions, variables, contacts, opportunities, messages, knowledge), " +
  "building pipelines (start with start_pipeline_journey) and updating them, and conversations (read them, hand them between the agent and a person). " +
  "Tools act as the token's user and need the token's scopes. An update changes only the arguments given; null clears a field. " +
  "Unknown arguments are refused. Results are JSON. Lists answer has_more and next_page: " +
  "the arguments that fetch the next page from the same tool (null on the last). Changes answer next_steps: what to call next, with the ids to pass."

type Listed = ListToolsResult["tools"][number]

const toolList: ListToolsResult = {
  tools: Tools.map((t): Listed => ({
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: t.inputSchema as Listed["inputSchema"],
    outputSchema: t.outputSchema as Listed["outputSchema"],
    annotations: t.annotations
  }))
}

/**
 * A JSON-RPC error as the SDK sends it (`code`, `message`), without `McpError`'s "MCP error <code>: " prefix:
 * the client adds that prefix itself, so the message would read "MCP error -32602: MCP error -32602: ...".
 */
const rpcError = (code: number, message: string) => Object.assign(new Error(message), { code })

const capabilities = { tools: {}, resources: {}, prompts: {} }

/**
 * Registered for `tools/call` instead of the SDK's own schema: the SDK parses with the registered schema
 * before the handler runs, so a call without `name` would be an internal error (-32603) rather than invalid
 * params (-32602); the handler checks the params itself.
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
  // registered past `Server`'s own tools/call wrapper, which answers a malformed call with an McpError (the doubled
  // prefix)
  Protocol.prototype.setRequestHandler.call(server, ToolsCall, (raw) => {
    const request = CallToolRequestSchema.safeParse(raw)
    if (!request.success) {
      throw rpcError(
        ErrorCode.InvalidParams,
        `Invalid tools/call request: ${request.error.issues.map((i) => `${i.path.join(".")} ${i.message}`).join("; ")}`
      )
    }
    const tool = toolByName.get(request.data.params.name)
    if (tool === undefined) throw rpcError(ErrorCode.InvalidParams, `Unknown tool: ${request.data.params.name}`)
    return Runtime.runPromise(runtime)(tool.call(request.data.params.arguments))
  })
  server.setRequestHandler(ListResourcesRequestSchema, () => Runtime.runPromise(runtime)(listResources))
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => resourceTemplates)
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const read = await Runtime.runPromise(runtime)(Effect.either(readResource(request.params.uri)))
    if (read._tag === "Left") throw rpcError(read.left.code, read.left.message)
    return read.right
  })
  server.setRequestHandler(ListPromptsRequestSchema, () => prompts)
  server.setRequestHandler(GetPromptRequestSchema, (request) => {
    const found = getPrompt(request.params.name, request.params.arguments)
    if (found === undefined) throw rpcError(ErrorCode.InvalidParams, `Unknown prompt: ${request.params.name}`)
    if ("missing" in found) {
      throw rpcError(ErrorCode.InvalidParams, `Missing required argument: ${found.missing.join(", ")}`)
    }
    return found.prompt
  })
  return server
}

/** One JSON-RPC exchange (`POST`) or session end (`DELETE`): web Request in, web Response out. */
export const handleMcpRequest = (request: Request): Effect.Effect<Response, never, McpBackend | CurrentActor> =>
  Effect.gen(function*() {
    // the SDK calls our handlers with promises: they run on this request's runtime (its actor and backend)
    const server = makeServer(yield* Effect.runtime<McpBackend | CurrentActor>())
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true })
    yield* Effect.acquireRelease(
      Effect.promise(() => server.connect(transport)),
      () => Effect.promise(() => server.close())
    )
    return yield* Effect.promise(() => transport.handleRequest(request))
  }).pipe(Effect.scoped)
