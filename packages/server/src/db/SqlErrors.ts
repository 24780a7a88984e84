import type { SqlError } from "@effect/sql/SqlError"

/** Postgres `unique_violation` (23505), from node-pg and PGlite alike; optionally on one index. */
export const isUniqueViolation = (error: SqlError, constraint?: string): boolean => {
  const cause = error.cause as { code?: unknown; constraint?: unknown; message?: unknown } | undefined
  if (cause?.code !== "23505") return false
  if (constraint === undefined) return true
  return cause.constraint === constraint || String(cause.message ?? "").includes(constraint)
}
