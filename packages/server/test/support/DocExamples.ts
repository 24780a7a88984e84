/**
 * The shell examples of README.md and docs/*.md as a test runs them (the conventions are the ones
 * docs/api.md's "Examples in these docs" states for doc writers): each fenced `sh` block is either run
 * or named in a reviewed skip list with its reason; a document's blocks run in order in one bash, with
 * `curl` wrapped to record each request and its answer.
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

export interface Block {
  readonly file: string
  /** 1-based line of the opening fence */
  readonly line: number
  readonly lang: string
  readonly body: string
  /** A ```json block that follows this one with nothing but blank lines between: the answer of its last request. */
  readonly answer?: string | undefined
}

/** The fenced code blocks of a markdown file, in order. */
export const blocksOf = (file: string, text: string): Array<Block> => {
  const lines = text.split("\n")
  const blocks: Array<Block> = []
  let i = 0
  while (i < lines.length) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!)
    if (open === null) {
      i++
      continue
    }
    const start = i
    const body: Array<string> = []
    i++
    while (i < lines.length && !/^```\s*$/.test(lines[i]!)) body.push(lines[i++]!)
    i++
    blocks.push({ file, line: start + 1, lang: open[1]!, body: body.join("\n") })
  }
  // pair each block with a json block right after it
  return blocks.map((block, n) => {
    const next = blocks[n + 1]
    if (next === undefined || next.lang !== "json") return block
    const end = block.line + block.body.split("\n").length + 1
    const between = lines.slice(end, next.line - 1)
    return between.every((l) => l.trim() === "") ? { ...block, answer: next.body } : block
  })
}

/** README.md, then docs/*.md by name. */
export const documents = (root: string) => [
  "README.md",
  ...Fs.readdirSync(Path.join(root, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`)
]

export const shellBlocks = (root: string) =>
  documents(root).flatMap((file) =>
    blocksOf(file, Fs.readFileSync(Path.join(root, file), "utf8")).filter((b) => b.lang === "sh")
  )

/** A block's key in the skip list: its file and its first line. */
export const keyOf = (block: Block) => `${block.file}: ${block.body.split("\n")[0]!.trim()}`

/** `curl` at the start of a command (a line, or after `&&`, `;`, `|`, `(`). */
const curlCommand = /(^|[;&|(]\s*)curl\s/gm

export const curlCount = (block: Block) => [...block.body.matchAll(curlCommand)].length

/** A block is runnable when it makes requests with curl or only sets variables. */
export const isRunnable = (block: Block) => {
  if (curlCount(block) > 0) return true
  const lines = block.body.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"))
  return lines.length > 0 && lines.every((l) => l.startsWith("export "))
}

/** `export NAME=value  # the answer's data.id` takes the value from the previous request's JSON answer. */
const capture = /^export ([A-Z_][A-Z0-9_]*)=\S+\s+# the answer's ([\w.]+)/
/** `export NAME=pat_...`: a value the reader fills in from the start banner (`...` marks it). */
const placeholder = /^export ([A-Z_][A-Z0-9_]*)=("?)([^\s"]*\.\.\.[^\s"]*)\2(\s|$)/
/** `# => ...`: the answer of the request just before. */
const expectation = /^\s*# =>/

export interface Substitutions {
  /** The documents' addresses and the server's. */
  readonly urls: ReadonlyArray<readonly [string, string]>
  /** Values of placeholder exports, by variable name. */
  readonly placeholders: Readonly<Record<string, string>>
}

export const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`

/**
 * One document's blocks as a bash script. Lines are rewritten only by the conventions: addresses,
 * placeholder exports, captures from answers and `# =>` expectations (a call to `__expect` with the
 * block's index and the line's index in it).
 */
export const scriptOf = (
  blocks: ReadonlyArray<{ readonly block: Block; readonly index: number }>,
  subs: Substitutions
) => {
  const out: Array<string> = [prelude]
  for (const { block, index } of blocks) {
    out.push(`__block ${index}`)
    const lines = block.body.split("\n")
    lines.forEach((raw, n) => {
      let line = raw
      for (const [from, to] of subs.urls) line = line.split(from).join(to)
      const captured = capture.exec(line)
      const held = placeholder.exec(line)
      if (captured !== null) {
        out.push(`export ${captured[1]}="$(__answer ${index} ${n} ${shellQuote(captured[2]!)})"`)
      } else if (held !== null) {
        const value = subs.placeholders[held[1]!]
        out.push(value === undefined ? `__unknown_placeholder ${index} ${n}` : `export ${held[1]}=${shellQuote(value)}`)
      } else if (expectation.test(line)) {
        out.push(`__expect ${index} ${n}`)
      } else {
        out.push(line)
      }
    })
    if (block.answer !== undefined) out.push(`__expect ${index} json`)
  }
  return out.join("\n") + "\n"
}

/**
 * The wrapper: every request's arguments, status, headers, body and curl's exit code under `$__LOG/<n>/`
 * (a counter file, so a request in a subshell counts too); the body still goes to stdout as curl would.
 */
const prelude = String.raw`
__block() { echo "$1" > "$__LOG/block"; }
curl() {
  local n=$(( $(cat "$__LOG/n" 2>/dev/null || echo 0) + 1 ))
  echo "$n" > "$__LOG/n"
  local dir="$__LOG/$n"
  mkdir -p "$dir"
  cp "$__LOG/block" "$dir/block"
  printf '%s\0' "$@" > "$dir/args"
  command curl "$@" -o "$dir/body" -D "$dir/headers" -w '%{http_code}' > "$dir/status" 2> "$dir/stderr"
  echo $? > "$dir/exit"
  cat "$dir/body" 2>/dev/null
}
__expect() { echo "$(cat "$__LOG/n" 2>/dev/null || echo 0) $1 $2" >> "$__LOG/expects"; }
__answer() {
  local n=$(cat "$__LOG/n" 2>/dev/null || echo 0)
  "$__NODE" -e '
    const [file, path] = process.argv.slice(1)
    let value
    try { value = path.split(".").reduce((v, k) => v == null ? undefined : v[k], JSON.parse(require("fs").readFileSync(file, "utf8"))) } catch {}
    if (value === undefined || value === null || typeof value === "object") process.exit(1)
    process.stdout.write(String(value))
  ' "$__LOG/$n/body" "$3" || { echo "$n $1 $2 $3" >> "$__LOG/missing"; echo "__missing__"; }
}
__unknown_placeholder() { echo "$1 $2" >> "$__LOG/placeholders"; }
`

export interface Call {
  readonly n: number
  readonly block: number
  readonly args: ReadonlyArray<string>
  readonly status: number
  readonly exit: number
  readonly stderr: string
  readonly body: string
}

const read = (file: string) => (Fs.existsSync(file) ? Fs.readFileSync(file, "utf8") : "")

export interface Log {
  readonly calls: ReadonlyArray<Call>
  /** The request each expectation names: [call number, block index, line index in the block or "json"] */
  readonly expects: ReadonlyArray<readonly [number, number, string]>
  /** Captures that found nothing: [call number, block index, line index, path] */
  readonly missing: ReadonlyArray<readonly [number, number, number, string]>
  /** Placeholder exports the test has no value for: [block index, line index] */
  readonly placeholders: ReadonlyArray<readonly [number, number]>
}

const rows = (text: string) => text.split("\n").filter((l) => l.trim() !== "").map((l) => l.split(" "))

export const readLog = (dir: string): Log => {
  const count = Number(read(Path.join(dir, "n")) || 0)
  const calls = Array.from({ length: count }, (_, i): Call => {
    const at = Path.join(dir, String(i + 1))
    return {
      n: i + 1,
      block: Number(read(Path.join(at, "block"))),
      args: read(Path.join(at, "args")).split("\0").slice(0, -1),
      status: Number(read(Path.join(at, "status"))),
      exit: Number(read(Path.join(at, "exit"))),
      stderr: read(Path.join(at, "stderr")),
      body: read(Path.join(at, "body"))
    }
  })
  return {
    calls,
    expects: rows(read(Path.join(dir, "expects"))).map(([n, b, l]) => [Number(n), Number(b), l!] as const),
    missing: rows(read(Path.join(dir, "missing"))).map(([n, b, l, p]) =>
      [Number(n), Number(b), Number(l), p!] as const
    ),
    placeholders: rows(read(Path.join(dir, "placeholders"))).map(([b, l]) => [Number(b), Number(l)] as const)
  }
}

export interface Expected {
  readonly status?: number
  /** `status` of the envelope */
  readonly ok?: boolean
  readonly message?: string
  /** the field names of `validation`, in order */
  readonly fields?: ReadonlyArray<string>
  /** the answer as the doc shows it, when it is whole JSON: every key it shows must be in the real one */
  readonly shape?: unknown
}

/** What an expectation (a `# =>` comment and the comment lines under it, or a json block) claims. */
export const expectedFrom = (text: string): Expected => {
  const json = (() => {
    try {
      return JSON.parse(text) as unknown
    } catch {
      return undefined
    }
  })()
  const code = /"code":\s*(\d{3})/.exec(text)?.[1] ?? /^\s*#\s*=>\s*(\d{3})\b/.exec(text)?.[1]
  const ok = /"status":\s*(true|false)/.exec(text)?.[1]
  const message = /"message":\s*"((?:[^"\\]|\\.)*)"/.exec(text)?.[1]
  const record = json !== null && typeof json === "object" && !Array.isArray(json)
    ? (json as Record<string, unknown>)
    : undefined
  const validation = record?.validation
  return {
    ...(code === undefined ? {} : { status: Number(code) }),
    ...(ok === undefined ? {} : { ok: ok === "true" }),
    ...(message === undefined || message.includes("...") ? {} : { message: JSON.parse(`"${message}"`) as string }),
    ...(Array.isArray(validation) && validation.length > 0
      ? { fields: validation.map((v) => (v as { field: string }).field) }
      : {}),
    ...(json === undefined ? {} : { shape: json })
  }
}

/** Keys the documented shape shows that the real answer lacks, as dotted paths. */
export const missingKeys = (shown: unknown, actual: unknown, path = ""): Array<string> => {
  if (Array.isArray(shown)) {
    return Array.isArray(actual) && shown.length > 0 && actual.length > 0
      ? missingKeys(shown[0], actual[0], `${path}.0`)
      : []
  }
  if (shown === null || typeof shown !== "object") return []
  if (actual === null || typeof actual !== "object" || Array.isArray(actual)) {
    return [path === "" ? "(root)" : path.slice(1)]
  }
  return Object.entries(shown as Record<string, unknown>).flatMap(([key, value]) =>
    key in (actual as Record<string, unknown>)
      ? missingKeys(value, (actual as Record<string, unknown>)[key], `${path}.${key}`)
      : [`${path}.${key}`.slice(1)]
  )
}

export const where = (block: Block) => `${block.file}:${block.line}`

/** The text of the `# =>` comment at `line` of `block` and the comment lines right under it. */
const commentAt = (block: Block, line: number) => {
  const lines = block.body.split("\n")
  const out = [lines[line]!.replace(/^\s*# =>/, "")]
  for (let i = line + 1; i < lines.length && /^\s*#/.test(lines[i]!) && !/^\s*# =>/.test(lines[i]!); i++) {
    out.push(lines[i]!.replace(/^\s*#/, ""))
  }
  return `# =>${out.join("\n")}`
}

const parse = (body: string): unknown => {
  try {
    return JSON.parse(body)
  } catch {
    return body
  }
}

const is2xx = (status: number) => status >= 200 && status <= 299

/** What one request's answer breaks of what the document claims for it. */
const checkCall = (
  all: ReadonlyArray<Block>,
  call: Call,
  claims: ReadonlyArray<readonly [number, number, string]>,
  servers: ReadonlyArray<string>
) => {
  const label = `${where(all[call.block]!)} curl ${call.args.filter((a) => /^https?:\/\//.test(a)).join(" ")}`
  if (call.exit !== 0) return [`${label}: curl exited with ${call.exit}: ${call.stderr}`]
  const problems: Array<string> = []
  const url = call.args.find((a) => /^https?:\/\//.test(a))
  if (url === undefined || !servers.some((s) => url.startsWith(`${s}/`) || url === s)) {
    problems.push(`${label}: not a request to this server`)
  }
  if (claims.length === 0) {
    if (!is2xx(call.status)) problems.push(`${label}: ${call.status} (no answer shown, so 2xx expected): ${call.body}`)
    return problems
  }
  const body = parse(call.body)
  const envelope = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>
  for (const [, b, line] of claims) {
    const expected = expectedFrom(line === "json" ? all[b]!.answer! : commentAt(all[b]!, Number(line)))
    if (expected.status !== undefined ? call.status !== expected.status : !is2xx(call.status)) {
      problems.push(`${label}: ${call.status}, the doc shows ${expected.status ?? "2xx"}: ${call.body}`)
    }
    if (expected.ok !== undefined && envelope.status !== expected.ok) {
      problems.push(`${label}: "status": ${String(envelope.status)}, the doc shows ${expected.ok}`)
    }
    if (expected.message !== undefined && envelope.message !== expected.message) {
      problems.push(
        `${label}: message ${JSON.stringify(envelope.message)}, the doc shows ${JSON.stringify(expected.message)}`
      )
    }
    const fields = Array.isArray(envelope.validation) ? envelope.validation.map((v: { field: string }) => v.field) : []
    if (
      expected.fields !== undefined &&
      JSON.stringify([...fields].sort()) !== JSON.stringify([...expected.fields].sort())
    ) {
      problems.push(`${label}: validation names ${fields.join(", ")}, the doc shows ${expected.fields.join(", ")}`)
    }
    if (expected.shape !== undefined) {
      // a json block shows the whole answer, or only its `data` ("(`data` shown.)")
      const shape = expected.shape as Record<string, unknown>
      const lacking = missingKeys(shape, "status" in shape || !("data" in envelope) ? body : envelope.data)
      if (lacking.length > 0) {
        problems.push(`${label}: the answer lacks ${lacking.join(", ")}, which the doc shows: ${call.body}`)
      }
    }
  }
  return problems
}

export interface Run {
  readonly problems: ReadonlyArray<string>
  readonly requests: number
}

/**
 * Runs one document's blocks (`indices` into `all`) in one bash in `cwd` with only `env` (and PATH),
 * and checks every request against what the document claims. `servers`: the addresses requests may go to.
 */
export const runDocument = (options: {
  readonly all: ReadonlyArray<Block>
  readonly indices: ReadonlyArray<number>
  readonly subs: Substitutions
  readonly servers: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  readonly cwd: string
}): Run => {
  const { all, cwd, env, indices, servers, subs } = options
  const log = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-docs-log-"))
  try {
    const result = spawnSync("bash", [
      "--noprofile",
      "--norc",
      "-c",
      scriptOf(indices.map((index) => ({ block: all[index]!, index })), subs)
    ], {
      cwd,
      encoding: "utf8",
      timeout: 120_000,
      env: { PATH: process.env.PATH!, ...env, __LOG: log, __NODE: process.execPath }
    })
    const problems: Array<string> = []
    if (result.status !== 0) problems.push(`bash exited with ${result.status ?? result.signal}: ${result.stderr}`)
    const { calls, expects, missing, placeholders } = readLog(log)
    for (const index of indices) {
      const block = all[index]!
      const made = calls.filter((c) => c.block === index).length
      // at least one request per curl command (a polling loop makes more)
      if (made < curlCount(block)) {
        problems.push(`${where(block)}: ${curlCount(block)} curl commands, ${made} requests made`)
      }
    }
    for (const [b, line] of placeholders) {
      problems.push(`${where(all[b]!)}: no value for the placeholder export on line ${line + 1} of the block`)
    }
    for (const [n, b, line, path] of missing) {
      problems.push(
        `${where(all[b]!)}: line ${line + 1} of the block captures ${path}, which answer ${n} lacks: ${
          calls[n - 1]?.body
        }`
      )
    }
    for (const call of calls) problems.push(...checkCall(all, call, expects.filter(([n]) => n === call.n), servers))
    return { problems, requests: calls.length }
  } finally {
    Fs.rmSync(log, { recursive: true, force: true })
  }
}
