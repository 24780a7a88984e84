/**
 * The body of a `POST /mcp` checked against JSON-RPC 2.0 before the SDK transport sees it, for what
 * the transport gets wrong: a message that is JSON but not JSON-RPC is an invalid request (-32600, not
 * a parse error); an empty batch is one invalid-request error (not a 202); a batch is answered with an
 * array, also when it holds one request; each invalid member of a batch gets its own error.
 *
 * Batches exist only in revision 2025-03-26 (and older): 2025-06-18 removed them, so a request that
 * says it speaks 2025-06-18 or later (`MCP-Protocol-Version`) and sends an array is an invalid request.
 * A request without the header speaks 2025-03-26 (the transport's rule for a missing header).
 * `initialize` is never part of a batch (2025-03-26, lifecycle).
 */
import { JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js"

const INVALID_REQUEST = -32600
const BATCHES_REMOVED_IN = "2025-06-18"
const UNVERSIONED = "2025-03-26"

type Id = string | number | null

/** A JSON-RPC error response (`id` null when the request's id could not be read). */
export interface RpcError {
  readonly jsonrpc: "2.0"
  readonly id: Id
  readonly error: { readonly code: number; readonly message: string }
}

export type Inspected =
  /** One message, or no JSON at all: the transport answers it (a parse error is its to give). */
  | { readonly _tag: "Single" }
  /** Refused as a whole: one error object. */
  | { readonly _tag: "Invalid"; readonly error: RpcError }
  /** A batch: the valid members go to the transport, each invalid one is answered with its error. */
  | { readonly _tag: "Batch"; readonly valid: ReadonlyArray<unknown>; readonly errors: ReadonlyArray<RpcError> }

export const invalidRequest = (message: string, id: Id = null): RpcError => ({
  jsonrpc: "2.0",
  id,
  error: { code: INVALID_REQUEST, message: `Invalid Request: ${message}` }
})

const parse = (text: string): { readonly json: unknown } | undefined => {
  try {
    return { json: JSON.parse(text) as unknown }
  } catch {
    return undefined
  }
}

/** The id of a message that is not valid, when it has a usable one (JSON-RPC 2.0 5: else null). */
const idOf = (message: unknown): Id => {
  if (typeof message !== "object" || message === null || !("id" in message)) return null
  const id = message.id
  return typeof id === "string" || typeof id === "number" ? id : null
}

const isMessage = (message: unknown) => JSONRPCMessageSchema.safeParse(message).success

const NOT_A_MESSAGE = "not a JSON-RPC 2.0 request, notification or response."

export const inspectBody = (text: string, protocolVersion: string | undefined): Inspected => {
  const parsed = parse(text)
  if (parsed === undefined) return { _tag: "Single" }
  const body = parsed.json
  if (!Array.isArray(body)) {
    return isMessage(body)
      ? { _tag: "Single" }
      : { _tag: "Invalid", error: invalidRequest(`the body is ${NOT_A_MESSAGE}`, idOf(body)) }
  }
  const version = protocolVersion ?? UNVERSIONED
  if (version >= BATCHES_REMOVED_IN) {
    return {
      _tag: "Invalid",
      error: invalidRequest(
        `MCP ${version} has no JSON-RPC batches (removed in ${BATCHES_REMOVED_IN}); send one message per request.`
      )
    }
  }
  if (body.length === 0) return { _tag: "Invalid", error: invalidRequest("an empty batch.") }
  const valid: Array<unknown> = []
  const errors: Array<RpcError> = []
  body.forEach((member, index) => {
    if (!isMessage(member)) errors.push(invalidRequest(`batch member ${index} is ${NOT_A_MESSAGE}`, idOf(member)))
    else if ((member as { method?: unknown }).method === "initialize") {
      errors.push(invalidRequest("initialize must not be part of a batch.", idOf(member)))
    } else valid.push(member)
  })
  return { _tag: "Batch", valid, errors }
}

/**
 * The transport's answer to a batch's valid members, as JSON-RPC 2.0 6 wants it: an array (the
 * transport answers a single response as an object), with the invalid members' errors; nothing at
 * all (202) only when there is nothing to answer. A refusal of the whole request (4xx with one
 * error) stays as it is.
 */
export const batchAnswer = async (answer: Response | undefined, errors: ReadonlyArray<RpcError>): Promise<Response> => {
  if (answer === undefined) return Response.json(errors, { status: 400 })
  if (answer.status === 202) return errors.length === 0 ? answer : Response.json(errors, { status: 200 })
  if (answer.status !== 200) return answer
  const responses = (await answer.json()) as unknown
  const headers = new Headers(answer.headers)
  headers.delete("content-length")
  return Response.json([...(Array.isArray(responses) ? responses : [responses]), ...errors], { status: 200, headers })
}
