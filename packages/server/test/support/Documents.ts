/** Documents the tests of document reading (extract, chunker, knowledge sources) build: a DOCX made with jszip. */
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
