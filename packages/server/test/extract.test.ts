/**
 * A document's text from its bytes (files/Extract.ts), on real documents built here: a PDF written by hand (objects,
 * xref offsets, trailer), a DOCX zipped with jszip (the parts Word needs), an XLSX and a PPTX, HTML, CSV and JSON;
 * and what it refuses (a broken PDF, a zip bomb, a type it does not read, input over the byte limit). No database.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { extractText } from "../src/files/Extract.js"
import { DOCX, docx, pptx, XLSX, xlsx, zipBomb } from "./support/Documents.js"
import { pdf as pdfOf } from "./support/Pdf.js"

const bytes = (text: string) => new TextEncoder().encode(text)

/** A one-page PDF with one line of 12 pt text per entry of `lines`. */
const pdf = (lines: ReadonlyArray<string>) => pdfOf([lines.map((line) => [12, line] as const)])

describe("extractText", () => {
  it.effect("reads the text lines of a PDF", () =>
    Effect.gen(function*() {
      const out = yield* extractText(
        pdf(["Annual plan: 990 euros", "Support on weekdays"]),
        "application/pdf",
        "p.pdf",
        1000
      )
      expect(out).toEqual({ text: "Annual plan: 990 euros\nSupport on weekdays", truncated: false })
    }))

  it.effect("reads the paragraphs of a DOCX, also when its type is only told by its name", () =>
    Effect.gen(function*() {
      const file = yield* docx(["Offer for ACME", "Delivery in May"])
      expect(yield* extractText(file, DOCX, "offer.docx", 1000)).toEqual({
        text: "Offer for ACME\n\nDelivery in May",
        truncated: false
      })
      expect((yield* extractText(file, "application/octet-stream", "offer.docx", 1000)).text).toContain("Delivery")
    }))

  it.effect("reads HTML as text and CSV, JSON and markdown as they are", () =>
    Effect.gen(function*() {
      const html = yield* extractText(
        bytes("<html><body><h1>Prices</h1><p>Monthly: <b>99</b> euros</p><script>x()</script></body></html>"),
        "text/html; charset=utf-8",
        "p.html",
        1000
      )
      expect(html.text).toContain("Monthly: 99 euros")
      expect(html.text).not.toContain("x()")
      expect((yield* extractText(bytes("plan,price\nannual,990\n"), "text/csv", "p.csv", 1000)).text).toBe(
        "plan,price\nannual,990"
      )
      expect((yield* extractText(bytes("{\"plan\": \"annual\"}"), "application/json", "p.json", 1000)).text).toBe(
        "{\"plan\": \"annual\"}"
      )
      expect((yield* extractText(bytes("# Plans\r\n\r\n\r\n\r\n- annual"), "", "p.md", 1000)).text).toBe(
        "# Plans\n\n- annual"
      )
    }))

  it.effect("cuts a long text to maxChars on a word boundary and says so", () =>
    Effect.gen(function*() {
      const out = yield* extractText(bytes("alpha beta gamma delta epsilon"), "text/plain", "t.txt", 14)
      expect(out).toEqual({ text: "alpha beta", truncated: true })
      const pdfOut = yield* extractText(pdf(["one two three four five six"]), "application/pdf", "p.pdf", 12)
      expect(pdfOut).toEqual({ text: "one two", truncated: true })
    }))

  it.effect("fails with ExtractFailed on a broken PDF, an unsupported type and input over the limit", () =>
    Effect.gen(function*() {
      const broken = yield* Effect.flip(
        extractText(bytes("%PDF-1.4\n1 0 obj\n<< /Type /Catalog"), "application/pdf", "broken.pdf", 1000)
      )
      expect(broken).toMatchObject({ _tag: "ExtractFailed", reason: "unreadable" })
      expect(broken.message).toBe("\"broken.pdf\" could not be read as a PDF")
      const notZip = yield* Effect.flip(extractText(bytes("not a zip"), DOCX, "x.docx", 1000))
      expect(notZip).toMatchObject({ _tag: "ExtractFailed", reason: "unreadable" })
      const image = yield* Effect.flip(extractText(new Uint8Array([0x89, 0x50]), "image/png", "a.png", 1000))
      expect(image).toMatchObject({ _tag: "ExtractFailed", reason: "unsupported" })
      const big = yield* Effect.flip(
        extractText(new Uint8Array(2048), "text/plain", "big.txt", 1000, { maxBytes: 1024 })
      )
      expect(big).toMatchObject({ _tag: "ExtractFailed", reason: "too_large" })
    }))

  it.effect("reads an XLSX's sheets and a PPTX's slides as text, and refuses a DOCX that inflates past its cap", () =>
    Effect.gen(function*() {
      const sheet = yield* xlsx([{ name: "Prices", rows: [["Plan", "Price"], ["Pro", 480]] }])
      expect((yield* extractText(sheet, XLSX, "p.xlsx", 1000)).text).toBe("Prices\n\nPlan: Pro\nPrice: 480")
      const deck = yield* pptx([{ title: "Roadmap", body: ["Search in May"] }])
      expect((yield* extractText(deck, "application/octet-stream", "d.pptx", 1000)).text).toBe(
        "Roadmap\n\nSearch in May"
      )
      const bomb = yield* Effect.flip(extractText(yield* zipBomb(1, 500 * 1024 * 1024), DOCX, "bomb.docx", 1000))
      expect(bomb.reason).toBe("too_large")
    }))
})
