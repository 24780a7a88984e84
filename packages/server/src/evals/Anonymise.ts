/**
 * "Save as eval case" keeps what a conversation says and drops who said it: e-mail addresses, phone
 * numbers and other long digit runs (order, card and account numbers), web addresses, and the
 * contact's own name, email and phone. Pure.
 */
const EMAIL = /[^\s@<>()"']+@[^\s@<>()"']+\.[A-Za-z]{2,}/g
const URL = /\bhttps?:\/\/\S+/gi
/** Seven digits or more, spaces, dots and dashes between them allowed (phone, card, account, order numbers). */
const DIGITS = /\+?\d(?:[\s.-]?\d){6,}/g

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

export interface Known {
  readonly name: string | null
  readonly email: string | null
  readonly phone: string | null
}

export const anonymise = (text: string, known: Known) => {
  let out = text
  for (const value of [known.email, known.phone]) {
    if (value) out = out.replace(new RegExp(escape(value), "gi"), "[redacted]")
  }
  out = out.replace(EMAIL, "[email]").replace(URL, "[link]").replace(DIGITS, "[number]")
  for (const part of (known.name ?? "").split(/\s+/).filter((p) => p.length >= 2)) {
    out = out.replace(new RegExp(`\\b${escape(part)}\\b`, "gi"), "[name]")
  }
  return out
}

/** A context's strings anonymised, its other values kept. */
export const anonymiseValues = (value: unknown, known: Known): unknown =>
  typeof value === "string"
    ? anonymise(value, known)
    : Array.isArray(value)
    ? value.map((v) => anonymiseValues(v, known))
    : typeof value === "object" && value !== null
    ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, anonymiseValues(v, known)]))
    : value
