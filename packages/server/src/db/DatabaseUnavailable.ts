/**
 * Whether a failure means the database is away (Postgres restarting, refusing connections, the
 * connection cut) rather than a defect: the listeners answer such a request 503 with Retry-After, so a
 * client retries instead of reading a 500, and the log says what happened at Warning.
 */
import { Cause, Chunk } from "effect"

/** Node socket errors of a connection that could not be made or was cut. */
const socketCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "ENOTFOUND"
])

/**
 * Postgres SQLSTATEs of the same: class 08 (connection exception), 57P01-57P03 (admin or crash
 * shutdown, cannot connect now), 53300 (too many connections).
 */
const isUnavailableSqlState = (code: string) =>
  code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03" || code === "53300"

/** node-postgres' own messages for a connection that ended or never came. */
const pgMessages = [
  /^Connection terminated/,
  /timeout exceeded when trying to connect/,
  /is not queryable/,
  /^Client was closed/
]

const isUnavailableError = (error: unknown, depth = 0): boolean => {
  if (depth > 5 || typeof error !== "object" || error === null) return false
  const { cause, code, message } = error as {
    readonly code?: unknown
    readonly message?: unknown
    readonly cause?: unknown
  }
  if (
    typeof code === "string" && (socketCodes.has(code) || (/^[0-9A-Z]{5}$/.test(code) && isUnavailableSqlState(code)))
  ) return true
  if (typeof message === "string" && pgMessages.some((pattern) => pattern.test(message))) return true
  // AggregateError (a host with several addresses) and SqlError's cause
  const errors = (error as { readonly errors?: unknown }).errors
  if (Array.isArray(errors) && errors.some((e) => isUnavailableError(e, depth + 1))) return true
  return isUnavailableError(cause, depth + 1)
}

/** The SqlError in an error's cause chain, if any (a domain error may wrap one). */
const sqlErrorIn = (error: unknown, depth = 0): { readonly cause: unknown } | undefined => {
  if (depth > 5 || typeof error !== "object" || error === null) return undefined
  if ((error as { readonly _tag?: unknown })._tag === "SqlError") return error as { readonly cause: unknown }
  return sqlErrorIn((error as { readonly cause?: unknown }).cause, depth + 1)
}

/**
 * Every failure and defect in `cause` (at least one) is a SqlError whose cause is the database being
 * away; an outbound call's refused connection is not.
 */
export const isDatabaseUnavailable = (cause: Cause.Cause<unknown>): boolean => {
  const errors = [...Chunk.toReadonlyArray(Cause.failures(cause)), ...Chunk.toReadonlyArray(Cause.defects(cause))]
  return errors.length > 0 && errors.every((error) => {
    const sqlError = sqlErrorIn(error)
    return sqlError !== undefined && isUnavailableError(sqlError.cause)
  })
}

export const DATABASE_UNAVAILABLE_MESSAGE = "The database is unavailable; try again in a moment."
