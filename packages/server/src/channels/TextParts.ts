/**
 * Text cut into parts of at most `max` characters (a provider's limit on one message), at a paragraph, line or word
 * break where there is one.
 */
export const splitText = (text: string, max: number): ReadonlyArray<string> => {
  const parts: Array<string> = []
  let rest = text
  while (rest.length > max) {
    const window = rest.slice(0, max)
    // a paragraph break in the second half, else a line break, else a word break, else the limit itself
    const at = [window.lastIndexOf("\n\n"), window.lastIndexOf("\n"), window.lastIndexOf(" ")].find((cut) =>
      cut > max / 2
    ) ?? max
    parts.push(rest.slice(0, at).trimEnd())
    rest = rest.slice(at).trimStart()
  }
  if (rest.length > 0 || parts.length === 0) parts.push(rest)
  return parts
}
