/**
 * Spreadsheets as text a search finds rows in: an XLSX's sheets (read from its zip parts, OfficeZip.ts) and a CSV.
 * The first non-empty row is the header; every other row becomes a paragraph of `header: value` lines, so a chunk
 * holding any group of rows still says what each value is ("Plan: Pro", "Price: 480") and a price list is found by
 * its column names as well as its values. Values are shown as stored (a formula's last computed value), numbers
 * without float noise, and cells formatted as dates as ISO dates.
 */
import { attributesOf, decodeXml, readText, relationships, zipEntries } from "./OfficeZip.js"

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
 * A CSV's rows (RFC 4180: quoted fields with `""` for a quote, line ends inside quotes), separated by `delimiter`,
 * else by tabs for a .tsv and by whichever of `,` and `;` the first line has more of (Excel writes `;` in many locales).
 */
export const csvRows = (text: string, name: string): Array<Array<string>> => {
  const firstLine = text.slice(0, text.search(/\r?\n|$/))
  const count = (c: string) => firstLine.split(c).length - 1
  const delimiter = /\.tsv$/i.test(name.split(/[?#]/)[0]!) ? "\t" : count(";") > count(",") ? ";" : ","
  const rows: Array<Array<string>> = []
  let row: Array<string> = []
  let field = ""
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c !== "\"") field += c
      else if (text[i + 1] === "\"") field += text[++i]
      else quoted = false
    } else if (c === "\"" && field === "") {
      quoted = true
    } else if (c === delimiter) {
      row.push(field)
      field = ""
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++
      row.push(field)
      rows.push(row)
      row = []
      field = ""
    } else {
      field += c
    }
  }
  if (field !== "" || row.length > 0) rows.push([...row, field])
  return rows
}

/** Excel's built-in number formats that show a date or a time. */
const DATE_FORMATS = new Set([14, 15, 16, 17, 18, 19, 20, 21, 22, 45, 46, 47])

/** Per cell style (`s`), whether it shows a date: a built-in date format or a custom one with d, m, y or h in it. */
const dateStyles = (styles: string | undefined): Array<boolean> => {
  if (styles === undefined) return []
  const custom = new Map<number, string>()
  for (const m of styles.matchAll(/<numFmt\b[^>]*>/g)) {
    const a = attributesOf(m[0])
    custom.set(Number(a.numFmtId), a.formatCode ?? "")
  }
  const isDate = (id: number) => {
    if (DATE_FORMATS.has(id)) return true
    // quoted text and [colour] or [$-locale] parts are not date letters
    const code = custom.get(id)?.replace(/"[^"]*"|\[[^\]]*\]/g, "")
    return code !== undefined && /[dmyh]/i.test(code)
  }
  const xfs = /<cellXfs\b[^>]*>([\s\S]*?)<\/cellXfs>/.exec(styles)?.[1] ?? ""
  return Array.from(xfs.matchAll(/<xf\b[^>]*>/g), (m) => isDate(Number(attributesOf(m[0]).numFmtId ?? 0)))
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

/** The text of a shared or inline string: its runs, without their phonetic guides. */
const stringText = (xml: string) =>
  Array.from(xml.replace(/<rPh\b[\s\S]*?<\/rPh>/g, "").matchAll(/<t(?:\s[^>]*)?>([\s\S]*?)<\/t>/g))
    .map((m) => decodeXml(m[1]!)).join("")

/** A column's 0-based index from a cell reference ("C7" is 2). */
const columnOf = (ref: string | undefined) => {
  const col = /^[A-Z]+/i.exec(ref ?? "")?.[0]
  if (col === undefined) return undefined
  let index = 0
  for (const c of col.toUpperCase()) index = index * 26 + c.charCodeAt(0) - 64
  return index - 1
}

const sheetRows = (xml: string, shared: ReadonlyArray<string>, dates: ReadonlyArray<boolean>) => {
  const rows: Array<Array<string | undefined>> = []
  for (const r of xml.matchAll(/<row\b[^>]*?(?:\/>|>([\s\S]*?)<\/row>)/g)) {
    const row: Array<string | undefined> = []
    for (const c of (r[1] ?? "").matchAll(/<c\b([^>]*?)(?:\/>|>([\s\S]*?)<\/c>)/g)) {
      const a = attributesOf(c[1]!)
      const inner = c[2] ?? ""
      const v = /<v(?:\s[^>]*)?>([\s\S]*?)<\/v>/.exec(inner)?.[1]
      const raw = v === undefined ? undefined : decodeXml(v)
      let value: string | undefined
      if (a.t === "inlineStr") value = stringText(inner)
      else if (raw === undefined) value = undefined
      else if (a.t === "s") value = shared[Number(raw)]
      else if (a.t === "b") value = raw === "1" ? "TRUE" : "FALSE"
      else if (a.t === "str" || a.t === "e") value = raw
      else if (dates[Number(a.s ?? 0)] === true && Number.isFinite(Number(raw))) value = serialDate(Number(raw))
      else value = numberText(raw)
      row[columnOf(a.r) ?? row.length] = value
    }
    rows.push(row)
  }
  return rows
}

/** An XLSX's sheets in workbook order, each its rows as text. Throws on bytes that are not an XLSX. */
export const xlsxSheets = (bytes: Uint8Array): Array<Sheet> => {
  const entries = zipEntries(bytes)
  const workbook = readText(bytes, entries, "xl/workbook.xml")
  if (workbook === undefined) throw new Error("no xl/workbook.xml: not an XLSX")
  const rels = relationships(readText(bytes, entries, "xl/_rels/workbook.xml.rels"), "xl")
  const shared = Array.from(
    (readText(bytes, entries, "xl/sharedStrings.xml") ?? "").matchAll(/<si\b[^>]*>([\s\S]*?)<\/si>/g),
    (m) => stringText(m[1]!)
  )
  const dates = dateStyles(readText(bytes, entries, "xl/styles.xml"))
  const sheets: Array<Sheet> = []
  for (const m of workbook.matchAll(/<sheet\b[^>]*>/g)) {
    const a = attributesOf(m[0])
    const id = Object.entries(a).find(([key]) => key === "id" || key.endsWith(":id"))?.[1]
    const path = id === undefined ? undefined : rels.get(id)
    const xml = path === undefined ? undefined : readText(bytes, entries, path)
    // a chart sheet or a part that is missing has no rows
    if (xml === undefined) continue
    sheets.push({ name: a.name ?? `Sheet ${sheets.length + 1}`, text: rowsText(sheetRows(xml, shared, dates)) })
  }
  return sheets
}
