/**
 * Documents the tests of document reading (extract, chunker, knowledge sources) build: a DOCX, an XLSX and a PPTX
 * made with jszip, and a zip bomb dressed as a DOCX written by hand.
 */
import { Effect } from "effect"
import JSZip from "jszip"

const W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

/**
 * A real DOCX, as the tests of document reading build it: [Content_Types].xml, the relationships, styles.xml with Word's
 * built-in heading styles ("heading 1", ...) and word/document.xml. A paragraph is its text, or a style and its text.
 */
export const docx = (input: ReadonlyArray<string | readonly [style: string | null, text: string]>) => {
  const paragraphs = input.map((p) => typeof p === "string" ? [null, p] as const : p)
  const zip = new JSZip()
  zip.file(
    "[Content_Types].xml",
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>
<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>
</Types>`
  )
  zip.file(
    "_rels/.rels",
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>
</Relationships>`
  )
  zip.file(
    "word/_rels/document.xml.rels",
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>
</Relationships>`
  )
  zip.file(
    "word/styles.xml",
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:styles xmlns:w="${W}">${
      [1, 2].map((n) => `<w:style w:type="paragraph" w:styleId="Heading${n}"><w:name w:val="heading ${n}"/></w:style>`)
        .join("")
    }</w:styles>`
  )
  zip.file(
    "word/document.xml",
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="${W}"><w:body>${
      paragraphs.map(([style, text]) =>
        `<w:p>${style === null ? "" : `<w:pPr><w:pStyle w:val="${style}"/></w:pPr>`}<w:r><w:t>${text}</w:t></w:r></w:p>`
      ).join("")
    }</w:body></w:document>`
  )
  return Effect.promise(() => zip.generateAsync({ type: "uint8array" }))
}

/** The mimetype of a DOCX. */
export const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

const xml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
const HEAD = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n`
const PKG_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
const DOC_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
const rels = (items: ReadonlyArray<readonly [id: string, type: string, target: string]>) =>
  `${HEAD}<Relationships xmlns="${PKG_RELS}">${
    items.map(([id, type, target]) => `<Relationship Id="${id}" Type="${DOC_RELS}/${type}" Target="${target}"/>`)
      .join("")
  }</Relationships>`

/** A column's letters from its 0-based index (0 is A). */
const columnLetters = (i: number): string =>
  (i >= 26 ? columnLetters(Math.floor(i / 26) - 1) : "") +
  String.fromCharCode(65 + (i % 26))

/**
 * A real XLSX as Excel writes it: the workbook and its relationships, shared strings for text cells, numbers as
 * numbers, a `Date` as a serial number in a cell styled with the built-in date format 14, and an empty cell skipped.
 */
export const xlsx = (
  sheets: ReadonlyArray<
    { readonly name: string; readonly rows: ReadonlyArray<ReadonlyArray<string | number | Date | null>> }
  >
) => {
  const zip = new JSZip()
  const strings: Array<string> = []
  const stringIndex = (s: string) => {
    const at = strings.indexOf(s)
    return at >= 0 ? at : strings.push(s) - 1
  }
  const cell = (value: string | number | Date | null, ref: string) =>
    value === null
      ? ""
      : value instanceof Date
      ? `<c r="${ref}" s="1"><v>${value.getTime() / 86_400_000 + 25569}</v></c>`
      : typeof value === "number"
      ? `<c r="${ref}"><v>${value}</v></c>`
      : `<c r="${ref}" t="s"><v>${stringIndex(value)}</v></c>`
  sheets.forEach((sheet, i) =>
    zip.file(
      `xl/worksheets/sheet${i + 1}.xml`,
      `${HEAD}<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>${
        sheet.rows.map((row, r) =>
          `<row r="${r + 1}">${row.map((v, c) => cell(v, `${columnLetters(c)}${r + 1}`)).join("")}</row>`
        ).join("")
      }</sheetData></worksheet>`
    )
  )
  zip.file(
    "[Content_Types].xml",
    `${HEAD}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>
</Types>`
  )
  zip.file("_rels/.rels", rels([["rId1", "officeDocument", "xl/workbook.xml"]]))
  zip.file(
    "xl/workbook.xml",
    `${HEAD}<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="${DOC_RELS}"><sheets>${
      sheets.map((s, i) => `<sheet name="${xml(s.name)}" sheetId="${i + 1}" r:id="rId${i + 1}"/>`).join("")
    }</sheets></workbook>`
  )
  zip.file(
    "xl/_rels/workbook.xml.rels",
    rels([
      ...sheets.map((_, i) => [`rId${i + 1}`, "worksheet", `worksheets/sheet${i + 1}.xml`] as const),
      [`rId${sheets.length + 1}`, "sharedStrings", "sharedStrings.xml"],
      [`rId${sheets.length + 2}`, "styles", "styles.xml"]
    ])
  )
  zip.file(
    "xl/styles.xml",
    `${HEAD}<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">` +
      `<cellXfs count="2"><xf numFmtId="0"/><xf numFmtId="14" applyNumberFormat="1"/></cellXfs></styleSheet>`
  )
  // written last: the sheets above filled `strings`
  zip.file(
    "xl/sharedStrings.xml",
    `${HEAD}<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="${strings.length}">${
      strings.map((s) => `<si><t>${xml(s)}</t></si>`).join("")
    }</sst>`
  )
  return Effect.promise(() => zip.generateAsync({ type: "uint8array", compression: "DEFLATE" }))
}

export const XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

const P = "http://schemas.openxmlformats.org/presentationml/2006/main"
const A = "http://schemas.openxmlformats.org/drawingml/2006/main"

/**
 * A real PPTX as PowerPoint writes it: the presentation's slide list (in an order unlike the slides' file numbers, as
 * after a reorder), each slide a title placeholder (when it has a title) and a body shape of paragraphs.
 */
export const pptx = (slides: ReadonlyArray<{ readonly title?: string; readonly body: ReadonlyArray<string> }>) => {
  const zip = new JSZip()
  const shape = (id: number, placeholder: string, paragraphs: ReadonlyArray<string>) =>
    `<p:sp><p:nvSpPr><p:cNvPr id="${id}" name="Shape ${id}"/><p:cNvSpPr/><p:nvPr>${placeholder}</p:nvPr></p:nvSpPr>` +
    `<p:spPr/><p:txBody><a:bodyPr/>${
      paragraphs.map((p) => `<a:p><a:pPr lvl="0"/><a:r><a:rPr lang="en-US"/><a:t>${xml(p)}</a:t></a:r></a:p>`).join("")
    }</p:txBody></p:sp>`
  // file numbers run backwards: the slide list, not the file names, gives the order
  const fileOf = (i: number) => slides.length - i
  slides.forEach((slide, i) =>
    zip.file(
      `ppt/slides/slide${fileOf(i)}.xml`,
      `${HEAD}<p:sld xmlns:a="${A}" xmlns:p="${P}" xmlns:r="${DOC_RELS}"><p:cSld><p:spTree>${
        slide.title === undefined ? "" : shape(2, `<p:ph type="title"/>`, [slide.title])
      }${shape(3, `<p:ph idx="1"/>`, slide.body)}</p:spTree></p:cSld></p:sld>`
    )
  )
  zip.file(
    "[Content_Types].xml",
    `${HEAD}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"/>
</Types>`
  )
  zip.file("_rels/.rels", rels([["rId1", "officeDocument", "ppt/presentation.xml"]]))
  zip.file(
    "ppt/presentation.xml",
    `${HEAD}<p:presentation xmlns:a="${A}" xmlns:p="${P}" xmlns:r="${DOC_RELS}"><p:sldIdLst>${
      slides.map((_, i) => `<p:sldId id="${256 + i}" r:id="rId${i + 2}"/>`).join("")
    }</p:sldIdLst></p:presentation>`
  )
  zip.file(
    "ppt/_rels/presentation.xml.rels",
    rels(slides.map((_, i) => [`rId${i + 2}`, "slide", `slides/slide${fileOf(i)}.xml`] as const))
  )
  return Effect.promise(() => zip.generateAsync({ type: "uint8array", compression: "DEFLATE" }))
}

export const PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"

/**
 * A zip bomb disguised as a DOCX: a real [Content_Types].xml and a word/document.xml of `megabytes` MB of spaces
 * inside a paragraph, deflated a megabyte at a time (a few hundred KB on disk). With `declared`, the central directory
 * states that size for document.xml instead of its true one, as a bomb that lies about its size would.
 */
export const zipBomb = (megabytes: number, declared?: number) =>
  Effect.promise(async () => {
    const { crc32, createDeflateRaw, deflateRawSync } = await import("node:zlib")
    const head = Buffer.from(`${HEAD}<w:document xmlns:w="${W}"><w:body><w:p><w:r><w:t>`)
    const tail = Buffer.from("</w:t></w:r></w:p></w:body></w:document>")
    const spaces = Buffer.alloc(1024 * 1024, 0x20)
    const deflate = createDeflateRaw({ level: 9 })
    const out: Array<Buffer> = []
    deflate.on("data", (chunk: Buffer) => out.push(chunk))
    const done = new Promise((resolve) => deflate.on("end", resolve))
    let crc = crc32(head)
    deflate.write(head)
    for (let i = 0; i < megabytes; i++) {
      crc = crc32(spaces, crc)
      if (!deflate.write(spaces)) await new Promise((resolve) => deflate.once("drain", resolve))
    }
    crc = crc32(tail, crc)
    deflate.end(tail)
    await done
    const types = Buffer.from(`${HEAD}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`)
    const size = head.length + tail.length + megabytes * spaces.length
    return zipOf([
      { name: "[Content_Types].xml", data: deflateRawSync(types), crc: crc32(types), size: types.length },
      { name: "word/document.xml", data: Buffer.concat(out), crc, size: declared ?? size }
    ])
  })

/** A zip of deflated entries, written by hand: local headers, the data, the central directory, its end record. */
const zipOf = (entries: ReadonlyArray<{ name: string; data: Buffer; crc: number; size: number }>) => {
  const parts: Array<Buffer> = []
  const central: Array<Buffer> = []
  let offset = 0
  for (const e of entries) {
    const name = Buffer.from(e.name)
    const local = Buffer.alloc(30)
    local.writeUInt32LE(0x04034b50, 0)
    local.writeUInt16LE(20, 4)
    local.writeUInt16LE(8, 8)
    local.writeUInt32LE(e.crc >>> 0, 14)
    local.writeUInt32LE(e.data.length, 18)
    local.writeUInt32LE(e.size, 22)
    local.writeUInt16LE(name.length, 26)
    const dir = Buffer.alloc(46)
    dir.writeUInt32LE(0x02014b50, 0)
    dir.writeUInt16LE(20, 4)
    dir.writeUInt16LE(20, 6)
    dir.writeUInt16LE(8, 10)
    dir.writeUInt32LE(e.crc >>> 0, 16)
    dir.writeUInt32LE(e.data.length, 20)
    dir.writeUInt32LE(e.size, 24)
    dir.writeUInt16LE(name.length, 28)
    dir.writeUInt32LE(offset, 42)
    parts.push(local, name, e.data)
    central.push(dir, name)
    offset += 30 + name.length + e.data.length
  }
  const directory = Buffer.concat(central)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  end.writeUInt16LE(entries.length, 8)
  end.writeUInt16LE(entries.length, 10)
  end.writeUInt32LE(directory.length, 12)
  end.writeUInt32LE(offset, 16)
  return new Uint8Array(Buffer.concat([...parts, directory, end]))
}
