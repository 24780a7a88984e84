/**
 * A PDF's pages as Markdown. A PDF has no headings, only text in fonts of some size: a short line set clearly larger
 * than the document's body text is taken for a heading (the largest such size `#`, the next `##`, then `###`), so the
 * Chunker can cut along them and name a chunk's section. A vertical gap wider than a line starts a paragraph.
 * Reads what unpdf's extractText reads (pdf.js's text content, page by page), with the sizes and positions it drops.
 */
import type { getDocumentProxy } from "unpdf"
import { breatheAsync } from "../util/Effects.js"

type PDFDocumentProxy = Awaited<ReturnType<typeof getDocumentProxy>>

interface Line {
  readonly text: string
  /** the font size of its largest non-blank run */
  readonly size: number
  /** its baseline, from the bottom of the page */
  readonly y: number
}

const MAX_HEADING_CHARS = 120

const round = (size: number) => Math.round(size * 2) / 2

const pageLines = async (pdf: PDFDocumentProxy, number: number): Promise<Array<Line>> => {
  const content = await (await pdf.getPage(number)).getTextContent()
  const lines: Array<Line> = []
  let text = ""
  let size = 0
  let y: number | null = null
  const push = () => {
    if (text.trim() !== "") lines.push({ text: text.replace(/\s+/g, " ").trim(), size, y: y ?? 0 })
    text = ""
    size = 0
    y = null
  }
  for (const item of content.items) {
    if (!("str" in item)) continue
    const transform = item.transform as Array<number>
    text += item.str
    if (item.str.trim() !== "") {
      size = Math.max(size, round(Math.hypot(transform[2] ?? 0, transform[3] ?? 0) || item.height))
      y ??= transform[5] ?? 0
    }
    if (item.hasEOL) push()
  }
  push()
  return lines
}

/** The size most of the text is set in (weighted by characters). */
const bodySize = (pages: ReadonlyArray<ReadonlyArray<Line>>) => {
  const weight = new Map<number, number>()
  for (const lines of pages) {
    for (const line of lines) weight.set(line.size, (weight.get(line.size) ?? 0) + line.text.length)
  }
  let best = 0
  let most = -1
  for (const [size, chars] of weight) {
    if (chars > most) [best, most] = [size, chars]
  }
  return best
}

const isHeading = (line: Line, body: number) =>
  body > 0 && line.size >= body * 1.15 && line.text.length <= MAX_HEADING_CHARS && /\p{L}/u.test(line.text)

/** Each page of `pdf` as Markdown, in order. */
export const pdfPages = async (pdf: PDFDocumentProxy): Promise<Array<string>> => {
  const pages: Array<Array<Line>> = []
  for (let number = 1; number <= pdf.numPages; number++) {
    pages.push(await pageLines(pdf, number))
    // pdf.js runs on this thread here: the server answers between pages
    await breatheAsync()
  }
  const body = bodySize(pages)
  const headingSizes = [
    ...new Set(pages.flatMap((lines) => lines.filter((l) => isHeading(l, body)).map((l) => l.size)))
  ]
    .sort((a, b) => b - a)
  const level = (size: number) => Math.min(headingSizes.indexOf(size) + 1, 3)
  return pages.map((lines) => {
    let markdown = ""
    let previous: Line | null = null
    for (const line of lines) {
      if (isHeading(line, body)) {
        markdown += `\n\n${"#".repeat(level(line.size))} ${line.text}\n\n`
        previous = null
        continue
      }
      const gap = previous === null ? 0 : previous.y - line.y
      // a gap wider than one and a half lines, or a jump up the page (the next column), ends a paragraph
      const paragraph = previous !== null && (gap > previous.size * 1.6 || gap < 0)
      markdown += previous === null ? `\n\n${line.text}` : `${paragraph ? "\n\n" : "\n"}${line.text}`
      previous = line
    }
    return markdown.replace(/\n{3,}/g, "\n\n").trim()
  })
}
