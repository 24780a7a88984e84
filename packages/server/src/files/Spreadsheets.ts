/**
 * Spreadsheets as text a search finds rows in: an XLSX's sheets (its zip parts read by OfficeZip.ts, their XML streamed
 * by OfficeXml.ts) and a CSV (csv-parse). The first non-empty row is the header; every other row becomes a paragraph of `header: value` lines, so a chunk
 * holding any group of rows still says what each value is ("Plan: Pro", "Price: 480") and a price list is found by
 * its column names as well as its values. Values are shown as stored (a formula's last computed value), numbers
 * without float noise, and cells formatted as dates as ISO dates.
 */
import { parse as parseCsv } from "csv-parse/sync"
import { elementsNamed, relationshipId, relationships, streamXml } from "./OfficeXml.js"
import { openZip } from "./OfficeZip.js"

export interface Sheet {
  readonly name: string
  /** rows as paragraphs of `header: value` lines, separated by blank lines */
  readonly text: string
}

/** A line that would read as a Markdown heading (a column named "# of seats") is escaped. */
const plain = (line: string) => line.startsWith("#") ? `\\${line}` : line

const cellText = (value: string) => value.replace(/\s+/g, " ").trim()

/** Spreadsheet column letters of a 0-based index: 0 is A, 26 is AA. */
const letters = (index: number): string =>
  (index >= 26 ? letters(Math.floor(index / 26) - 1) : "") +
  String.fromCharCode(65 + (index % 26))

/** Rows (arrays of cells, a missing cell empty) as header-labelled paragraphs. */
export const rowsText = (rows: ReadonlyArray<ReadonlyArray<string | undefined>>): string => {
  const cleaned = rows.map((row) => row.map((cell) => cellText(cell ?? "")))
  const first = cleaned.findIndex((row) => row.some((cell) => cell !== ""))
  if (first < 0) return ""
  const header = cleaned[first]!
  const body = cleaned.slice(first + 1).filter((row) => row.some((cell) => cell !== ""))
  // a sheet with one row has no values to label: the row is its text
  if (body.length === 0) return plain(header.filter((c) => c !== "").join(" | "))
  return body.map((row) =>
    row.flatMap((cell, i) => cell === "" ? [] : [plain(`${header[i] || letters(i)}: ${cell}`)]).join("\n")
  ).join("\n\n")
}

/**
 * The delimiter of a CSV: tabs for a .tsv (its name or URL), else whichever of `,` and `;` the first line has more of
 * (Excel writes `;` in many locales).
 */
export const csvDelimiter = (text: string, name: string) => {
  if (/\.tsv$/i.test(name.split(/[?#]/)[0]!)) return "\t"
  const firstLine = text.slice(0, text.search(/\r?\n|$/))
  const count = (c: string) => firstLine.split(c).length - 1
  return count(";") > count(",") ? ";" : ","
}

/** Records end at CRLF, LF or CR, mixed in one file too (csv-parse otherwise keeps to the first one it sees). */
export const LINE_ENDS = ["\r\n", "\n", "\r"]

/**
 * A CSV's rows, read by csv-parse (RFC 4180: quoted fields with `""` for a quote, line ends inside quotes), separated
 * by `csvDelimiter`. A document is read for its text, so a CSV whose quotes do not pair up is read again with quotes
 * as plain characters rather than refused.
 */
export const csvRows = (text: string, name: string): Array<Array<string>> => {
  const options = {
    delimiter: csvDelimiter(text, name),
    bom: true,
    record_delimiter: LINE_ENDS,
    relax_column_count: true,
    relax_quotes: true
  }
  try {
    return parseCsv(text, options)
  } catch {
    return parseCsv(text, { ...options, quote: false })
  }
}

/** Excel's built-in number formats that show a date or a time. */
const DATE_FORMATS = new Set([14, 15, 16, 17, 18, 19, 20, 21, 22, 45, 46, 47])

/** Per cell style (`s`), whether it shows a date: a built-in date format or a custom one with d, m, y or h in it. */
const dateStyles = (styles: string | undefined): Array<boolean> => {
  const custom = new Map<number, string>()
  const formats: Array<number> = []
  let inCellFormats = false
  streamXml(styles ?? "", {
    open: (name, attributes) => {
      if (name === "numFmt") custom.set(Number(attributes.numFmtId), attributes.formatCode ?? "")
      else if (name === "cellXfs") inCellFormats = true
      else if (name === "xf" && inCellFormats) formats.push(Number(attributes.numFmtId ?? 0))
    },
    close: (name) => {
      if (name === "cellXfs") inCellFormats = false
    }
  })
  const isDate = (id: number) => {
    if (DATE_FORMATS.has(id)) return true
    // quoted text and [colour] or [$-locale] parts are not date letters
    const code = custom.get(id)?.replace(/"[^"]*"|\[[^\]]*\]/g, "")
    return code !== undefined && /[dmyh]/i.test(code)
  }
  return formats.map(isDate)
}

/** An Excel serial date (days since 1899-12-30) as an ISO date, with its time when it has one. */
const serialDate = (serial: number) => {
  const iso = new Date(Math.round((serial - 25569) * 86_400_000)).toISOString()
  return serial % 1 === 0 ? iso.slice(0, 10) : iso.slice(0, 16).replace("T", " ")
}

/** A number as Excel shows it by default: at most 15 significant digits (0.1 + 0.2 is 0.3). */
const numberText = (value: string) => {
  const n = Number(value)
  return Number.isFinite(n) ? String(Number.parseFloat(n.toPrecision(15))) : value
}

/**
 * Collects the text of a shared or inline string (`si`, `is`) from a stream: its runs' `t`, without their phonetic
 * guides (`rPh`), fed the elements and text inside the string; `start` begins the next one.
 */
const stringCollector = () => {
  let text = ""
  let inText = false
  let phonetic = 0
  return {
    start: () => {
      text = ""
    },
    open: (name: string) => {
      if (name === "t") inText = true
      else if (name === "rPh") phonetic++
    },
    text: (chunk: string) => {
      if (inText && phonetic === 0) text += chunk
    },
    close: (name: string) => {
      if (name === "t") inText = false
      else if (name === "rPh") phonetic--
    },
    value: () => text
  }
}

const sharedStrings = (xml: string | undefined) => {
  const out: Array<string> = []
  if (xml === undefined) return out
  const item = stringCollector()
  streamXml(xml, {
    open: (name) => name === "si" ? item.start() : item.open(name),
    text: item.text,
    close: (name) => name === "si" ? out.push(item.value()) : item.close(name)
  })
  return out
}

/** A column's 0-based index from a cell reference ("C7" is 2). */
const columnOf = (ref: string | undefined) => {
  const col = /^[A-Z]+/i.exec(ref ?? "")?.[0]
  if (col === undefined) return undefined
  let index = 0
  for (const c of col.toUpperCase()) index = index * 26 + c.charCodeAt(0) - 64
  return index - 1
}

interface Cell {
  /** the cell's `t` (type), `s` (style) and `r` (reference) */
  readonly attributes: Record<string, string>
  /** the text of its `v`, undefined without one */
  readonly raw: string | undefined
  /** the text of its inline string (`is`) */
  readonly inline: string
}

/** A cell's value as Excel shows it, from its type (`t`) and its style (`s`). */
const cellValue = (
  { attributes: { s, t }, inline, raw }: Cell,
  shared: ReadonlyArray<string>,
  dates: Array<boolean>
) => {
  if (t === "inlineStr") return inline
  if (raw === undefined) return undefined
  if (t === "s") return shared[Number(raw)]
  if (t === "b") return raw === "1" ? "TRUE" : "FALSE"
  if (t === "str" || t === "e") return raw
  if (dates[Number(s ?? 0)] === true && Number.isFinite(Number(raw))) return serialDate(Number(raw))
  return numberText(raw)
}

/** A sheet's rows, streamed: a cell goes to its column (`r="C7"`), or next in its row when it names none. */
const sheetRows = (xml: string, shared: ReadonlyArray<string>, dates: Array<boolean>) => {
  const rows: Array<Array<string | undefined>> = []
  let row: Array<string | undefined> = []
  let attributes: Record<string, string> = {}
  let raw: string | undefined
  let inValue = false
  const inline = stringCollector()
  streamXml(xml, {
    open: (name, attrs) => {
      if (name === "row") row = []
      else if (name === "c") [attributes, raw] = [attrs, undefined]
      else if (name === "v") [inValue, raw] = [true, ""]
      else if (name === "is") inline.start()
      else inline.open(name)
    },
    text: (text) => {
      if (inValue) raw += text
      else inline.text(text)
    },
    close: (name) => {
      if (name === "row") rows.push(row)
      else if (name === "v") inValue = false
      else if (name === "c") {
        const value = cellValue({ attributes, raw, inline: inline.value() }, shared, dates)
        row[columnOf(attributes.r) ?? row.length] = value
        inline.start()
      } else inline.close(name)
    }
  })
  return rows
}

/** An XLSX's sheets in workbook order, each its rows as text. Throws on bytes that are not an XLSX. */
export const xlsxSheets = (bytes: Uint8Array): Array<Sheet> => {
  const zip = openZip(bytes)
  const workbook = zip.text("xl/workbook.xml")
  if (workbook === undefined) throw new Error("no xl/workbook.xml: not an XLSX")
  const rels = relationships(zip.text("xl/_rels/workbook.xml.rels"), "xl")
  const shared = sharedStrings(zip.text("xl/sharedStrings.xml"))
  const dates = dateStyles(zip.text("xl/styles.xml"))
  const sheets: Array<Sheet> = []
  for (const sheet of elementsNamed(workbook, "sheet")) {
    const id = relationshipId(sheet)
    const path = id === undefined ? undefined : rels.get(id)
    const xml = path === undefined ? undefined : zip.text(path)
    // a chart sheet or a part that is missing has no rows
    if (xml === undefined) continue
    const name = sheet.name ?? `Sheet ${sheets.length + 1}`
    sheets.push({ name, text: rowsText(sheetRows(xml, shared, dates)) })
  }
  return sheets
}
