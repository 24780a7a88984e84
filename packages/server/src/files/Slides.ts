/**
 * A PPTX's slides as text, read from its zip parts (OfficeZip.ts): per slide, in the presentation's order, the text of
 * its title placeholder and of its other shapes and tables in the order the slide lists them. Shapes are blocks (a
 * blank line between them), paragraphs lines, a table row its cells joined by ` | `. Speaker notes are not read.
 */
import { attributesOf, decodeXml, readText, relationships, zipEntries } from "./OfficeZip.js"

export interface Slide {
  /** 1-based, in the presentation's order */
  readonly number: number
  readonly title: string | null
  readonly text: string
}

/** A line that would read as a Markdown heading is escaped: only a slide's title is one. */
const plain = (line: string) => line.startsWith("#") ? `\\${line}` : line

/** A DrawingML paragraph's runs, a line break as a space. */
const paragraphText = (xml: string) =>
  Array.from(
    xml.matchAll(/<a:t(?:\s[^>]*)?>([\s\S]*?)<\/a:t>|<a:br\b/g),
    (m) => m[1] === undefined ? " " : decodeXml(m[1])
  )
    .join("").replace(/\s+/g, " ").trim()

const paragraphs = (xml: string) =>
  Array.from(xml.matchAll(/<a:p(?:\s[^>]*)?>([\s\S]*?)<\/a:p>/g), (m) => paragraphText(m[1]!)).filter((p) => p !== "")

const tableText = (xml: string) =>
  Array.from(
    xml.matchAll(/<a:tr\b[\s\S]*?<\/a:tr>/g),
    (row) =>
      Array.from(row[0].matchAll(/<a:tc\b[\s\S]*?<\/a:tc>/g), (cell) => paragraphs(cell[0]).join(" ")).join(" | ")
  )
    .filter((row) => row.replace(/[\s|]/g, "") !== "")

const TITLE = /<p:ph\b[^>]*type="(?:title|ctrTitle)"/

const slideOf = (xml: string, number: number): Slide => {
  let title: string | null = null
  const blocks: Array<string> = []
  for (const m of xml.matchAll(/<p:sp(?:\s[^>]*)?>[\s\S]*?<\/p:sp>|<p:graphicFrame\b[\s\S]*?<\/p:graphicFrame>/g)) {
    const shape = m[0]
    if (shape.startsWith("<p:graphicFrame")) {
      const rows = tableText(shape)
      if (rows.length > 0) blocks.push(rows.map(plain).join("\n"))
    } else if (title === null && TITLE.test(shape)) {
      title = paragraphs(shape).join(" ") || null
    } else {
      const lines = paragraphs(shape)
      if (lines.length > 0) blocks.push(lines.map(plain).join("\n"))
    }
  }
  return { number, title, text: blocks.join("\n\n") }
}

/** The slides' parts in the presentation's order: its slide list, else their file numbers. */
const slidePaths = (bytes: Uint8Array, entries: ReturnType<typeof zipEntries>) => {
  const presentation = readText(bytes, entries, "ppt/presentation.xml")
  if (presentation === undefined) throw new Error("no ppt/presentation.xml: not a PPTX")
  const rels = relationships(readText(bytes, entries, "ppt/_rels/presentation.xml.rels"), "ppt")
  const listed = Array.from(presentation.matchAll(/<p:sldId\b[^>]*>/g), (m) => {
    const id = Object.entries(attributesOf(m[0])).find(([key]) => key.endsWith(":id"))?.[1]
    return id === undefined ? undefined : rels.get(id)
  }).filter((path): path is string => path !== undefined)
  if (listed.length > 0) return listed
  const number = (name: string) => Number(/(\d+)\.xml$/.exec(name)?.[1] ?? 0)
  return entries.map((e) => e.name).filter((name) => /^ppt\/slides\/slide\d+\.xml$/.test(name))
    .sort((a, b) => number(a) - number(b))
}

/** A PPTX's slides in order. Throws on bytes that are not a PPTX. */
export const pptxSlides = (bytes: Uint8Array): Array<Slide> => {
  const entries = zipEntries(bytes)
  const slides: Array<Slide> = []
  for (const path of slidePaths(bytes, entries)) {
    const xml = readText(bytes, entries, path)
    if (xml !== undefined) slides.push(slideOf(xml, slides.length + 1))
  }
  return slides
}
