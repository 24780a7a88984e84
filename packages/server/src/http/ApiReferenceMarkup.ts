/** Text to HTML for the API reference: escaping, anchors, and the little markdown of its descriptions. */
import { escapeHtml } from "./PageHeaders.js"

export { escapeHtml }

export const code = (s: string) => `<code>${escapeHtml(s)}</code>`

/** The little markdown our descriptions use within a line: `code` and **bold**. */
export const inline = (line: string) =>
  escapeHtml(line).replace(/`([^`]+)`/g, "<code>$1</code>").replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")

/** Descriptions: paragraphs and `- ` lists of `inline` text. */
export const prose = (text: string) => {
  const blocks: Array<string> = []
  let paragraph: Array<string> = []
  let list: Array<string> = []
  const flush = () => {
    if (paragraph.length > 0) blocks.push(`<p>${paragraph.map(inline).join(" ")}</p>`)
    if (list.length > 0) blocks.push(`<ul>${list.map((item) => `<li>${inline(item)}</li>`).join("")}</ul>`)
    paragraph = []
    list = []
  }
  for (const raw of text.split("\n")) {
    const line = raw.trim()
    if (line === "") flush()
    else if (line.startsWith("- ")) {
      if (paragraph.length > 0) flush()
      list.push(line.slice(2))
    } else {
      if (list.length > 0) flush()
      paragraph.push(line)
    }
  }
  flush()
  return blocks.join("")
}

export const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`

export const slug = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "")
