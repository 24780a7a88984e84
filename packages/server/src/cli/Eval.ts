/**
 * `parley eval run --pipeline N --cases evals/*.yaml` (docs/evals.md): reads the case files (YAML or
 * JSON: one case, a list of cases, or `{cases: [...]}`; YAML files may hold several documents), starts a
 * run over the REST API (`--url`, else PARLEY_URL, else this host's PORT; `--token`, else PARLEY_TOKEN)
 * and follows it, each case's verdict on stderr as it comes. Exit code 0 only when every case passed,
 * 1 when one did not, 2 for a usage error or cases the server refused. `--json` prints the run.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Config, Console, Duration, Effect, Option, Redacted } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { parseAllDocuments } from "yaml"
import { reportFailures, RunFailed, UsageError } from "./RemoteFailures.js"

export const options = {
  json: { type: "boolean" },
  pipeline: { type: "string" },
  cases: { type: "string", multiple: true },
  version: { type: "string" },
  concurrency: { type: "string" },
  url: { type: "string" },
  token: { type: "string" }
} as const

export interface EvalFlags {
  readonly json?: boolean
  readonly pipeline?: string
  readonly cases?: ReadonlyArray<string>
  readonly version?: string
  readonly concurrency?: string
  readonly url?: string
  readonly token?: string
}

/** A `*` in a path's last segment, for shells that did not expand it (quoted, or on Windows). */
const expand = (pattern: string): Array<string> => {
  if (!pattern.includes("*")) return [pattern]
  const dir = Path.dirname(pattern)
  const re = new RegExp(`^${Path.basename(pattern).replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*")}$`)
  const names = Fs.existsSync(dir) ? Fs.readdirSync(dir).filter((n) => re.test(n)).sort() : []
  return names.map((n) => Path.join(dir, n))
}

/** Every case of one file, each a plain object for the server to check. */
export const casesIn = (file: string, text: string): Array<unknown> => {
  const docs = /\.json$/i.test(file)
    ? [JSON.parse(text) as unknown]
    : parseAllDocuments(text).map((d) => {
      if (d.errors.length > 0) throw new Error(d.errors[0]!.message)
      return d.toJS() as unknown
    })
  return docs.filter((d) => d !== null && d !== undefined).flatMap((d) =>
    Array.isArray(d)
      ? d
      : typeof d === "object" && Array.isArray((d as { cases?: unknown }).cases)
      ? (d as { cases: Array<unknown> }).cases
      : [d]
  )
}

const readCases = (patterns: ReadonlyArray<string>) =>
  Effect.try({
    try: () => {
      const files = patterns.flatMap(expand)
      if (files.length === 0) throw new Error(`No case files match ${patterns.join(" ")}`)
      return files.flatMap((file) => {
        if (!Fs.existsSync(file)) throw new Error(`Cannot read ${file}: no such file`)
        try {
          return casesIn(file, Fs.readFileSync(file, "utf8")).map((c) => ({ file, case: c }))
        } catch (e) {
          throw new Error(`${file}: ${e instanceof Error ? e.message : String(e)}`)
        }
      })
    },
    catch: (e) => new UsageError({ message: e instanceof Error ? e.message : String(e) })
  })

interface Answer {
  readonly status: number
  readonly body: any
}

const request = (base: string, token: string, path: string, body?: unknown) =>
  Effect.tryPromise({
    try: async (): Promise<Answer> => {
      const response = await fetch(`${base}${path}`, {
        method: body === undefined ? "GET" : "POST",
        headers: {
          authorization: `Bearer ${token}`,
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" })
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      const text = await response.text()
      return { status: response.status, body: text === "" ? null : JSON.parse(text) }
    },
    catch: (e) => new RunFailed({ message: `${base} does not answer: ${e instanceof Error ? e.message : String(e)}` })
  })

const failedVerdicts = (result: any) =>
  result.error !== null
    ? [`    ${result.error}`]
    : (result.verdicts as Array<any>).filter((v) => !v.passed).map((v) =>
      `    ${v.expectation}${v.message === null ? "" : ` (message ${v.message})`}: expected ${
        JSON.stringify(v.expected)
      }. ${v.detail}`
    )

const line = (result: any) =>
  [
    `${result.status === "passed" ? "PASS" : "FAIL"} ${result.name} (${result.cost.toFixed(6)})`,
    ...(result.status === "passed" ? [] : failedVerdicts(result))
  ].join("\n")

const summary = (run: any) => {
  const c = run.comparison
  const versus = c === null
    ? ""
    : `\nPrevious run ${c.previous_run_id}: ${c.previous_passed} passed, ${c.previous_failed} failed, cost ${
      c.previous_cost.toFixed(6)
    }.` +
      (c.newly_failing.length > 0 ? `\nNewly failing: ${c.newly_failing.join(", ")}` : "") +
      (c.newly_passing.length > 0 ? `\nNewly passing: ${c.newly_passing.join(", ")}` : "")
  return `Eval run ${run.id} ${run.status}: ${run.passed} passed, ${run.failed} failed of ${run.cases}, cost ${
    run.cost.toFixed(6)
  }.${versus}`
}

const evalRun = (f: EvalFlags, files: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const pipeline = Number(f.pipeline)
    if (f.pipeline === undefined || !Number.isInteger(pipeline) || pipeline <= 0) {
      return yield* new UsageError({ message: "eval run needs --pipeline N (a positive integer)" })
    }
    const patterns = [...(f.cases ?? []), ...files]
    if (patterns.length === 0) {
      return yield* new UsageError({ message: "eval run needs --cases FILE... (YAML or JSON)" })
    }
    const port = yield* Config.integer("PORT").pipe(Config.withDefault(3000))
    const base = (f.url ?? (yield* Config.string("PARLEY_URL").pipe(Config.withDefault(`http://127.0.0.1:${port}`))))
      .replace(/\/+$/, "")
    const token = f.token ??
      Option.getOrUndefined(Option.map(yield* Config.option(Config.redacted("PARLEY_TOKEN")), Redacted.value))
    if (token === undefined || token === "") {
      return yield* new UsageError({ message: "eval run needs a token: --token T or PARLEY_TOKEN" })
    }
    const cases = yield* readCases(patterns)
    const started = yield* request(base, token, `/api/user/pipelines/${pipeline}/eval-runs`, {
      cases: cases.map((c) => c.case),
      ...(f.version === undefined ? {} : { version: /^[0-9]+$/.test(f.version) ? Number(f.version) : f.version }),
      ...(f.concurrency === undefined ? {} : { concurrency: Number(f.concurrency) })
    })
    if (started.status === 422) {
      // `cases.3.expect.stage` names the file the case came from
      const where = (field: string) => {
        const i = Number(field.match(/^cases\.(\d+)/)?.[1])
        return Number.isInteger(i) && cases[i] !== undefined
          ? `${cases[i]!.file}: ${field.replace(/^cases\.\d+\.?/, "") || "case"}`
          : field
      }
      const problems = (started.body?.validation ?? []).map((v: any) => `  ${where(v.field)}: ${v.message}`).join("\n")
      return yield* new UsageError({ message: `The server refused the cases:\n${problems}` })
    }
    if (started.status !== 202) {
      return yield* new RunFailed({ message: `${started.status} ${started.body?.message ?? "from the server"}` })
    }
    const runId = started.body.data.id as number
    yield* Console.error(`Eval run ${runId}: ${cases.length} case(s) on pipeline ${pipeline}`)
    const reported = new Set<number>()
    let run = started.body.data
    while (true) {
      for (const r of run.results as Array<any>) {
        if (!reported.has(r.position) && r.status !== "pending" && r.status !== "running") {
          reported.add(r.position)
          yield* Console.error(line(r))
        }
      }
      if (run.status !== "running") break
      yield* Effect.sleep(Duration.seconds(1))
      const answer = yield* request(base, token, `/api/user/eval-runs/${runId}`)
      if (answer.status !== 200) {
        return yield* new RunFailed({ message: `${answer.status} ${answer.body?.message ?? "reading the run"}` })
      }
      run = answer.body.data
    }
    yield* Console.log(f.json === true ? JSON.stringify(run) : summary(run))
    if (run.status !== "passed") process.exitCode = 1
  })

/** Runs `eval <words>` and exits with its code. */
export const runEval = (words: ReadonlyArray<string>, flags: EvalFlags) => {
  const program = (words[1] === "run"
    ? evalRun(flags, words.slice(2))
    : Effect.fail(new UsageError({ message: `Unknown command: ${words.join(" ")}` }))).pipe(
      reportFailures(flags.json === true)
    )
  NodeRuntime.runMain(program, { disableErrorReporting: false })
}
