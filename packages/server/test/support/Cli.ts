/**
 * The CLI as an operator runs it: `parley <args>` as a child process (through tsx), for cli.test.ts and
 * cli-database-url.test.ts.
 *
 * Every wait is a multiple of `unit`, this machine's time to start the CLI at all (measured when the file
 * loads), so a busy machine (another copy of the suite beside this one) gets longer waits, not failures.
 */
import { expect } from "@effect/vitest"
import { Schema } from "effect"
import { execFile, execFileSync } from "node:child_process"
import * as Path from "node:path"

export const root = Path.resolve(__dirname, "../../../..")
export const cli = Path.join(root, "packages/server/src/cli/main.ts")
export const tsx = Path.join(root, "node_modules/.bin/tsx")

const unit = (() => {
  const started = performance.now()
  execFileSync(tsx, [cli, "--help"], { cwd: root, stdio: "ignore" })
  return Math.max(1_000, Math.round(performance.now() - started))
})()
/** A child that loads the server (a start, or a command on a database opened here) takes a few units. */
export const serverStart = 60 * unit
export const testTimeout = 300 * unit

export const envFor = (dataDir: string, extra: Record<string, string> = {}) => ({
  ...process.env,
  PARLEY_DATA_DIR: dataDir,
  PORT: "0",
  RECEIVER_PORT: "0",
  PARLEY_SEED_DEMO: "false",
  LOG_LEVEL: "Warning",
  ...extra
})

export interface Ran {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** `parley <args>`: its exit code and output, whatever the code. */
export const run = (dataDir: string, args: ReadonlyArray<string>, extra: Record<string, string> = {}) =>
  new Promise<Ran>((resolve) => {
    execFile(
      tsx,
      [cli, ...args],
      { cwd: root, env: envFor(dataDir, extra), timeout: serverStart },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === "number" ? error.code : -1) : 0, stdout, stderr })
    )
  })

/**
 * `text` parsed as JSON and decoded with `schema` (the fields the test reads); the test fails on JSON of another
 * shape. Fields the schema does not name are kept, so `toEqual` and `toMatchObject` still see the whole answer.
 */
export const jsonAs = <A, I>(text: string, schema: Schema.Schema<A, I>): A => {
  const decoded = Schema.decodeUnknownEither(Schema.parseJson(schema), { onExcessProperty: "preserve" })(text.trim())
  if (decoded._tag === "Left") expect.fail(`JSON of another shape: ${decoded.left.message}\n${text}`)
  return decoded.right
}

/** `parley <args> --json`, which must succeed: its answer, decoded with `schema` (see `jsonAs`). */
export const parleyAs = async <A, I>(
  schema: Schema.Schema<A, I>,
  dataDir: string,
  args: ReadonlyArray<string>,
  extra: Record<string, string> = {}
) => {
  const ran = await run(dataDir, [...args, "--json"], extra)
  expect(ran.code, `parley ${args.join(" ")}:\n${ran.stdout}${ran.stderr}`).toBe(0)
  return jsonAs(ran.stdout, schema)
}

/** A JSON object whose fields a test only compares whole or reads as `unknown`. */
const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** `parley <args> --json`, which must succeed: its answer, a JSON object (`parleyAs` reads typed fields). */
export const parley = (dataDir: string, args: ReadonlyArray<string>, extra: Record<string, string> = {}) =>
  parleyAs(JsonObject, dataDir, args, extra)

/** `parley <args>` for people, which must succeed: what it printed. */
export const parleyText = async (dataDir: string, args: ReadonlyArray<string>, extra: Record<string, string> = {}) => {
  const ran = await run(dataDir, args, extra)
  expect(ran.code, `parley ${args.join(" ")}:\n${ran.stdout}${ran.stderr}`).toBe(0)
  return ran.stdout
}
