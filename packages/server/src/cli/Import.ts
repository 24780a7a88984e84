/**
 * `pnpm parley knowledge import`: reads a CSV (header row, RFC 4180) or JSON Lines file in the CLI
 * process, converts the cells to the table's column types and sends the rows in batches as
 * `knowledge.upsert` admin commands (to the running server's admin endpoint, or run here). A batch that
 * fails validation is sent again row by row, to find the rejected rows and why; the import goes on.
 */
import { parse } from "csv-parse/sync"
import { Effect, Schema } from "effect"
import * as Fs from "node:fs"
import type { AdminCommand } from "../admin/AdminCommand.js"
import { csvDelimiter, LINE_ENDS } from "../files/Spreadsheets.js"
import type { CommandFailed } from "../identity/CommandFailed.js"

export class ImportUsageError
  extends Schema.TaggedError<ImportUsageError>()("ImportUsageError", { message: Schema.String })
{}

/** Runs one admin command, here or through the server. */
export type Execute = (command: AdminCommand) => Effect.Effect<unknown, CommandFailed>

export interface Column {
  readonly name: string
  readonly data_type: "string" | "number" | "boolean" | "date"
}

export interface Issue {
  readonly field: string
  readonly message: string
}

export interface Rejected {
  /** The record's number in the file, 1 for the first data row (the CSV header is not counted). */
  readonly row: number
  readonly default_id: string | null
  readonly errors: ReadonlyArray<Issue>
}

export interface ImportResult {
  readonly upserted: number
  readonly rejected: ReadonlyArray<Rejected>
}

/** One record of the file: a point to send, or a problem found before sending. */
export type Row =
  | { readonly row: number; readonly point: Record<string, unknown> }
  | { readonly row: number; readonly default_id: string | null; readonly errors: ReadonlyArray<Issue> }

/**
 * The file's records, read by csv-parse (RFC 4180: a quoted field may hold delimiters, line breaks and `""` for a
 * quote), separated by commas, or by what the file shows it uses (`csvDelimiter`: `;` when the header line has more of
 * them, tabs for a `.tsv`). A leading BOM is dropped, blank lines are not records, a row may have more or fewer fields
 * than the header (reported per row); a quote left open throws.
 */
export const parseCsv = (text: string, name = ""): Array<Array<string>> =>
  parse(text, {
    delimiter: csvDelimiter(text.replace(/^\uFEFF/, ""), name),
    bom: true,
    record_delimiter: LINE_ENDS,
    relax_column_count: true,
    relax_quotes: true,
    skip_empty_lines: true
  })

/** A CSV cell as its column's type; a cell that does not convert is sent as text, so the server names the problem. */
export const convertCell = (type: Column["data_type"] | undefined, cell: string): unknown => {
  switch (type) {
    case "number": {
      const trimmed = cell.trim()
      const n = Number(trimmed)
      return trimmed !== "" && Number.isFinite(n) ? n : cell
    }
    case "boolean": {
      const v = cell.trim().toLowerCase()
      if (v === "true" || v === "1" || v === "yes") return true
      if (v === "false" || v === "0" || v === "no") return false
      return cell
    }
    default:
      return cell
  }
}

const fromCsv = (
  text: string,
  file: string,
  columns: ReadonlyArray<Column>
): Effect.Effect<Array<Row>, ImportUsageError> =>
  Effect.gen(function*() {
    const records = yield* Effect.try({
      try: () => parseCsv(text, file),
      catch: (e) => new ImportUsageError({ message: `Cannot parse the CSV file: ${(e as Error).message}` })
    })
    const [header, ...data] = records
    if (!header) {
      return yield* new ImportUsageError({
        message: "The CSV file is empty: it needs a header row with a default_id column"
      })
    }
    const names = header.map((h) => h.trim())
    if (!names.includes("default_id")) {
      return yield* new ImportUsageError({
        message: `The CSV header has no default_id column (it has: ${names.join(", ")})`
      })
    }
    const byName = new Map(columns.map((c) => [c.name, c]))
    const unknown = names.filter((n) => n !== "default_id" && !byName.has(n))
    if (unknown.length > 0) {
      return yield* new ImportUsageError({
        message: `Not columns of this table: ${unknown.join(", ")} (its columns: ${
          columns.map((c) => c.name).join(", ")
        })`
      })
    }
    return data.map((cells, index): Row => {
      const row = index + 1
      if (cells.length !== names.length) {
        return {
          row,
          default_id: cells[names.indexOf("default_id")] ?? null,
          errors: [{ field: "", message: `The row has ${cells.length} fields, the header has ${names.length}.` }]
        }
      }
      const point: Record<string, unknown> = {}
      names.forEach((name, j) => {
        const cell = cells[j]!
        if (cell === "") return // empty cell: omitted
        point[name] = name === "default_id" ? cell : convertCell(byName.get(name)?.data_type, cell)
      })
      return { row, point }
    })
  })

const fromJsonLines = (text: string): Array<Row> => {
  const rows: Array<Row> = []
  let row = 0
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === "") continue
    row++
    let value: unknown
    try {
      value = JSON.parse(line)
    } catch (e) {
      rows.push({
        row,
        default_id: null,
        errors: [{ field: "", message: `The line is not valid JSON (${(e as Error).message}).` }]
      })
      continue
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      rows.push({ row, default_id: null, errors: [{ field: "", message: "The line is not a JSON object." }] })
    } else {
      rows.push({ row, point: value as Record<string, unknown> })
    }
  }
  return rows
}

/** The file's records; `.jsonl`/`.ndjson` are JSON Lines, anything else CSV. */
export const readRows = (file: string, columns: ReadonlyArray<Column>) =>
  Effect.gen(function*() {
    const text = yield* Effect.try({
      try: () => Fs.readFileSync(file, "utf8"),
      catch: (e) => new ImportUsageError({ message: `Cannot read ${file}: ${(e as Error).message}` })
    })
    return /\.(jsonl|ndjson)$/i.test(file) ? fromJsonLines(text) : yield* fromCsv(text, file, columns)
  })

const idOf = (point: Record<string, unknown>) =>
  point.default_id === undefined || point.default_id === null ? null : String(point.default_id)

/** `points.3.price` → `price`, in the field and in the message that names it. */
const localIssue = (issue: Issue): Issue => {
  const prefix = /^points\.\d+\.?/.exec(issue.field)?.[0] ?? ""
  return {
    field: issue.field.slice(prefix.length),
    message: prefix === "" ? issue.message : issue.message.split(prefix).join("")
  }
}

type BatchResult = { readonly upserted: number } | { readonly rejected: ReadonlyArray<Issue> }

export interface Progress {
  readonly update: (done: number) => void
  readonly finish: () => void
}

/** A bar redrawn in place on a terminal, a line per batch otherwise; always on stderr. */
export const progressReporter = (total: number, stream: NodeJS.WriteStream = process.stderr): Progress => {
  const started = Date.now()
  const rate = (done: number) => done / Math.max((Date.now() - started) / 1000, 0.001)
  if (stream.isTTY) {
    let last = ""
    const draw = (done: number) => {
      const width = 30
      const filled = total === 0 ? width : Math.round((done / total) * width)
      const line = `[${"#".repeat(filled)}${".".repeat(width - filled)}] ${done}/${total} rows  ${
        rate(done).toFixed(1)
      } rows/s`
      if (line !== last) stream.write(`\r${line}\x1b[K`)
      last = line
    }
    return { update: draw, finish: () => stream.write("\n") }
  }
  return {
    update: (done) => stream.write(`${done}/${total} rows (${rate(done).toFixed(1)} rows/s)\n`),
    finish: () => {}
  }
}

export const runImport = (options: {
  readonly execute: Execute
  readonly tableId: number
  readonly rows: ReadonlyArray<Row>
  readonly batchSize: number
  readonly progress: Progress
}) =>
  Effect.gen(function*() {
    const { execute, tableId, progress } = options
    const send = (points: ReadonlyArray<Record<string, unknown>>) =>
      execute({ _tag: "knowledge.upsert", tableId: tableId as never, points }).pipe(Effect.map((r) => r as BatchResult))
    const rejected: Array<Rejected> = []
    let upserted = 0
    let done = 0
    const sendable: Array<{ row: number; point: Record<string, unknown> }> = []
    for (const r of options.rows) {
      if ("point" in r) sendable.push(r)
      else rejected.push({ row: r.row, default_id: r.default_id, errors: r.errors })
    }
    done = options.rows.length - sendable.length
    progress.update(done)
    for (let start = 0; start < sendable.length; start += options.batchSize) {
      const batch = sendable.slice(start, start + options.batchSize)
      const result = yield* send(batch.map((b) => b.point))
      if ("upserted" in result) {
        upserted += batch.length
      } else {
        // which rows? one by one (a batch stops at the first kind of problem, and rows may clash with each other)
        for (const b of batch) {
          const single = yield* send([b.point])
          if ("upserted" in single) upserted++
          else rejected.push({ row: b.row, default_id: idOf(b.point), errors: single.rejected.map(localIssue) })
        }
      }
      done += batch.length
      progress.update(done)
    }
    progress.finish()
    rejected.sort((a, b) => a.row - b.row)
    return { upserted, rejected } satisfies ImportResult
  })

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`

/** The summary for people: counts, the first 20 rejected rows with their reasons, elapsed time. */
export const summary = (result: ImportResult, elapsedMs: number) => {
  const lines = [
    `Upserted ${result.upserted} row${result.upserted === 1 ? "" : "s"}, rejected ${result.rejected.length}, in ${
      seconds(elapsedMs)
    }`
  ]
  for (const r of result.rejected.slice(0, 20)) {
    const reasons = r.errors.map((e) => e.message).join("; ")
    lines.push(`  row ${r.row}${r.default_id !== null ? ` (default_id ${r.default_id})` : ""}: ${reasons}`)
  }
  if (result.rejected.length > 20) lines.push(`  ... and ${result.rejected.length - 20} more (--json lists them all)`)
  return lines.join("\n")
}
