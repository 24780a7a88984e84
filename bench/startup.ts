/**
 * Start-up of the production build (issue 18): `parley --help`, a first start on an empty data dir to
 * `/ready`, a restart on that data to `/ready`, and a CLI command beside the running server; each the
 * median of N runs, with where a start's time goes (from its progress lines) and the same work done bare
 * in the same run (node starting, PGlite opening the data dir, loading the initial dump).
 * Run: pnpm build && npx tsx bench/startup.ts [runs]
 */
import { Effect } from "effect"
import { execFileSync, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { openPglite } from "../packages/server/src/db/Database.js"

const root = Path.resolve(import.meta.dirname, "..")
const parley = Path.join(root, "scripts/parley.mjs")
const runs = Number(process.argv[2] ?? 5)

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = Net.createServer().listen(0, "127.0.0.1", () => {
      const port = (server.address() as Net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`

/** Wall time of a command that exits. */
const timed = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const started = performance.now()
  execFileSync(process.execPath, [parley, ...args], { env: { ...process.env, ...env }, stdio: "pipe" })
  return performance.now() - started
}

interface Started {
  readonly ms: number
  readonly progress: ReadonlyArray<{ readonly at: number; readonly line: string }>
  readonly stop: () => Promise<void>
  readonly env: Record<string, string>
}

/** `parley serve` until `/ready` answers 200: the wall time, and its progress lines. */
const start = async (dataDir: string): Promise<Started> => {
  const [port, receiverPort, runnerPort] = [await freePort(), await freePort(), await freePort()]
  const env = {
    PARLEY_DATA_DIR: dataDir,
    PORT: String(port),
    RECEIVER_PORT: String(receiverPort),
    RUNNER_PORT: String(runnerPort),
    LOG_LEVEL: "Warning"
  }
  const started = performance.now()
  const child = spawn(process.execPath, [parley, "serve"], { env: { ...process.env, ...env } })
  let output = ""
  child.stdout.on("data", (c: Buffer) => (output += c.toString()))
  child.stderr.on("data", (c: Buffer) => (output += c.toString()))
  const exited = new Promise<void>((r) => child.on("exit", () => r()))
  while (true) {
    if (child.exitCode !== null) throw new Error(`server exited:\n${output}`)
    try {
      const r = await fetch(`http://127.0.0.1:${port}/ready`)
      if (r.status === 200) break
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 10))
  }
  const ms = performance.now() - started
  const progress = [...output.matchAll(/^\[\s*([\d.]+) s\] (.+)$/gm)].map((m) => ({
    at: Number(m[1]) * 1000,
    line: m[2]!
  }))
  return {
    ms,
    progress,
    env,
    stop: async () => {
      child.kill("SIGTERM")
      await exited
    }
  }
}

/** The same work bare: node starting, PGlite creating a data dir from the dump and opening an existing one. */
const bare = async (dump: Blob, existing: string) => {
  const node = performance.now()
  execFileSync(process.execPath, ["-e", ""])
  const nodeMs = performance.now() - node
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-bench-bare-"))
  const openMs_ = (options: Parameters<typeof openPglite>[0]) =>
    Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const t = performance.now()
      yield* openPglite(options)
      return performance.now() - t
    })))
  const createMs = await openMs_({ dataDir: Path.join(dir, "pgdata"), loadDataDir: dump })
  const openMs = await openMs_({ dataDir: existing })
  Fs.rmSync(dir, { recursive: true, force: true })
  return { nodeMs, createMs, openMs }
}

const dumpFile = Path.join(root, "packages/server/dist/chunks/assets/initial-database.tar.gz")
if (!Fs.existsSync(dumpFile)) throw new Error("no build: run pnpm build first")
timed(["--help"]) // warm the file cache

const help: Array<number> = []
const first: Array<Started> = []
const restart: Array<Started> = []
const cli: Array<number> = []
const bareRuns: Array<Awaited<ReturnType<typeof bare>>> = []
for (let i = 0; i < runs; i++) {
  help.push(timed(["--help"]))
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-bench-start-"))
  const a = await start(dataDir)
  first.push(a)
  await a.stop()
  const b = await start(dataDir)
  restart.push(b)
  // beside the running server: the command goes to its admin endpoint
  cli.push(timed(["workspace", "set", "--workspace-id", "1", "--credits", "100"], b.env))
  await b.stop()
  bareRuns.push(await bare(new Blob([Fs.readFileSync(dumpFile)]), Path.join(dataDir, "pgdata")))
  Fs.rmSync(dataDir, { recursive: true, force: true })
}

const phases = (s: Started) => {
  const at = (pattern: RegExp) => s.progress.find((p) => pattern.test(p.line))?.at
  const database = at(/^(Opening|Creating) the embedded database/)
  const schema = at(/^(Database schema up to date|Applying)/)
  const engine = at(/^Starting the engine/)
  const listening = at(/^Listening/)
  return {
    modules: database ?? 0,
    database: (schema ?? 0) - (database ?? 0),
    migrations: (engine ?? 0) - (schema ?? 0),
    engine: (listening ?? 0) - (engine ?? 0),
    rest: s.ms - (listening ?? 0)
  }
}
const medianPhases = (xs: ReadonlyArray<Started>) => {
  const all = xs.map(phases)
  return Object.fromEntries(
    Object.keys(all[0]!).map((k) => [k, median(all.map((p) => p[k as keyof typeof p]))])
  ) as ReturnType<typeof phases>
}

const out: Array<string> = []
out.push(
  `\nStart-up of the production build, median of ${runs} runs, node ${process.version}, load average ${
    Os.loadavg()[0]!.toFixed(2)
  }\n`
)
out.push("| what | median | target |")
out.push("|---|---|---|")
out.push(`| parley --help | ${seconds(median(help))} | 1 s |`)
out.push(`| first start on an empty data dir, to /ready | ${seconds(median(first.map((s) => s.ms)))} | 6 s |`)
out.push(`| restart on existing data, to /ready | ${seconds(median(restart.map((s) => s.ms)))} | 3 s |`)
out.push(`| CLI command beside the running server (workspace set) | ${seconds(median(cli))} | 1.5 s |`)
out.push("\nWhere a start's time goes (from its progress lines; medians):\n")
out.push("| start | loading modules | database open | migrations check | engine and services | listeners to /ready |")
out.push("|---|---|---|---|---|---|")
for (const [name, xs] of [["first", first], ["restart", restart]] as const) {
  const p = medianPhases(xs)
  out.push(
    `| ${name} | ${seconds(p.modules)} | ${seconds(p.database)} | ${seconds(p.migrations)} | ${seconds(p.engine)} | ${
      seconds(p.rest)
    } |`
  )
}
out.push("\nThe same work bare, in the same run (medians):\n")
out.push("| bare | median |")
out.push("|---|---|")
out.push(`| node -e "" | ${seconds(median(bareRuns.map((b) => b.nodeMs)))} |`)
out.push(
  `| PGlite.create from the initial dump (a first start's database) | ${
    seconds(median(bareRuns.map((b) => b.createMs)))
  } |`
)
out.push(
  `| PGlite.create on the existing data dir (a restart's database) | ${
    seconds(median(bareRuns.map((b) => b.openMs)))
  } |`
)
// printed in one write, then exit: console.log to a pipe would be cut off by process.exit
process.stdout.write(out.join("\n") + "\n", () => process.exit(0))
