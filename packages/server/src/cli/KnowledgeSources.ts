/**
 * `parley knowledge add-source|sources|sync` (issue 41; docs/api.md, "Knowledge sources"): a table's sources
 * through the REST API of a running server, as `providers` and `eval run` go. The source's own address takes
 * `--url`, so the server's is `--server` here (else PARLEY_URL, else this host's PORT); the token is `--token`, else
 * PARLEY_TOKEN (`knowledge:write`, `knowledge:read` to list). A file goes up as multipart straight from the disk (up
 * to 50 MB; the server says 413 over it). `add-source` and `sync` then follow the source until it is `ready` or
 * `failed`: a progress bar on stderr when it is a terminal, a line per change otherwise, so a CI log stays readable.
 * Exit code 1 when the source ends `failed` (its reason printed), as for a refusal; 2 for a command line it cannot
 * read.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Config, type ConfigError, Console, Effect, Option, Redacted } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { record, table } from "./Format.js"
import { reportFailures, RunFailed, UsageError } from "./RemoteFailures.js"

export const options = {
  json: { type: "boolean" },
  server: { type: "string" },
  token: { type: "string" },
  file: { type: "string" },
  url: { type: "string" },
  kind: { type: "string" },
  "max-pages": { type: "string" },
  "max-depth": { type: "string" },
  include: { type: "string", multiple: true },
  exclude: { type: "string", multiple: true },
  sync: { type: "string" },
  "no-wait": { type: "boolean" }
} as const

export type SourceFlags = {
  readonly [K in keyof typeof options]?: (typeof options)[K] extends { readonly multiple: true } ? ReadonlyArray<string>
    : (typeof options)[K]["type"] extends "boolean" ? boolean
    : string
}

type Row = Record<string, unknown>

/** How often a followed source is read again: a page of a crawl takes about this long. */
const POLL_MS = 500

/** The types the server reads a file by, besides its name's extension. */
const TYPES: Record<string, string> = {
  ".pdf": "application/pdf",
  ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  ".csv": "text/csv",
  ".md": "text/markdown",
  ".markdown": "text/markdown",
  ".html": "text/html",
  ".htm": "text/html",
  ".txt": "text/plain"
}

const endpoint = (f: SourceFlags) =>
  Effect.gen(function*() {
    const port = yield* Config.integer("PORT").pipe(Config.withDefault(3000))
    const base = f.server ?? (yield* Config.string("PARLEY_URL").pipe(Config.withDefault(`http://127.0.0.1:${port}`)))
    const token = f.token ??
      Option.getOrUndefined(Option.map(yield* Config.option(Config.redacted("PARLEY_TOKEN")), Redacted.value))
    if (token === undefined || token === "") {
      return yield* new UsageError({
        message: "This command needs a token with knowledge:write: --token T or PARLEY_TOKEN"
      })
    }
    return { base: base.replace(/\/+$/, ""), token }
  })

/** One call of a table's sources: the answer's data, or the server's refusal as one failure naming the fields. */
const call = (f: SourceFlags, method: string, path: string, body?: FormData | Row) =>
  Effect.gen(function*() {
    const { base, token } = yield* endpoint(f)
    const answer = yield* Effect.tryPromise({
      try: async () => {
        const json = body !== undefined && !(body instanceof FormData)
        const response = await fetch(`${base}/api/user/knowledge-tables/${path}`, {
          method,
          headers: {
            authorization: `Bearer ${token}`,
            accept: "application/json",
            ...(json ? { "content-type": "application/json" } : {})
          },
          ...(body === undefined ? {} : { body: json ? JSON.stringify(body) : body as FormData })
        })
        const text = await response.text()
        let parsed: any = null
        try {
          parsed = text === "" ? null : JSON.parse(text)
        } catch {
          parsed = { message: text.slice(0, 200) }
        }
        return { status: response.status, body: parsed }
      },
      catch: (e) => new RunFailed({ message: `${base} does not answer: ${e instanceof Error ? e.message : String(e)}` })
    })
    if (answer.status >= 200 && answer.status < 300) return answer.body?.data as Row
    const validation: Array<{ field: string; message: string }> = answer.body?.validation ?? []
    const message = validation.length > 0
      ? validation.map((v) => `${v.field}: ${v.message}`).join("; ")
      : answer.body?.message ?? `The server answered ${answer.status}`
    return yield* new RunFailed({
      message: answer.status === 401 ? `${message} The token (--token or PARLEY_TOKEN) was refused.` : message
    })
  })

/** The positional ids after the command's two words, each a positive integer. */
const ids = (words: ReadonlyArray<string>, names: ReadonlyArray<string>, command: string, f: SourceFlags) => {
  // `eval run` and `providers` take the server's address as --url: said here rather than ignored
  if (f.url !== undefined && command !== "knowledge add-source") {
    return Effect.fail(new UsageError({ message: `${command} takes the server's address as --server URL` }))
  }
  const values = words.slice(2).map(Number)
  return values.length === names.length && values.every((n) => Number.isInteger(n) && n > 0)
    ? Effect.succeed(values)
    : Effect.fail(new UsageError({ message: `${command} needs ${names.map((n) => `<${n}>`).join(" ")}` }))
}

const count = (f: SourceFlags, flag: "max-pages" | "max-depth") => {
  const text = f[flag]
  if (text === undefined) return Effect.succeed(undefined)
  const value = Number(text)
  return /^\d+$/.test(text) ? Effect.succeed(value) : Effect.fail(new UsageError({ message: `--${flag} takes N` }))
}

/** The request of `add-source`: the file as multipart, or the web source as JSON. */
const payload = (f: SourceFlags) =>
  Effect.gen(function*() {
    if ((f.file === undefined) === (f.url === undefined)) {
      return yield* new UsageError({ message: "knowledge add-source takes --file PATH or --url URL" })
    }
    if (f.file !== undefined) {
      const path = f.file
      const blob = yield* Effect.tryPromise({
        try: () => Fs.openAsBlob(path, { type: TYPES[Path.extname(path).toLowerCase()] ?? "" }),
        catch: () => new UsageError({ message: `Cannot read ${path}` })
      })
      const form = new FormData()
      form.append("file", blob, Path.basename(path))
      return form
    }
    const kind = f.kind ?? "url"
    if (!["url", "sitemap", "crawl"].includes(kind)) {
      return yield* new UsageError({ message: "--kind takes url, sitemap or crawl" })
    }
    if (f.sync !== undefined && !["off", "daily", "weekly"].includes(f.sync)) {
      return yield* new UsageError({ message: "--sync takes off, daily or weekly" })
    }
    const body: Row = { kind, url: f.url }
    const maxPages = yield* count(f, "max-pages")
    const maxDepth = yield* count(f, "max-depth")
    if (maxPages !== undefined) body.max_pages = maxPages
    if (maxDepth !== undefined) body.max_depth = maxDepth
    if (f.include !== undefined) body.include = f.include
    if (f.exclude !== undefined) body.exclude = f.exclude
    if (f.sync !== undefined) body.sync = f.sync
    return body
  })

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`

const settled = (s: Row) => s.status === "ready" || s.status === "failed"

/** `3/10 pages` while it syncs (`3 pages` when the total is not known yet, as for a crawl). */
const pagesOf = (s: Row) => {
  const p = s.progress as { done: number; total: number | null } | null
  if (p === null) return plural(Number(s.pages), "page")
  return p.total === null ? plural(p.done, "page") : `${p.done}/${p.total} pages`
}

const bar = (s: Row) => {
  const p = s.progress as { done: number; total: number | null } | null
  const width = 24
  const filled = s.status === "ready"
    ? width
    : p !== null && p.total !== null && p.total > 0
    ? Math.min(width, Math.round((p.done / p.total) * width))
    : 0
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}]`
}

const progressLine = (s: Row) => `${String(s.status)}, ${pagesOf(s)}, ${plural(Number(s.points), "point")}`

/**
 * Reads the source until it is `ready` or `failed`, drawing its progress on stderr: one line redrawn on a terminal,
 * a line per change otherwise. Interrupting stops the following only: the server keeps syncing.
 */
const follow = (f: SourceFlags, tableId: number, first: Row) =>
  Effect.gen(function*() {
    const tty = process.stderr.isTTY === true
    let source = first
    let shown = ""
    for (;;) {
      const line = progressLine(source)
      if (tty) {
        process.stderr.write(`\r\x1b[2K${bar(source)} source ${String(source.id)}: ${line}`)
      } else if (line !== shown) {
        yield* Console.error(`source ${String(source.id)}: ${line}`)
      }
      shown = line
      if (settled(source)) break
      yield* Effect.sleep(POLL_MS)
      source = yield* call(f, "GET", `${tableId}/sources/${String(source.id)}`)
    }
    if (tty) process.stderr.write("\n")
    return source
  })

/** The source as the command ends: its record, and exit code 1 with its reason when it failed. */
const ending = (f: SourceFlags, tableId: number, created: Row, verb: string) =>
  Effect.gen(function*() {
    const source = f["no-wait"] === true ? created : yield* follow(f, tableId, created)
    if (source.status === "failed") {
      process.exitCode = 1
      yield* Console.error(`Error: source ${String(source.id)} failed: ${String(source.error ?? "no reason given")}`)
    }
    const next = f["no-wait"] === true
      ? `\n\n${verb}; follow it with: pnpm parley knowledge sources ${tableId}`
      : ""
    return { data: source, text: `${record(source, ["progress", "knowledge_table_id"])}${next}` }
  })

const addSource = (words: ReadonlyArray<string>, f: SourceFlags) =>
  Effect.gen(function*() {
    const [tableId] = yield* ids(words, ["table-id"], "knowledge add-source", f)
    const body = yield* payload(f)
    const created = yield* call(f, "POST", `${tableId}/sources`, body)
    return yield* ending(f, tableId!, created, "Added")
  })

const listSources = (words: ReadonlyArray<string>, f: SourceFlags) =>
  Effect.gen(function*() {
    const [tableId] = yield* ids(words, ["table-id"], "knowledge sources", f)
    const rows = (yield* call(f, "GET", `${tableId}/sources`)) as unknown as Array<Row>
    return {
      data: rows,
      text: rows.length === 0 ? "No sources." : table(rows, [
        ["ID", (s) => s.id],
        ["KIND", (s) => s.kind],
        ["NAME", (s) => s.name],
        ["STATUS", (s) => s.status],
        ["PAGES", (s) => pagesOf(s).replace(/ pages?$/, "")],
        ["POINTS", (s) => s.points],
        ["SYNC", (s) => s.sync],
        ["LAST SYNCED", (s) => s.last_synced_at],
        ["ERROR", (s) => s.error]
      ])
    }
  })

const syncSource = (words: ReadonlyArray<string>, f: SourceFlags) =>
  Effect.gen(function*() {
    const [tableId, sourceId] = yield* ids(words, ["table-id", "source-id"], "knowledge sync", f)
    const requested = yield* call(f, "POST", `${tableId}/sources/${sourceId}/sync`)
    return yield* ending(f, tableId!, requested, "Sync requested")
  })

const commands: Record<
  string,
  (
    words: ReadonlyArray<string>,
    f: SourceFlags
  ) => Effect.Effect<{ data: unknown; text: string }, UsageError | RunFailed | ConfigError.ConfigError>
> = { "add-source": addSource, sources: listSources, sync: syncSource }

/** Runs `knowledge add-source|sources|sync` (main.ts sends `knowledge import` elsewhere) and exits with its code. */
export const runKnowledgeSources = (words: ReadonlyArray<string>, flags: SourceFlags, usage: string) => {
  const command = commands[words[1] ?? ""]
  const program = (command === undefined
    ? Effect.fail(new UsageError({ message: `Unknown command: ${words.join(" ")}` }))
    : command(words, flags)).pipe(
      Effect.flatMap((answer) => Console.log(flags.json === true ? JSON.stringify(answer.data) : answer.text)),
      reportFailures(flags.json === true, usage)
    )
  NodeRuntime.runMain(program, { disableErrorReporting: false })
}
