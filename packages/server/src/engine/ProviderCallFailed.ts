/**
 * The one failure of a call to a model server, and how an HTTP answer becomes it. The reason is what the API
 * (a provider check) and the agent act on; the message is one sentence for the operator, carrying the server's
 * own complaint (Ollama's "does not support tools") but never the key nor a header value.
 */
import type { Headers } from "@effect/platform"
import { Data } from "effect"

export type ProviderFailureReason =
  | "unreachable"
  | "timeout"
  | "unauthorized"
  | "not_found"
  | "rate_limited"
  | "server_error"
  | "bad_request"
  | "malformed"

export class ProviderCallFailed extends Data.TaggedError("ProviderCallFailed")<{
  readonly reason: ProviderFailureReason
  readonly status?: number | undefined
  /** a 429's `retry-after-ms` or `retry-after` (seconds or an HTTP date) */
  readonly retryAfterMs?: number | undefined
  readonly message: string
}> {}

/** of the server's own text kept in a message */
export const MAX_PROVIDER_TEXT = 300

/** The server's own words from an error body: OpenAI's and Gemini's `error.message`, `{error: "..."}`, `detail`. */
const providerText = (body: string): string | undefined => {
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    const text = body.trim()
    return text !== "" && !text.startsWith("<") ? text : undefined
  }
  const pick = (value: unknown): string | undefined => {
    if (typeof value === "string") return value
    if (typeof value !== "object" || value === null) return undefined
    const record = value as Record<string, unknown>
    return pick(record.message) ?? pick(record.error) ?? pick(record.detail)
  }
  return pick(parsed)
}

/** `retry-after-ms` (as OpenAI's SDKs read it) or `retry-after`: delta seconds or an HTTP date. */
const retryAfter = (headers: Headers.Headers, now: number): number | undefined => {
  const ms = Number(headers["retry-after-ms"])
  if (headers["retry-after-ms"] !== undefined && Number.isFinite(ms) && ms >= 0) return ms
  const value = headers["retry-after"]?.trim()
  if (value === undefined || value === "") return undefined
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000)
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/** The error an answer of status `status` is, with the server's text scrubbed of every secret we sent. */
export const statusFailure = (answer: {
  readonly status: number
  readonly headers: Headers.Headers
  readonly text: string
  /** what a 404 says is missing: "such model or endpoint (...)" */
  readonly what: string
  /** removes every secret sent from the server's text (some servers echo a wrong key) */
  readonly scrub: (text: string) => string
  readonly hasKey: boolean
  readonly now: number
}): ProviderCallFailed => {
  const { hasKey, headers, now, scrub, status, what } = answer
  const said = providerText(answer.text)
  const tail = said === undefined ? "" : `: ${scrub(said).slice(0, MAX_PROVIDER_TEXT)}`
  if (status === 401 || status === 403) {
    const refused = hasKey ? "refused the API key" : "requires an API key"
    return new ProviderCallFailed({
      reason: "unauthorized",
      status,
      message: `The model server ${refused} (${status})${tail}`
    })
  }
  if (status === 404) {
    return new ProviderCallFailed({
      reason: "not_found",
      status,
      message: `The model server has no ${what} (404)${tail}`
    })
  }
  if (status === 429) {
    return new ProviderCallFailed({
      reason: "rate_limited",
      status,
      retryAfterMs: retryAfter(headers, now),
      message: `The model server is rate limiting requests (429)${tail}`
    })
  }
  return status >= 500
    ? new ProviderCallFailed({ reason: "server_error", status, message: `The model server failed (${status})${tail}` })
    : new ProviderCallFailed({
      reason: "bad_request",
      status,
      message: `The model server rejected the request (${status})${tail}`
    })
}

/** `ECONNREFUSED`, `ENOTFOUND`...: the first error code in the transport failure's causes. */
export const errorCode = (cause: unknown, depth = 0): string | undefined => {
  if (typeof cause !== "object" || cause === null || depth > 4) return undefined
  const { code, cause: inner } = cause as { code?: unknown; cause?: unknown }
  return typeof code === "string" ? code : errorCode(inner, depth + 1)
}
