/**
 * A knowledge source's file or page as a SourceDocument: Markdown whose `#` headings the Chunker follows, per page
 * for a PDF (so a chunk names its page). PDF with unpdf, DOCX with mammoth (to HTML, so Word's headings survive),
 * HTML with Readability on a linkedom document (the article, not the menus), each then Markdown with turndown;
 * an XLSX a page per sheet and a PPTX a page per slide (files/Spreadsheets.ts, files/Slides.ts), each under its name or
 * title as a heading; a CSV's rows labelled with its header; Markdown and text as they are. Refuses as
 * files/Extract.ts does (same error, same byte limit, the same cap on what an office file's zip inflates to).
 */
import { Readability } from "@mozilla/readability"
import { MAX_SOURCE_FILE_BYTES } from "@parley/domain"
import { Effect } from "effect"
import { parseHTML } from "linkedom"
import mammoth from "mammoth"
import TurndownService from "turndown"
import { getDocumentProxy } from "unpdf"
import { decodeText, type DocumentKind, documentKind, ExtractFailed, failedParse } from "../files/Extract.js"
import { checkZip } from "../files/OfficeZip.js"
import { pptxSlides } from "../files/Slides.js"
import { csvRows, rowsText, xlsxSheets } from "../files/Spreadsheets.js"
import type { SourceDocument } from "./Chunker.js"
import { pdfPages } from "./PdfText.js"

/**
 * A parser that has not answered in this long is given up. Longer than Extract.ts's 20 seconds: a source's PDF may
 * have hundreds of pages, each extracted on its own.
 */
const PARSE_TIMEOUT = "60 seconds"

/** The file name without its folder and extension: the title of a document that names none itself. */
const baseTitle = (name: string) => {
  const file = decodeURIComponent(name.split(/[?#]/)[0]!.split("/").filter((s) => s !== "").pop() ?? name)
  const dot = file.lastIndexOf(".")
  const title = (dot > 0 ? file.slice(0, dot) : file).trim()
  return title === "" ? null : title
}

const turndown = () => {
  const service = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" })
  service.remove(["script", "style", "noscript", "iframe", "img", "svg", "form", "button"] as Array<any>)
  // a link is kept as its words: its address in a chunk would only be noise for search and embeddings
  service.addRule("linkText", { filter: "a", replacement: (content) => content })
  return service
}

/** Line ends unified, spaces at line ends dropped, at most one blank line in a row. */
const tidy = (text: string) =>
  text.replace(/\r\n?/g, "\n").replace(/[^\S\n]+\n/g, "\n").replace(/\n{3,}/g, "\n\n").trim()

export interface HtmlPage {
  readonly document: SourceDocument
  /** the page's links, absolute (against `<base href>` or the page's URL), http(s) only, without their fragment */
  readonly links: ReadonlyArray<string>
}

/**
 * An HTML page's article as Markdown, and its links (read before Readability prunes the document). A page Readability
 * finds no article in (a short page, a list of links) gives its whole body.
 */
export const htmlPage = (html: string, name: string, url?: string): HtmlPage => {
  const { document } = parseHTML(html)
  const links: Array<string> = []
  const seen = new Set<string>()
  let base: URL | undefined
  try {
    const href = document.querySelector("base[href]")?.getAttribute("href")
    base = url === undefined ? undefined : new URL(href ?? url, url)
  } catch {
    base = undefined
  }
  if (base !== undefined) {
    for (const anchor of Array.from(document.querySelectorAll("a[href]"))) {
      try {
        const link = new URL(anchor.getAttribute("href")!, base)
        link.hash = ""
        if ((link.protocol === "http:" || link.protocol === "https:") && !seen.has(link.href)) {
          seen.add(link.href)
          links.push(link.href)
        }
      } catch {
        // not a URL: skipped
      }
    }
  }
  const pageTitle = document.querySelector("title")?.textContent?.trim()
  const body = document.body?.innerHTML ?? html
  let article: ReturnType<Readability["parse"]> = null
  try {
    article = new Readability(document as unknown as Document, { charThreshold: 100 }).parse()
  } catch {
    article = null
  }
  const markdown = tidy(turndown().turndown(article?.content ?? body))
  const title = article?.title?.trim() || pageTitle || baseTitle(name)
  return { document: { title: title ?? null, pages: [{ page: null, markdown }] }, links }
}

const pdfDocument = async (bytes: Uint8Array, name: string): Promise<SourceDocument> => {
  // pdf.js may take over the buffer it is given: it gets a copy; verbosity 0 keeps its warnings off stdout
  const pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 })
  try {
    const meta = await pdf.getMetadata().catch(() => null)
    const info = meta?.info as { Title?: unknown } | undefined
    const title = typeof info?.Title === "string" && info.Title.trim() !== "" ? info.Title.trim() : baseTitle(name)
    const pages = await pdfPages(pdf)
    return { title, pages: pages.map((markdown, i) => ({ page: i + 1, markdown })) }
  } finally {
    await pdf.loadingTask.destroy()
  }
}

const parse = async (
  kind: DocumentKind,
  bytes: Uint8Array,
  mimetype: string,
  name: string
): Promise<SourceDocument> => {
  switch (kind) {
    case "pdf":
      return pdfDocument(bytes, name)
    case "docx": {
      await checkZip(bytes)
      const { value } = await mammoth.convertToHtml(
        { buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) },
        // an image would come as a data: URL, a copy of its bytes in the HTML: it is dropped unread
        { convertImage: mammoth.images.imgElement(() => Promise.resolve({ src: "" })) }
      )
      return {
        title: baseTitle(name),
        pages: [{ page: null, markdown: tidy(turndown().turndown(value || "<p></p>")) }]
      }
    }
    case "xlsx":
      return {
        title: baseTitle(name),
        pages: xlsxSheets(bytes).map((sheet, i) => ({ page: i + 1, markdown: `# ${sheet.name}\n\n${sheet.text}` }))
      }
    case "pptx":
      return {
        title: baseTitle(name),
        pages: pptxSlides(bytes).map((slide) => ({
          page: slide.number,
          markdown: `# ${slide.title ?? `Slide ${slide.number}`}\n\n${slide.text}`
        }))
      }
    case "csv":
      return {
        title: baseTitle(name),
        pages: [{ page: null, markdown: rowsText(csvRows(decodeText(bytes, mimetype).replace(/^\uFEFF/, ""), name)) }]
      }
    case "html":
      return htmlPage(decodeText(bytes, mimetype), name).document
    case "markdown": {
      const markdown = tidy(decodeText(bytes, mimetype))
      // a Markdown file that opens with a level-1 heading names itself
      const heading = /^# +(.+?)[ #]*$/m.exec(markdown.split("\n", 1)[0]!)?.[1]
      return { title: heading ?? baseTitle(name), pages: [{ page: null, markdown }] }
    }
    case "text":
      return { title: baseTitle(name), pages: [{ page: null, markdown: tidy(decodeText(bytes, mimetype)) }] }
  }
}

/** pdf.js's own error for a PDF that needs a password to be opened. */
const isPasswordError = (cause: unknown) =>
  typeof cause === "object" && cause !== null && (cause as { name?: unknown }).name === "PasswordException"

/**
 * The document in `bytes`, of type `mimetype`, named `name` (a file name or a URL). Fails with `ExtractFailed`: a
 * type it does not read (`unsupported`), more than a source's file may have (50 MB, `too_large`), bytes its parser rejects or
 * a PDF locked by a password (`unreadable`).
 */
export const documentOf = Effect.fn("DocumentText.documentOf")(function*(
  bytes: Uint8Array,
  mimetype: string,
  name: string
) {
  yield* Effect.annotateCurrentSpan({ mimetype, bytes: bytes.byteLength })
  const kind = documentKind(mimetype, name)
  if (kind === null) {
    return yield* new ExtractFailed({
      reason: "unsupported",
      message: `"${name}" (${mimetype || "no type"}) is not a document whose text can be read`
    })
  }
  if (bytes.byteLength > MAX_SOURCE_FILE_BYTES) {
    return yield* new ExtractFailed({
      reason: "too_large",
      message: `"${name}" has ${bytes.byteLength} bytes, more than the ${MAX_SOURCE_FILE_BYTES} whose text is read`
    })
  }
  const unreadable = (cause: unknown) =>
    isPasswordError(cause)
      ? new ExtractFailed({
        reason: "unreadable",
        message: `"${name}" is an encrypted PDF: it cannot be read without its password`,
        cause
      })
      : failedParse(name, kind, cause)
  return yield* Effect.tryPromise({ try: () => parse(kind, bytes, mimetype, name), catch: unreadable }).pipe(
    Effect.timeoutFail({ duration: PARSE_TIMEOUT, onTimeout: () => unreadable(`no text after ${PARSE_TIMEOUT}`) })
  )
})
