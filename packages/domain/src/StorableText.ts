/**
 * Text Postgres cannot store: `text` and `jsonb` refuse the NUL character, and `jsonb` refuses an
 * unpaired UTF-16 surrogate (`"\ud800"` is valid JSON but no Unicode text). Such input is refused with a
 * message naming the field before it reaches SQL, on every surface (REST, receiver, MCP).
 */
import { Schema } from "effect"
import { fieldOf } from "./Envelope.js"

const NUL = "\u0000"
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

export type UnstorableReason = "nul" | "surrogate"

export const unstorableReason = (s: string): UnstorableReason | undefined =>
  s.includes(NUL) ? "nul" : LONE_SURROGATE.test(s) ? "surrogate" : undefined

export const unstorableMessage = (reason: UnstorableReason): string =>
  reason === "nul" ? "must not contain NUL characters" : "must be valid Unicode text (it holds an unpaired surrogate)"

export interface UnstorableText {
  readonly field: string
  readonly reason: UnstorableReason
}

/**
 * The first string (or object key) in a decoded JSON value that cannot be stored, with its path
 * (`contact.email`, `points.0.data`); a bad key is reported at the object holding it.
 */
export const findUnstorableText = (
  value: unknown,
  path: ReadonlyArray<PropertyKey> = []
): UnstorableText | undefined => {
  if (typeof value === "string") {
    const reason = unstorableReason(value)
    return reason === undefined ? undefined : { field: fieldOf(path), reason }
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnstorableText(value[i], [...path, i])
      if (found) return found
    }
    return undefined
  }
  if (typeof value === "object" && value !== null) {
    for (const [key, inner] of Object.entries(value)) {
      const reason = unstorableReason(key)
      if (reason !== undefined) return { field: fieldOf(path), reason }
      const found = findUnstorableText(inner, [...path, key])
      if (found) return found
    }
  }
  return undefined
}

/** Cheap pre-check of raw JSON text: only text that could hold such a string is parsed and walked. */
export const mayHoldUnstorableText = (json: string): boolean =>
  /\\u0000|\\u[dD][89a-fA-F]/.test(json) || json.includes(NUL)

/** A string schema refusing what cannot be stored (for fields that do not arrive as JSON, like multipart). */
export const StorableString = Schema.String.pipe(
  Schema.filter((s) => {
    const reason = unstorableReason(s)
    return reason === undefined ? undefined : unstorableMessage(reason)
  })
)

/**
 * File names and MIME types are metadata: control characters and unpaired surrogates are dropped rather than refused.
 */
export const storableName = (s: string): string =>
  // eslint-disable-next-line no-control-regex
  s.replace(/[\u0000-\u001f\u007f]/g, "").replace(new RegExp(LONE_SURROGATE.source, "g"), "\ufffd")
