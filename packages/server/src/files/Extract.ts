/**
 * The text of a document, from its bytes: what a model reads of a contact's file and what the knowledge ingest
 * stores of a file or a page. PDF (unpdf), DOCX (mammoth), XLSX and PPTX (Spreadsheets.ts, Slides.ts), HTML
 * (html-to-text), and text, JSON, CSV and markdown as they are. Bounded: input over `maxBytes` is refused before it
 * is parsed, an office file whose zip inflates past a cap (OfficeZip.ts) before it is inflated, and the text is cut
 * to `maxChars`.
 */
import { Data, Effect } from "effect"
import { convert } from "html-to-text"
import mammoth from "mammoth"
import { extractText as pdfText, getDocumentProxy } from "unpdf"
import { checkZip, MAX_UNZIPPED_BYTES, ZipTooLarge } from "./OfficeZip.js"
import { pptxSlides } from "./Slides.js"
import { xlsxSheets } from "./Spreadsheets.js"

/** Why a document gave no text: a type we do not read, too many bytes to parse, or bytes that are not that type. */
export type ExtractFailure = "unsupported" | "too_large" | "unreadable"

export class ExtractFailed extends Data.TaggedError("ExtractFailed")<{
  readonly reason: ExtractFailure
  /** one plain sentence naming the file, for a log line or an operator */
  readonly message: string
  /** the parser's own error, for the log (never shown to a contact) */
  readonly cause?: unknown
}> {}

export interface Extracted {
  readonly text: string
  /** the document said more than `maxChars`: `text` is its beginning */
  readonly truncated: boolean
}

/** Bytes parsed at most by default: a PDF or DOCX is parsed whole in memory, so a bigger one is refused unread. */
export const MAX_EXTRACT_BYTES = 20 * 1024 * 1024

/** A parser that has not answered in this long is given up: a crafted PDF can make pdf.js work for minutes. */
const PARSE_TIMEOUT = "20 seconds"

/** What reads a document: its type. Markdown is text to a turn and keeps its headings for the knowledge chunker. */
export type DocumentKind = "pdf" | "docx" | "xlsx" | "pptx" | "html" | "markdown" | "csv" | "text"
export const KIND_NAMES: Record<DocumentKind, string> = {
  pdf: "a PDF",
  docx: "a Word document",
  xlsx: "an Excel workbook",
  pptx: "a PowerPoint presentation",
  csv: "CSV",
  html: "HTML",
  markdown: "Markdown",
  text: "text"
}
type Kind = DocumentKind

const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
const XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
const PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
const CSV_TYPES = new Set(["text/csv", "application/csv", "text/tab-separated-values"])
const TEXT_TYPES = new Set(["application/json", "application/csv", "application/x-ndjson", "application/xml"])
const BY_EXTENSION: Record<string, Kind> = {
  pdf: "pdf",
  docx: "docx",
  xlsx: "xlsx",
  pptx: "pptx",
  html: "html",
  htm: "html",
  md: "markdown",
  markdown: "markdown",
  txt: "text",
  csv: "csv",
  tsv: "csv",
  json: "text"
}

/** A file name's or URL's extension (a URL's query and fragment left out). */
const extension = (name: string) => name.split(/[?#]/)[0]!.split(".").pop()?.toLowerCase() ?? ""

/**
 * The mimetype decides; a generic one (`application/octet-stream`, empty) leaves it to the file name's extension.
 * Null: a type whose text is not read.
 */
export const documentKind = (mimetype: string, name: string): Kind | null => {
  const type = mimetype.split(";")[0]!.trim().toLowerCase()
  if (type === "application/pdf") return "pdf"
  if (type === DOCX) return "docx"
  if (type === XLSX) return "xlsx"
  if (type === PPTX) return "pptx"
  if (CSV_TYPES.has(type)) return "csv"
  if (type === "text/html" || type === "application/xhtml+xml") return "html"
  if (type === "text/markdown" || type === "text/x-markdown") return "markdown"
  if (type.startsWith("text/") || TEXT_TYPES.has(type) || type.endsWith("+json")) {
    // text/plain is what many clients send for a .md or a .csv file
    const byName = BY_EXTENSION[extension(name)]
    return byName === "markdown" || byName === "csv" ? byName : "text"
  }
  if (type !== "" && type !== "application/octet-stream" && type !== "binary/octet-stream") return null
  return BY_EXTENSION[extension(name)] ?? null
}

/** A text's charset as its mimetype states it (`text/csv; charset=windows-1252`), else UTF-8. */
export const decodeText = (bytes: Uint8Array, mimetype: string) => {
  const charset = mimetype.match(/charset="?([^";\s]+)/i)?.[1]
  try {
    return new TextDecoder(charset ?? "utf-8").decode(bytes)
  } catch {
    // a label TextDecoder does not know
    return new TextDecoder("utf-8").decode(bytes)
  }
}

const parse = (kind: Kind, bytes: Uint8Array, mimetype: string): Promise<string> => {
  switch (kind) {
    case "pdf":
      // pdf.js may take over the buffer it is given: it gets a copy; verbosity 0 keeps its warnings off stdout
      return getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 }).then((pdf) =>
        pdfText(pdf, { mergePages: true }).then((r) => r.text).finally(() => pdf.loadingTask.destroy())
      )
    case "docx":
      return checkZip(bytes).then(() =>
        mammoth.extractRawText({ buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) })
      ).then((r) => r.value)
    case "xlsx":
      return Promise.resolve().then(() => xlsxSheets(bytes).map((s) => `${s.name}\n\n${s.text}`).join("\n\n"))
    case "pptx":
      return Promise.resolve().then(() =>
        pptxSlides(bytes).map((s) => s.title === null ? s.text : `${s.title}\n\n${s.text}`).join("\n\n")
      )
    case "html":
      return Promise.resolve(
        convert(decodeText(bytes, mimetype), {
          wordwrap: false,
          selectors: [{ selector: "img", format: "skip" }, { selector: "a", options: { ignoreHref: true } }]
        })
      )
    case "markdown":
    case "csv":
    case "text":
      return Promise.resolve(decodeText(bytes, mimetype))
  }
}

/**
 * Why a parser gave up: a zip over the cap on what an office file may inflate to is `too_large` (a zip bomb), any
 * other failure `unreadable`.
 */
export const failedParse = (name: string, kind: DocumentKind, cause: unknown) =>
  cause instanceof ZipTooLarge
    ? new ExtractFailed({
      reason: "too_large",
      message: `"${name}" is refused: ${cause.message} (at most ${MAX_UNZIPPED_BYTES / 1024 / 1024} MB unzipped)`,
      cause
    })
    : new ExtractFailed({ reason: "unreadable", message: `"${name}" could not be read as ${KIND_NAMES[kind]}`, cause })

/** Line ends unified, spaces at line ends dropped, at most one blank line in a row. */
const tidy = (text: string) =>
  text.replace(/\r\n?/g, "\n").replace(/[^\S\n]+\n/g, "\n").replace(/\n{3,}/g, "\n\n").trim()

/**
 * The first `maxChars` characters, cut at the last space or line end (a word is not cut in two) unless that would
 * drop more than half (one long token, such as a URL, is cut instead), never between the halves of a surrogate pair.
 */
export const cutText = (text: string, maxChars: number): Extracted => {
  if (text.length <= maxChars) return { text, truncated: false }
  let end = Math.max(0, Math.floor(maxChars))
  if (end > 0 && /[\uD800-\uDBFF]/.test(text[end - 1]!)) end--
  const head = text.slice(0, end)
  const space = head.search(/\s\S*$/)
  return { text: (space >= end / 2 ? head.slice(0, space) : head).trimEnd(), truncated: true }
}

/**
 * The text of a document of type `mimetype` named `name`, cut to `maxChars`. Fails with `ExtractFailed`: a type
 * it does not read (`unsupported`), more than `maxBytes` (`too_large`), bytes its parser rejects (`unreadable`).
 */
export const extractText = Effect.fn("Extract.extractText")(function*(
  bytes: Uint8Array,
  mimetype: string,
  name: string,
  maxChars: number,
  options: { readonly maxBytes?: number } = {}
) {
  yield* Effect.annotateCurrentSpan({ mimetype, bytes: bytes.byteLength })
  const kind = documentKind(mimetype, name)
  if (kind === null) {
    return yield* new ExtractFailed({
      reason: "unsupported",
      message: `"${name}" (${mimetype || "no type"}) is not a document whose text can be read`
    })
  }
  const maxBytes = options.maxBytes ?? MAX_EXTRACT_BYTES
  if (bytes.byteLength > maxBytes) {
    return yield* new ExtractFailed({
      reason: "too_large",
      message: `"${name}" has ${bytes.byteLength} bytes, more than the ${maxBytes} whose text is read`
    })
  }
  const unreadable = (cause: unknown) => failedParse(name, kind, cause)
  const text = yield* Effect.tryPromise({ try: () => parse(kind, bytes, mimetype), catch: unreadable }).pipe(
    Effect.timeoutFail({ duration: PARSE_TIMEOUT, onTimeout: () => unreadable(`no text after ${PARSE_TIMEOUT}`) })
  )
  return cutText(tidy(text), maxChars)
})
