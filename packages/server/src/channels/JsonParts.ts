/**
 * Reading what a provider posted without trusting its shape: every adapter's parser takes a field as the type it
 * needs or as nothing, so a body we cannot use becomes an `Unusable` event, never a thrown error.
 */
export type Json = Record<string, unknown>

export const obj = (v: unknown): Json => (typeof v === "object" && v !== null && !Array.isArray(v) ? v as Json : {})
export const arr = (v: unknown): ReadonlyArray<unknown> => (Array.isArray(v) ? v : [])
/** A string, or a finite number as its string (ids arrive as either). */
export const str = (v: unknown): string | undefined =>
  typeof v === "string" ? v : typeof v === "number" && Number.isFinite(v) ? String(v) : undefined
/** Text as Postgres stores it: no NUL. */
export const clean = (s: string) => s.replaceAll("\u0000", "")
