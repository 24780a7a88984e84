/**
 * Phone identifiers are digits only, with the country code and no `+` (SPEC.md 2.2). Clients send
 * `+49 151 2345-678`, `(0049) 151 2345678` or `491512345678`; all become `491512345678`.
 */
const separators = /[\s\-()./]/g

export const normalisePhone = (input: string): string | undefined => {
  let s = input.trim().replace(separators, "")
  if (s.startsWith("+")) s = s.slice(1)
  else if (s.startsWith("00")) s = s.slice(2)
  // E.164: at most 15 digits; anything shorter than 7 cannot carry a country code and a number
  return /^[1-9]\d{6,14}$/.test(s) ? s : undefined
}

export const isAllDigits = (s: string) => /^\d+$/.test(s)
