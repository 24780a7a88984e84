/**
 * Knowledge sources' documents and chunks (knowledge/Chunker.ts, knowledge/DocumentText.ts), on real documents built
 * here: a multi-page PDF written by hand (fonts of two sizes for headings, an Info title, xref offsets counted), an
 * encrypted and a broken PDF, a DOCX zipped with jszip with Word's heading styles, an XLSX and a PPTX, zip bombs
 * dressed as DOCX files, an HTML page, Markdown and CSV. No database.
 */
import { describe, expect, it } from "@effect/vitest"
import { MAX_SOURCE_FILE_BYTES } from "@parley/domain"
import { Effect } from "effect"
import { chunk, DEFAULT_CHUNK_OPTIONS, type SourceDocument } from "../src/knowledge/Chunker.js"
import { documentOf } from "../src/knowledge/DocumentText.js"
import { DOCX, docx, PPTX, pptx, XLSX, xlsx, zipBomb } from "./support/Documents.js"
import { pdf } from "./support/Pdf.js"

const bytes = (text: string) => new TextEncoder().encode(text)

const sentence = (i: number) => `Sentence number ${i} says something about the plan.`
const paragraph = (from: number, count: number) => Array.from({ length: count }, (_, i) => sentence(from + i)).join(" ")

describe("chunk", () => {
  const doc: SourceDocument = {
    title: "Acme handbook",
    pages: [{
      page: null,
      markdown:
        `Intro paragraph.\n\n# Pricing\n\nTwo plans.\n\n## Annual plan\n\n990 euros a year.\n\n## Monthly plan\n\n` +
        `99 euros a month.\n\n# Support\n\n\`\`\`\n# not a heading\n\ncode\n\`\`\`\n\nWeekdays.`
    }]
  }

  it("starts a chunk at each heading and names the heading path as its section", () => {
    const chunks = chunk(doc, DEFAULT_CHUNK_OPTIONS)
    expect(chunks.map((c) => [c.position, c.section, c.text])).toEqual([
      [0, null, "Intro paragraph."],
      [1, "Pricing", "Pricing\n\nTwo plans."],
      [2, "Pricing > Annual plan", "Pricing > Annual plan\n\n990 euros a year."],
      [3, "Pricing > Monthly plan", "Pricing > Monthly plan\n\n99 euros a month."],
      [4, "Support", "Support\n\n```\n# not a heading\n\ncode\n```\n\nWeekdays."]
    ])
    expect(chunks.every((c) => c.title === "Acme handbook" && c.page === null)).toBe(true)
    expect(chunks.map((c) => c.hash)).toEqual(chunk(doc, DEFAULT_CHUNK_OPTIONS).map((c) => c.hash))
    expect(new Set(chunks.map((c) => c.hash)).size).toBe(5)
  })

  it("packs paragraphs up to the size, cuts a long one at sentence ends and repeats the overlap", () => {
    const options = { size: 300, overlap: 60 }
    const long = paragraph(0, 40)
    const chunks = chunk({
      title: null,
      pages: [{ page: null, markdown: `# Plans\n\n${long}\n\nShort one.\n\nAnother.` }]
    }, options)
    expect(chunks.length).toBeGreaterThan(5)
    // the section path the chunks start with counts in their size
    expect(chunks.every((c) => c.text.length <= 300 && c.section === "Plans" && c.text.startsWith("Plans\n\n")))
      .toBe(true)
    // each piece of the long paragraph ends at a sentence end
    for (const c of chunks.slice(0, -1)) expect(c.text).toMatch(/\.$/)
    // each chunk starts, after its section path, with the end of the one before it
    for (let i = 1; i < chunks.length; i++) {
      const head = chunks[i]!.text.split("\n\n")[1]!
      expect(head.length).toBeLessThanOrEqual(60)
      expect(chunks[i - 1]!.text.endsWith(head)).toBe(true)
    }
    // every sentence is in some chunk, and short paragraphs share one
    for (let i = 0; i < 40; i++) expect(chunks.some((c) => c.text.includes(sentence(i)))).toBe(true)
    expect(chunks.at(-1)!.text).toMatch(/Short one\.\n\nAnother\.$/)
  })

  it("keeps a page per chunk, the section across pages, and the hashes of unchanged chunks", () => {
    const pages = (changed: string) => ({
      title: "Guide",
      pages: [
        { page: 1, markdown: "# Setup\n\nInstall it." },
        { page: 2, markdown: changed },
        { page: 3, markdown: "# Billing\n\nPay yearly." }
      ]
    })
    const before = chunk(pages("Then sign in."), { size: 200, overlap: 0 })
    const after = chunk(pages("Then sign in with your e-mail."), { size: 200, overlap: 0 })
    expect(before.map((c) => [c.page, c.section])).toEqual([[1, "Setup"], [2, "Setup"], [3, "Billing"]])
    expect(after.map((c) => c.hash === before[c.position]!.hash)).toEqual([true, false, true])
  })

  it("leaves out a chunk that repeats one of the document (the same boilerplate on each page)", () => {
    const chunks = chunk({
      title: null,
      pages: [1, 2, 3].map((page) => ({
        page,
        markdown: `# Page ${page}\n\nText of page ${page}.\n\n# Contact\n\nAcme Ltd, all rights reserved.`
      }))
    }, DEFAULT_CHUNK_OPTIONS)
    expect(chunks.map((c) => [c.position, c.page, c.section, c.text])).toEqual([
      [0, 1, "Page 1", "Page 1\n\nText of page 1."],
      [1, 1, "Contact", "Contact\n\nAcme Ltd, all rights reserved."],
      [2, 2, "Page 2", "Page 2\n\nText of page 2."],
      [3, 3, "Page 3", "Page 3\n\nText of page 3."]
    ])
  })

  it("cuts a section path longer than a quarter of the size, and keeps every chunk within the size", () => {
    const heading = "A very long heading that names the part of the handbook about plans"
    const chunks = chunk({
      title: null,
      pages: [{ page: null, markdown: `# ${heading}\n\n## ${heading} again\n\n${paragraph(0, 20)}` }]
    }, { size: 200, overlap: 40 })
    expect(chunks.length).toBeGreaterThan(3)
    for (const c of chunks) {
      expect(c.text.length).toBeLessThanOrEqual(200)
      expect(c.text.split("\n\n")[0]).toBe(`${heading.slice(0, 49).trimEnd()}…`)
    }
    for (let i = 0; i < 20; i++) expect(chunks.some((c) => c.text.includes(sentence(i)))).toBe(true)
  })

  it("cuts a 500-page document quickly", () => {
    const doc: SourceDocument = {
      title: "Big",
      pages: Array.from({ length: 500 }, (_, p) => ({
        page: p + 1,
        markdown: `## Chapter ${p}\n\n${paragraph(p * 100, 30)}\n\n${paragraph(p * 100 + 30, 30)}`
      }))
    }
    const started = performance.now()
    const chunks = chunk(doc, DEFAULT_CHUNK_OPTIONS)
    const elapsed = performance.now() - started
    expect(chunks.length).toBeGreaterThan(1000)
    expect(chunks.at(-1)!.page).toBe(500)
    // reported, not asserted: a timing bound would race the machine's load
    console.info(`chunked ${doc.pages.length} pages into ${chunks.length} chunks in ${elapsed.toFixed(0)} ms`)
  })
})

describe("documentOf", () => {
  it.effect("reads a PDF page by page, its larger lines as headings and its title from the Info dictionary", () =>
    Effect.gen(function*() {
      const file = pdf([
        [[20, "Acme Handbook"], [11, "Welcome to Acme."], [14, "Pricing"], [11, "Two plans exist."], [
          11,
          "Both include support."
        ]],
        [[14, "Annual plan"], [11, "The annual plan costs 990 euros."], [11, ""], [11, "It is paid once a year."]]
      ], { title: "Acme handbook 2026" })
      const doc = yield* documentOf(file, "application/pdf", "handbook.pdf")
      expect(doc).toEqual({
        title: "Acme handbook 2026",
        pages: [
          {
            page: 1,
            markdown: "# Acme Handbook\n\nWelcome to Acme.\n\n## Pricing\n\nTwo plans exist.\nBoth include support."
          },
          { page: 2, markdown: "## Annual plan\n\nThe annual plan costs 990 euros.\n\nIt is paid once a year." }
        ]
      })
      const chunks = chunk(doc, DEFAULT_CHUNK_OPTIONS)
      expect(chunks.map((c) => [c.page, c.section, c.text])).toEqual([
        [1, "Acme Handbook", "Acme Handbook\n\nWelcome to Acme."],
        [1, "Acme Handbook > Pricing", "Acme Handbook > Pricing\n\nTwo plans exist.\nBoth include support."],
        [
          2,
          "Acme Handbook > Annual plan",
          "Acme Handbook > Annual plan\n\nThe annual plan costs 990 euros.\n\nIt is paid once a year."
        ]
      ])
      const untitled = yield* documentOf(pdf([[[11, "Only text."]]]), "application/octet-stream", "notes/q3 report.pdf")
      expect(untitled.title).toBe("q3 report")
    }))

  it.effect("refuses an encrypted PDF, a broken one, a type it does not read and too many bytes", () =>
    Effect.gen(function*() {
      const encrypted = yield* Effect.flip(
        documentOf(pdf([[[11, "Secret."]]], { encrypted: true }), "application/pdf", "locked.pdf")
      )
      expect(encrypted.reason).toBe("unreadable")
      expect(encrypted.message).toBe("\"locked.pdf\" is an encrypted PDF: it cannot be read without its password")
      const broken = yield* Effect.flip(documentOf(bytes("%PDF-1.4 nothing"), "application/pdf", "broken.pdf"))
      expect([broken.reason, broken.message]).toEqual(["unreadable", "\"broken.pdf\" could not be read as a PDF"])
      const image = yield* Effect.flip(documentOf(bytes("GIF89a"), "image/gif", "a.gif"))
      expect(image.reason).toBe("unsupported")
      // a source's file may have 50 MB: one byte more is not read
      const huge = yield* Effect.flip(documentOf(new Uint8Array(MAX_SOURCE_FILE_BYTES + 1), "text/plain", "big.txt"))
      expect(huge.reason).toBe("too_large")
    }))

  it.effect("reads a DOCX's heading styles as Markdown headings", () =>
    Effect.gen(function*() {
      const file = yield* docx([
        ["Heading1", "Returns"],
        [null, "Items can be returned within 30 days."],
        ["Heading2", "Refunds"],
        [null, "Refunds take 5 days."]
      ])
      const doc = yield* documentOf(file, DOCX, "policies.docx")
      expect(doc).toEqual({
        title: "policies",
        pages: [{
          page: null,
          markdown: "# Returns\n\nItems can be returned within 30 days.\n\n## Refunds\n\nRefunds take 5 days."
        }]
      })
    }))

  it.effect("reads an HTML page's article as Markdown, without its menus, and Markdown, text and CSV as they are", () =>
    Effect.gen(function*() {
      const page =
        `<html><head><title>Shipping | Acme</title></head><body><nav><a href="/">Home</a> <a href="/x">Menu</a></nav>
<article><h1>Shipping</h1><p>We ship to the whole of Europe within <a href="/eu">three days</a>. ${paragraph(0, 5)}</p>
<h2>Costs</h2><p>Shipping is free above 50 euros. ${paragraph(5, 5)}</p><script>track()</script></article>
<footer>Cookie settings</footer></body></html>`
      const doc = yield* documentOf(bytes(page), "text/html; charset=utf-8", "shipping.html")
      expect(doc.title).toBe("Shipping | Acme")
      const markdown = doc.pages[0]!.markdown
      expect(markdown).toContain("We ship to the whole of Europe within three days.")
      expect(markdown).toContain("## Costs\n\nShipping is free above 50 euros.")
      expect(markdown).not.toMatch(/Menu|Cookie|track/)
      const md = yield* documentOf(bytes("# FAQ\n\n## Hours\n\n9 to 5\n"), "text/markdown", "faq.md")
      expect(md).toEqual({ title: "FAQ", pages: [{ page: null, markdown: "# FAQ\n\n## Hours\n\n9 to 5" }] })
      const plain = yield* documentOf(bytes("Plain words.\r\n"), "text/plain", "a.txt")
      expect(plain).toEqual({ title: "a", pages: [{ page: null, markdown: "Plain words." }] })
    }))

  it.effect("reads a CSV's rows as paragraphs of header: value lines, quoted fields and ; separators included", () =>
    Effect.gen(function*() {
      const csv = yield* documentOf(
        bytes("\uFEFFplan,price,note\r\nannual,990,\"billed once, in May\"\r\nmonthly,99,\"say \"\"hi\"\"\"\r\n"),
        "text/csv",
        "prices.csv"
      )
      expect(csv).toEqual({
        title: "prices",
        pages: [{
          page: null,
          markdown: "plan: annual\nprice: 990\nnote: billed once, in May\n\nplan: monthly\nprice: 99\nnote: say \"hi\""
        }]
      })
      const semicolons = yield* documentOf(bytes("Artikel;Preis\nTopf;12,50\n"), "text/plain", "preise.csv")
      expect(semicolons.pages[0]!.markdown).toBe("Artikel: Topf\nPreis: 12,50")
    }))

  it.effect("reads an XLSX a page per sheet, named by its sheet, each row its header: value lines", () =>
    Effect.gen(function*() {
      const file = yield* xlsx([
        {
          name: "Prices",
          rows: [
            ["Plan", "Price", "Valid from"],
            ["Pro", 480, new Date("2026-01-01T00:00:00Z")],
            ["Team", 0.1 + 0.2, null],
            []
          ]
        },
        { name: "Notes", rows: [["All prices exclude VAT."]] }
      ])
      const doc = yield* documentOf(file, XLSX, "price list.xlsx")
      expect(doc).toEqual({
        title: "price list",
        pages: [
          {
            page: 1,
            markdown: "# Prices\n\nPlan: Pro\nPrice: 480\nValid from: 2026-01-01\n\nPlan: Team\nPrice: 0.3"
          },
          { page: 2, markdown: "# Notes\n\nAll prices exclude VAT." }
        ]
      })
      expect(chunk(doc, DEFAULT_CHUNK_OPTIONS).map((c) => [c.page, c.section, c.text])).toEqual([
        [1, "Prices", "Prices\n\nPlan: Pro\nPrice: 480\nValid from: 2026-01-01\n\nPlan: Team\nPrice: 0.3"],
        [2, "Notes", "Notes\n\nAll prices exclude VAT."]
      ])
    }))

  it.effect("reads a PPTX a page per slide in the presentation's order, its title a heading", () =>
    Effect.gen(function*() {
      const file = yield* pptx([
        { title: "Roadmap 2026", body: ["Faster search", "# of seats: 50"] },
        { body: ["No title here."] }
      ])
      const doc = yield* documentOf(file, PPTX, "deck.pptx")
      expect(doc).toEqual({
        title: "deck",
        pages: [
          { page: 1, markdown: "# Roadmap 2026\n\nFaster search\n\\# of seats: 50" },
          { page: 2, markdown: "# Slide 2\n\nNo title here." }
        ]
      })
    }))

  it.effect("refuses a zip bomb dressed as a DOCX: by the sizes its directory declares, or by what a part inflates to", () =>
    Effect.gen(function*() {
      // declares 200 MB: refused from the central directory, nothing inflated
      const declared = yield* Effect.flip(documentOf(yield* zipBomb(1, 200 * 1024 * 1024), DOCX, "bomb.docx"))
      expect(declared.reason).toBe("too_large")
      expect(declared.message).toMatch(/^"bomb\.docx" is refused: .*more than 100 MB/)
      // declares 1 KB but inflates to 3 MB: refused as soon as it passes what it declared
      const lying = yield* Effect.flip(documentOf(yield* zipBomb(3, 1024), DOCX, "liar.docx"))
      expect([lying.reason, lying.message]).toEqual([
        "too_large",
        "\"liar.docx\" is refused: its part word/document.xml inflates to more than the 1024 bytes it declares " +
        "(at most 100 MB unzipped)"
      ])
      const broken = yield* Effect.flip(documentOf(bytes("PK not a zip"), XLSX, "broken.xlsx"))
      expect([broken.reason, broken.message]).toEqual([
        "unreadable",
        "\"broken.xlsx\" could not be read as an Excel workbook"
      ])
    }))
})
