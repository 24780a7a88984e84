/**
 * How large a request body may be, per listener and route (docs/api.md "Limits and bad input"), and how
 * each listener words a refusal: the REST envelope on the api listener (JSON-RPC on `/mcp`), the
 * receiver's `{status, message, data}` on the receiver.
 */
import { HttpServerResponse } from "@effect/platform"
import {
  errorBody,
  MAX_OPERATOR_FILE_BYTES,
  MAX_OPERATOR_FILES,
  MAX_SOURCE_FILE_BYTES,
  ValidationIssue
} from "@parley/domain"
import { isWebhookPath } from "../channels/WebhookPath.js"
import type { ListenerPolicy } from "./RequestGuard.js"

const KB = 1024
const MB = 1024 * KB

export interface BodyLimit {
  readonly bytes: number
}

const limit = (bytes: number): BodyLimit => ({ bytes })

/** JSON and form bodies, unless a route says otherwise. */
export const JSON_BODY = limit(1 * MB)
/** `PUT .../points`: up to 1,000 points a request (KnowledgeApi), a few KB each. */
export const KNOWLEDGE_POINTS_BODY = limit(16 * MB)
/** Each part's headers count too: some slack per file, the exact per-file sizes are checked by the routes. */
const PART_SLACK = 16 * KB
/** Operator sends (SPEC.md 4.2): 10 files of 25 MB and the text. */
export const OPERATOR_MULTIPART_BODY = limit(MAX_OPERATOR_FILES * (MAX_OPERATOR_FILE_BYTES + PART_SLACK) + 1 * MB)
/** A knowledge source's file (issue 41): one file of 50 MB; more is a 413 before it is read. */
export const KNOWLEDGE_SOURCE_BODY = limit(MAX_SOURCE_FILE_BYTES + PART_SLACK)
/** Receiver inbound messages (SPEC.md 4.4): 10 files of 5 MB and the fields. */
export const RECEIVER_MULTIPART_BODY = limit(10 * (5 * MB + PART_SLACK) + 1 * MB)

export const describeLimit = ({ bytes }: BodyLimit) =>
  bytes % MB === 0 ? `${bytes / MB} MB` : `${(bytes / MB).toFixed(1)} MB`

const OPERATOR_SEND = /^\/api\/user\/[^/]+\/messages$/
const KNOWLEDGE_POINTS = /^\/api\/user\/knowledge-tables\/[^/]+\/points$/
const KNOWLEDGE_SOURCES = /^\/api\/user\/knowledge-tables\/[^/]+\/sources$/

const rpcError = (status: number, message: string) =>
  HttpServerResponse.unsafeJson(
    { jsonrpc: "2.0", error: { code: status >= 500 ? -32603 : -32600, message }, id: null },
    { status }
  )

export const ApiPolicy: ListenerPolicy = {
  name: "api",
  bodyLimit: (method, path, contentType) => {
    if (method === "POST" && contentType.includes("multipart/form-data") && OPERATOR_SEND.test(path)) {
      return OPERATOR_MULTIPART_BODY
    }
    if (method === "PUT" && KNOWLEDGE_POINTS.test(path)) return KNOWLEDGE_POINTS_BODY
    if (method === "POST" && contentType.includes("multipart/form-data") && KNOWLEDGE_SOURCES.test(path)) {
      return KNOWLEDGE_SOURCE_BODY
    }
    return JSON_BODY
  },
  refuse: (path, status, message, validation = []) =>
    path === "/mcp"
      ? rpcError(status, message)
      : HttpServerResponse.unsafeJson(errorBody(status, message, validation.map((v) => new ValidationIssue(v))), {
        status
      }),
  invalidTextStatus: (path) => path.startsWith("/api/") ? 422 : 400,
  checksBodyText: (path) => path !== "/mcp"
}

export const ReceiverPolicy: ListenerPolicy = {
  name: "receiver",
  bodyLimit: (method, path, contentType) =>
    method === "POST" && path === "/web-chat/message" && contentType.includes("multipart/form-data")
      ? RECEIVER_MULTIPART_BODY
      : JSON_BODY,
  refuse: (_path, status, message, validation = []) =>
    HttpServerResponse.unsafeJson({ status: false, message, data: validation.length > 0 ? { validation } : null }, {
      status
    }),
  invalidTextStatus: () => 400,
  // a provider's webhook is checked by its signature over the raw bytes; its adapter keeps text storable
  checksBodyText: (path) => !isWebhookPath(path)
}

/** The CLI's loopback listener: knowledge imports send their batches here while a server holds the data dir. */
export const AdminPolicy: ListenerPolicy = {
  name: "admin",
  bodyLimit: () => limit(64 * MB),
  refuse: (_path, status, message) => HttpServerResponse.unsafeJson({ ok: false, error: message }, { status }),
  invalidTextStatus: () => 400,
  checksBodyText: () => true
}
