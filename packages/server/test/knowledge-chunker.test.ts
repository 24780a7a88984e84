/**
 * Knowledge sources' documents and chunks (knowledge/Chunker.ts, knowledge/DocumentText.ts), on real documents built
 * here: a multi-page PDF written by hand (fonts of two sizes for headings, an Info title, xref offsets counted), an
 * encrypted and a broken PDF, a DOCX zipped with jszip with Word's heading styles, an HTML page, Markdown and CSV.
 * No database.
 */
import { describe, expect, it } from "@effect/vitest"
import { MAX_SOURCE_FILE_BYTES } from "@parley/domain"
import { Effect } from "effect"
import { chunk, DEFAULT_CHUNK_OPTIONS, type SourceDocument } from "../src/knowledge/Chunker.js"
import { documentOf } from "../src/knowledge/DocumentText.js"
import { DOCX, docx } from "./support/Documents.js"

const bytes = (text: string) => new TextEncoder().encode(text)

/**
 * A PDF 1.4 with one page per entry of `pages`, each a list of [font size, line] (an empty line leaves a paragraph's
 * gap), an Info dictionary with `title`, and with `encrypted` an /Encrypt dictionary whose user password is not empty.
 */
const pdf = (
  pages: ReadonlyArray<ReadonlyArray<readonly [number, string]>>,
  options: { readonly title?: string; readonly encrypted?: boolean } = {}
) => {
  const objects = ["<< /Type /Catalog /Pages 2 0 R >>", "", "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
  const kids: Array<string> = []
  for (const lines of pages) {
    let y = 740
    const stream = lines.map(([size, text]) => {
      y -= text === "" ? size : size * 1.3
      return text === "" ? "" : `BT /F1 ${size} Tf 72 ${y} Td (${text}) Tj ET`
    }).filter((l) => l !== "").join("\n")
    objects.push(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${objects.length + 2} 0 R ` +
        "/Resources << /Font << /F1 3 0 R >> >> >>"
    )
    kids.push(`${objects.length} 0 R`)
    objects.push(`<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`)
  }
  objects[1] = `<< /Type /Pages /Kids [${kids.join(" ")}] /Count ${kids.length} >>`
  if (options.title !== undefined) objects.push(`<< /Title (${options.title}) >>`)
  const info = options.title !== undefined ? ` /Info ${objects.length} 0 R` : ""
  if (options.encrypted) {
    const hex = (c: string) => `<${c.repeat(64)}>`
    objects.push(`<< /Filter /Standard /V 1 /R 2 /O ${hex("a")} /U ${hex("b")} /P -4 >>`)
  }
  const encrypt = options.encrypted ? ` /Encrypt ${objects.length} 0 R /ID [<0123456789abcdef> <0123456789abcdef>]` : ""
  let body = "%PDF-1.4\n"
  const offsets = objects.map((o, i) => {
    const at = body.length
    body += `${i + 1} 0 obj\n${o}\nendobj\n`
    return at
  })
  const xref = body.length
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n` +
    offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("") +
    `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R${info}${encrypt} >>\nstartxref\n${xref}\n%%EOF\n`
  return bytes(body)
}

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
      [1, "Pricing", "Two plans."],
      [2, "Pricing > Annual plan", "990 euros a year."],
      [3, "Pricing > Monthly plan", "99 euros a month."],
      [4, "Support", "```\n# not a heading\n\ncode\n```\n\nWeekdays."]
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
    expect(chunks.every((c) => c.text.length <= 300 && c.section === "Plans")).toBe(true)
    // each piece of the long paragraph ends at a sentence end
    for (const c of chunks.slice(0, -1)) expect(c.text).toMatch(/\.$/)
    // each chunk starts with the end of the one before it
    for (let i = 1; i < chunks.length; i++) {
      const head = chunks[i]!.text.split("\n\n")[0]!
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
      [0, 1, "Page 1", "Text of page 1."],
      [1, 1, "Contact", "Acme Ltd, all rights reserved."],
      [2, 2, "Page 2", "Text of page 2."],
      [3, 3, "Page 3", "Text of page 3."]
    ])
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
        [1, "Acme Handbook", "Welcome to Acme."],
        [1, "Acme Handbook > Pricing", "Two plans exist.\nBoth include support."],
        [2, "Acme Handbook > Annual plan", "The annual plan costs 990 euros.\n\nIt is paid once a year."]
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
      const csv = yield* documentOf(bytes("plan,price\nannual,990\n"), "text/csv", "prices.csv")
      expect(csv.pages[0]!.markdown).toBe("plan,price\nannual,990")
    }))
})
