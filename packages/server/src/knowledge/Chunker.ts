/**
 * A document cut into the chunks a knowledge source stores as points: along its headings (a heading starts a chunk
 * and names its section) and its paragraphs (packed up to `size` characters; one longer than `size` is cut at a
 * sentence end, else a space). Each chunk begins with the last `overlap` characters of the chunk before it in the same
 * section, so a sentence cut at a chunk's end is still found whole. A chunk under a heading starts with its section
 * path ("Pricing > Plans" and a blank line), so its embedding and its keywords know where it sits; the path counts in
 * the chunk's size. Pure and linear in the text's length.
 */
import { CHUNK_OVERLAP, CHUNK_SIZE } from "@parley/domain"
import { createHash } from "node:crypto"

export interface ChunkOptions {
  /** characters a chunk holds at most (its overlap included) */
  readonly size: number
  /** characters of the previous chunk's end repeated at the start of the next one of the same section */
  readonly overlap: number
}

/** A table's chunking unless it sets its own (`chunk_size`, `chunk_overlap`: domain Knowledge.ts has the bounds). */
export const DEFAULT_CHUNK_OPTIONS: ChunkOptions = { size: CHUNK_SIZE.default, overlap: CHUNK_OVERLAP.default }

export interface SourceDocument {
  readonly title: string | null
  /** page: a PDF's page number; null for other documents. markdown: headings as `#` lines */
  readonly pages: ReadonlyArray<{ readonly page: number | null; readonly markdown: string }>
}

export interface Chunk {
  /** 0-based, in document order */
  readonly position: number
  /** its section path, a blank line, then its paragraphs */
  readonly text: string
  /** the document's title */
  readonly title: string | null
  /** the heading path, "Pricing > Annual plan" */
  readonly section: string | null
  readonly page: number | null
  /** sha256 hex of text and section: the same chunk in the next sync has the same hash, so its point is kept */
  readonly hash: string
}

type Block = { readonly heading: number; readonly text: string }

const HEADING = /^(#{1,6})[ \t]+(.+?)[ \t#]*$/
const FENCE = /^\s*(```|~~~)/

/** A page's headings and paragraphs (blank-line separated); a fenced code block is one paragraph, `#` in it no heading. */
const blocks = (markdown: string): Array<Block> => {
  const out: Array<Block> = []
  let paragraph: Array<string> = []
  let fenced = false
  const flush = () => {
    const text = paragraph.join("\n").trim()
    if (text !== "") out.push({ heading: 0, text })
    paragraph = []
  }
  for (const line of markdown.replace(/\r\n?/g, "\n").split("\n")) {
    if (FENCE.test(line)) fenced = !fenced
    const heading = fenced ? null : HEADING.exec(line)
    if (heading !== null) {
      flush()
      out.push({ heading: heading[1]!.length, text: heading[2]!.trim() })
    } else if (!fenced && line.trim() === "") {
      flush()
    } else {
      paragraph.push(line.trimEnd())
    }
  }
  flush()
  return out
}

const SENTENCE_END = /[.!?…。！？][)"'”’\]]*\s+/g

/** Where to end a piece of `text` that starts at `from` and holds at most `max` characters: a sentence end, else a space. */
const cutAt = (text: string, from: number, max: number) => {
  const limit = from + max
  if (limit >= text.length) return text.length
  const window = text.slice(from, limit + 1)
  let sentence = -1
  SENTENCE_END.lastIndex = 0
  for (let m = SENTENCE_END.exec(window); m !== null; m = SENTENCE_END.exec(window)) {
    if (m.index + m[0].length <= max + 1) sentence = m.index + m[0].length
  }
  // a cut that keeps less than half of the piece would make many small chunks: a space, else a hard cut, is better
  if (sentence >= max / 2) return from + sentence
  const space = window.slice(0, max).search(/\s\S*$/)
  if (space >= max / 2) return from + space + 1
  // never between the halves of a surrogate pair
  return /[\uD800-\uDBFF]/.test(text[limit - 1]!) ? limit - 1 : limit
}

/** A paragraph in pieces of at most `max` characters. */
const pieces = (text: string, max: number): Array<string> => {
  const out: Array<string> = []
  let from = 0
  while (from < text.length) {
    const end = cutAt(text, from, max)
    const piece = text.slice(from, end).trim()
    if (piece !== "") out.push(piece)
    from = end
  }
  return out
}

/** The last `max` characters of `text`, starting at a word (the tail of a cut word would only be noise). */
const tail = (text: string, max: number) => {
  if (max <= 0) return ""
  if (text.length <= max) return text
  const end = text.slice(text.length - max)
  const space = end.search(/\s/)
  return space < 0 ? end : end.slice(space).trim()
}

const hashOf = (text: string, section: string | null) =>
  createHash("sha256").update(JSON.stringify([text, section])).digest("hex")

/**
 * What a chunk of `section` starts with: its path, cut to a quarter of the chunk's size (a deep path of long headings
 * would leave no room for the text), or nothing without a section.
 */
const prefixOf = (section: string | null, size: number) => {
  if (section === null) return ""
  const max = Math.floor(size / 4)
  return section.length <= max ? section : `${section.slice(0, Math.max(0, max - 1)).trimEnd()}…`
}

/**
 * The chunks of `doc`. A heading or a new page ends the chunk being filled; the heading path carries over pages (a
 * PDF's section goes on on the next page). A chunk that repeats one already made (same text, same section: a page's
 * boilerplate) is left out, so hashes are unique within a document.
 */
export const chunk = (doc: SourceDocument, options: ChunkOptions): ReadonlyArray<Chunk> => {
  const size = Math.max(1, Math.floor(options.size))
  const overlap = Math.max(0, Math.min(Math.floor(options.overlap), Math.floor(size / 2)))
  const out: Array<Chunk> = []
  const seen = new Set<string>()
  const path: Array<{ level: number; text: string }> = []
  let section: string | null = null
  let prefix = ""
  // the characters a chunk's paragraphs may have: its size less its prefix and the blank line after it
  let room = size
  let page: number | null = null
  let parts: Array<string> = []
  let length = 0
  // the end of the last chunk of this section, repeated at the start of the next one
  let previous: string | null = null

  const emit = () => {
    if (parts.length === 0) return
    const body = parts.join("\n\n")
    parts = []
    length = 0
    previous = body
    const text = prefix === "" || body.startsWith(prefix) ? body : `${prefix}\n\n${body}`
    const hash = hashOf(text, section)
    if (seen.has(hash)) return
    seen.add(hash)
    out.push({ position: out.length, text, title: doc.title, section, page, hash })
  }

  const add = (unit: string) => {
    if (parts.length > 0 && length + 2 + unit.length > room) emit()
    if (parts.length === 0 && previous !== null) {
      const repeated = tail(previous, Math.min(overlap, room - unit.length - 2))
      if (repeated !== "") {
        parts.push(repeated)
        length = repeated.length
      }
    }
    length += (parts.length > 0 ? 2 : 0) + unit.length
    parts.push(unit)
  }

  for (const { markdown, page: number } of doc.pages) {
    emit()
    page = number
    for (const block of blocks(markdown)) {
      if (block.heading > 0) {
        emit()
        previous = null
        while (path.length > 0 && path[path.length - 1]!.level >= block.heading) path.pop()
        path.push({ level: block.heading, text: block.text })
        section = path.map((h) => h.text).join(" > ")
        prefix = prefixOf(section, size)
        room = Math.max(1, size - (prefix === "" ? 0 : prefix.length + 2))
      } else if (block.text.length <= room) {
        add(block.text)
      } else {
        // each piece leaves room for the overlap before it
        for (const piece of pieces(block.text, Math.max(1, room - overlap))) add(piece)
      }
    }
  }
  emit()
  return out
}
