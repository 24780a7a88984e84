/**
 * A PPTX's slides as text, its zip parts read by OfficeZip.ts and their XML streamed by OfficeXml.ts: per slide, in
 * the presentation's order, the text of its title placeholder and of its other shapes and tables in the order the
 * slide lists them. Shapes are blocks (a blank line between them), paragraphs lines, a table row its cells joined by
 * ` | `. Speaker notes are not read.
 */
import { elementsNamed, relationshipId, relationships, streamXml } from "./OfficeXml.js"
import { type OfficeZip, openZip } from "./OfficeZip.js"

export interface Slide {
  /** 1-based, in the presentation's order */
  readonly number: number
  readonly title: string | null
  readonly text: string
}

/** A line that would read as a Markdown heading is escaped: only a slide's title is one. */
const plain = (line: string) => line.startsWith("#") ? `\\${line}` : line

/** A shape (`p:sp`) or a frame (`p:graphicFrame`, a table's) being read: its paragraphs, or its table's rows. */
interface Shape {
  readonly frame: boolean
  /** it is a title placeholder (`<p:ph type="title">`, or a title slide's `ctrTitle`) */
  title: boolean
  readonly paragraphs: Array<string>
  readonly rows: Array<string>
}

/**
 * A slide's title and text, streamed: shapes and tables in the slide's order (those in groups included), a DrawingML
 * paragraph (`a:p`) its runs (`a:t`) with a line break (`a:br`) as a space, a table row (`a:tr`) its cells (`a:tc`).
 */
const slideOf = (xml: string, number: number): Slide => {
  let title: string | null = null
  const blocks: Array<string> = []
  let shape: Shape | undefined
  let paragraph: string | undefined
  let inText = false
  let row: Array<string> | undefined
  let cell: Array<string> | undefined
  const finish = (done: Shape) => {
    if (done.frame) {
      const rows = done.rows.filter((r) => r.replace(/[\s|]/g, "") !== "")
      if (rows.length > 0) blocks.push(rows.map(plain).join("\n"))
    } else if (title === null && done.title) {
      title = done.paragraphs.join(" ") || null
    } else if (done.paragraphs.length > 0) {
      blocks.push(done.paragraphs.map(plain).join("\n"))
    }
  }
  streamXml(xml, {
    open: (name, attributes) => {
      if (name === "sp" || name === "graphicFrame") {
        shape = { frame: name === "graphicFrame", title: false, paragraphs: [], rows: [] }
      } else if (name === "ph" && shape !== undefined) {
        shape.title ||= attributes.type === "title" || attributes.type === "ctrTitle"
      } else if (name === "tr") row = []
      else if (name === "tc") cell = []
      else if (name === "p") paragraph = ""
      else if (name === "t") inText = true
      else if (name === "br" && paragraph !== undefined) paragraph += " "
    },
    text: (text) => {
      if (inText && paragraph !== undefined) paragraph += text
    },
    close: (name) => {
      if (name === "t") inText = false
      else if (name === "p" && paragraph !== undefined) {
        const text = paragraph.replace(/\s+/g, " ").trim()
        if (text !== "") (cell ?? shape?.paragraphs)?.push(text)
        paragraph = undefined
      } else if (name === "tc" && cell !== undefined) {
        row?.push(cell.join(" "))
        cell = undefined
      } else if (name === "tr" && row !== undefined) {
        shape?.rows.push(row.join(" | "))
        row = undefined
      } else if ((name === "sp" || name === "graphicFrame") && shape !== undefined) {
        finish(shape)
        shape = undefined
      }
    }
  })
  return { number, title, text: blocks.join("\n\n") }
}

/** The slides' parts in the presentation's order: its slide list, else their file numbers. */
const slidePaths = (zip: OfficeZip) => {
  const presentation = zip.text("ppt/presentation.xml")
  if (presentation === undefined) throw new Error("no ppt/presentation.xml: not a PPTX")
  const rels = relationships(zip.text("ppt/_rels/presentation.xml.rels"), "ppt")
  const listed = elementsNamed(presentation, "sldId").map((slide) => {
    const id = relationshipId(slide)
    return id === undefined ? undefined : rels.get(id)
  }).filter((path): path is string => path !== undefined)
  if (listed.length > 0) return listed
  const number = (name: string) => Number(/(\d+)\.xml$/.exec(name)?.[1] ?? 0)
  return zip.names.filter((name) => /^ppt\/slides\/slide\d+\.xml$/.test(name)).sort((a, b) => number(a) - number(b))
}

/** A PPTX's slides in order. Throws on bytes that are not a PPTX. */
export const pptxSlides = (bytes: Uint8Array): Array<Slide> => {
  const zip = openZip(bytes)
  const slides: Array<Slide> = []
  for (const path of slidePaths(zip)) {
    const xml = zip.text(path)
    if (xml !== undefined) slides.push(slideOf(xml, slides.length + 1))
  }
  return slides
}
