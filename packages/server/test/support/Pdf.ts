/**
 * A PDF written by hand, for the tests and benchmarks that read documents: no PDF library writes one small enough to
 * reason about, and pdf.js (which the server reads with, through unpdf) needs only the objects below. One page per
 * entry of `pages`, each a list of [font size, line] in Helvetica (a larger size is what the server takes for a
 * heading; an empty line leaves a paragraph's gap), an Info dictionary with `title`, and with `encrypted` an /Encrypt
 * dictionary whose user password is not empty. Text is ASCII: xref offsets are counted in characters.
 *
 * ```ts
 * pdf([[[16, "Pricing"], [11, "Two plans."], [11, ""], [11, "Annual: 990 euros."]]], { title: "Handbook" })
 * ```
 */

/** A line's text as a PDF string literal's content: its backslashes and parentheses escaped. */
const literal = (text: string) => text.replace(/[\\()]/g, (c) => `\\${c}`)

export const pdf = (
  pages: ReadonlyArray<ReadonlyArray<readonly [size: number, line: string]>>,
  options: { readonly title?: string; readonly encrypted?: boolean } = {}
): Uint8Array => {
  const objects = ["<< /Type /Catalog /Pages 2 0 R >>", "", "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
  const kids: Array<string> = []
  for (const lines of pages) {
    let y = 760
    const stream = lines.map(([size, text]) => {
      y -= text === "" ? size : size * 1.3
      return text === "" ? "" : `BT /F1 ${size} Tf 72 ${y.toFixed(1)} Td (${literal(text)}) Tj ET`
    }).filter((l) => l !== "").join("\n")
    objects.push(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${objects.length + 2} 0 R ` +
        "/Resources << /Font << /F1 3 0 R >> >> >>"
    )
    kids.push(`${objects.length} 0 R`)
    objects.push(`<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`)
  }
  objects[1] = `<< /Type /Pages /Kids [${kids.join(" ")}] /Count ${kids.length} >>`
  if (options.title !== undefined) objects.push(`<< /Title (${literal(options.title)}) >>`)
  const info = options.title !== undefined ? ` /Info ${objects.length} 0 R` : ""
  if (options.encrypted) {
    const hex = (c: string) => `<${c.repeat(64)}>`
    objects.push(`<< /Filter /Standard /V 1 /R 2 /O ${hex("a")} /U ${hex("b")} /P -4 >>`)
  }
  const encrypt = options.encrypted ? ` /Encrypt ${objects.length} 0 R /ID [<0123456789abcdef> <0123456789abcdef>]` : ""
  const parts: Array<string> = ["%PDF-1.4\n"]
  let length = parts[0]!.length
  const offsets = objects.map((o, i) => {
    const at = length
    const part = `${i + 1} 0 obj\n${o}\nendobj\n`
    parts.push(part)
    length += part.length
    return at
  })
  parts.push(
    `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n` +
      offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("") +
      `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R${info}${encrypt} >>\nstartxref\n${length}\n%%EOF\n`
  )
  return new TextEncoder().encode(parts.join(""))
}
