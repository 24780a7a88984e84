/**
 * Shared pieces of the benchmarks: a real `parley serve` in its own process (or, on Postgres, api,
 * receiver and worker processes), as a user runs it, on the database the environment names (see
 * `postgres.ts`: the embedded database, `DATABASE_URL`, or `BENCH_PG=throwaway`); the bare baselines
 * (`bare.ts`) in their own process on the same database; and a closed-loop load generator over
 * keep-alive HTTP.
 *
 * Topology (`BENCH_TOPOLOGY`): `single` (default) is one `parley serve` process with every role; `split`
 * (Postgres only) is one `--role api`, one `--role receiver` and `BENCH_WORKERS` (default 1) `--role worker`
 * processes with `PARLEY_CLUSTER=socket`, each with its own pool of `DATABASE_POOL_SIZE` connections.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { type Counters, cpuMs, type Database, freePort, openDatabase, pg } from "./postgres.js"

export { cpuMs, type Database, openDatabase } from "./postgres.js"

const root = Path.resolve(import.meta.dirname, "..")
const cli = Path.join(root, "packages/server/src/cli/main.ts")

export type Topology = "single" | "split"
type Role = "all" | "api" | "receiver" | "worker"

/** Children still running, killed should the benchmark exit without stopping them (a failure, Ctrl-C). */
const running = new Set<ChildProcess>()
process.on("exit", () => {
  for (const child of running) {
    try {
      child.kill("SIGKILL")
    } catch {
      // gone
    }
  }
})
// a signal exits through the "exit" handlers (children killed, a throwaway cluster removed); a second one
// while they run must not cut them short
let exiting = false
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    if (exiting) return
    exiting = true
    process.exit(130)
  })
}

export interface Demo {
  readonly token: string
  readonly pipeline_id: number
  readonly workspace_id: number
  readonly channel: { id: number; client_id: string; client_secret: string }
}

export interface Proc {
  readonly role: Role
  readonly pid: number
  /** Its Prometheus endpoint (METRICS_PORT=0). */
  readonly metrics: string | undefined
  readonly output: () => string
  readonly stop: () => Promise<void>
}

/**
 * Spawns `parley serve --role <role>` (node with tsx's loader, so `pid` is the server itself) and waits for its banner.
 */
const spawnServer = (role: Role, env: Record<string, string | undefined>, needs: ReadonlyArray<RegExp>, from = root) =>
  new Promise<Proc & { readonly banner: string }>((resolve, reject) => {
    // BENCH_NODE_ARGS: more node options for the server processes (diagnosis: `--import ./bench/cpu-profile.mjs`)
    const nodeArgs = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter((a) => a !== "")
    const child = spawn(process.execPath, [
      ...nodeArgs,
      "--import",
      "tsx",
      Path.join(from, Path.relative(root, cli)),
      "serve",
      "--role",
      role
    ], {
      cwd: from,
      env: Object.fromEntries(
        Object.entries({ ...process.env, ...env }).filter((e): e is [string, string] => e[1] !== undefined)
      )
    })
    running.add(child)
    let output = ""
    let ready = false
    let stopping = false
    const exited = new Promise<void>((done) => child.on("exit", () => (running.delete(child), done())))
    const stop = async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      stopping = true
      child.kill("SIGTERM")
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000)
      await exited
      clearTimeout(timer)
    }
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      if (ready || !output.includes("Parley is running.") || !needs.every((re) => re.test(output))) return
      ready = true
      resolve({
        role,
        pid: child.pid!,
        metrics: /Metrics\s+(http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(output)?.[1],
        banner: output,
        output: () => output,
        stop
      })
    }
    child.stdout.on("data", onData)
    child.stderr.on("data", (c: Buffer) => (output += c.toString()))
    child.on("exit", (code, signal) => {
      if (!ready) reject(new Error(`parley serve --role ${role} exited (${code ?? signal}):\n${output}`))
      else if (!stopping) {
        process.stderr.write(`parley serve --role ${role} exited (${code ?? signal}) during the run:\n${output}\n`)
      }
    })
  })

export interface Server {
  readonly api: string
  readonly receiver: string
  readonly dataDir: string
  readonly demo: Demo
  readonly database: Database
  readonly topology: Topology
  readonly processes: ReadonlyArray<Proc>
  /** "embedded, one process", "native Postgres, api + receiver + 2 workers"... */
  readonly label: string
  /**
   * Stops every server process and removes the data dir, unless `keepData` (the embedded bare baselines
   * open the same data dir afterwards; `removeData` then). A Postgres database stays as it is.
   */
  readonly stop: (keepData?: boolean) => Promise<void>
  readonly removeData: () => void
}

export interface Setup {
  readonly database: Database
  readonly topology: Topology
  readonly workers: number
}

/** The database and topology the environment asks for (see the top of this file and `postgres.ts`). */
export const setup = async (): Promise<Setup> => {
  const topology = (process.env.BENCH_TOPOLOGY ?? "single") as Topology
  if (topology !== "single" && topology !== "split") {
    throw new Error(`BENCH_TOPOLOGY must be single or split (got ${topology})`)
  }
  const workers = Number(process.env.BENCH_WORKERS ?? 1)
  if (!(workers >= 1)) throw new Error(`BENCH_WORKERS must be at least 1 (got ${process.env.BENCH_WORKERS})`)
  const database = await openDatabase()
  if (topology === "split" && database.kind === "embedded") {
    await database.stop()
    throw new Error("BENCH_TOPOLOGY=split needs Postgres: set DATABASE_URL or BENCH_PG=throwaway")
  }
  return { database, topology, workers }
}

export const describe = (s: Setup) =>
  `${s.database.label}; ${
    s.topology === "single"
      ? "one `parley serve` process"
      : `1 api + 1 receiver + ${s.workers} worker process${s.workers > 1 ? "es" : ""}`
  }`

/**
 * `parley serve` on `setup`'s database and topology, with the demo workspace seeded. Without a setup: one
 * process on a fresh embedded data dir (what every other benchmark uses). `from`: the checkout whose
 * server runs (another worktree, for before and after in one run: compare.ts); this one by default.
 */
export const startServer = async (env: Record<string, string> = {}, given?: Setup, from = root): Promise<Server> => {
  const s = given ?? { database: await openDatabase(), topology: "single" as const, workers: 1 }
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-bench-"))
  const native = s.database.kind === "native"
  const base: Record<string, string | undefined> = {
    PARLEY_DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    PORT: "0",
    RECEIVER_PORT: "0",
    METRICS_PORT: "0",
    PARLEY_SEED_DEMO: "true",
    LOG_LEVEL: "Warning",
    DATABASE_URL: native ? s.database.url : undefined,
    ...(native ? { APP_SECRET: "parley-bench-secret" } : {}),
    ...env
  }
  const api = /API\s+(http:\/\/127\.0\.0\.1:\d+)/
  const receiver = /Receiver\s+(http:\/\/127\.0\.0\.1:\d+)/
  const token = /PARLEY_TOKEN=/
  const metrics = /Metrics\s+http/
  const processes: Array<Proc & { banner: string }> = []
  const removeData = () => Fs.rmSync(dataDir, { recursive: true, force: true })
  const stop = async (keepData = false) => {
    await Promise.all(processes.map((p) => p.stop()))
    if (!keepData) removeData()
  }
  try {
    if (s.topology === "single") {
      processes.push(
        await spawnServer(
          "all",
          { ...base, RUNNER_PORT: String(await freePort()) },
          [api, receiver, token, metrics],
          from
        )
      )
    } else {
      // the api process migrates the empty database and seeds the demo; the others join it
      processes.push(await spawnServer("api", base, [api, token, metrics], from))
      const rest = await Promise.all([
        spawnServer("receiver", { ...base, PARLEY_SEED_DEMO: "false" }, [receiver, metrics], from),
        ...Array.from(
          { length: s.workers },
          async () =>
            spawnServer("worker", { ...base, PARLEY_SEED_DEMO: "false", RUNNER_PORT: String(await freePort()) }, [
              metrics
            ], from)
        )
      ].map((p) => p.then((proc) => (processes.push(proc), proc))))
      void rest
    }
    // PARLEY_CLUSTER=single (one process only) registers no runners
    if (native && process.env.PARLEY_CLUSTER !== "single") {
      await runnersHealthy(s.database.url!, s.topology === "single" ? 1 : s.workers)
    }
  } catch (e) {
    await stop()
    throw e
  }
  const banner = processes.map((p) => p.banner).join("\n")
  return {
    api: api.exec(banner)![1]!,
    receiver: receiver.exec(banner)![1]!,
    dataDir,
    demo: JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8")),
    database: s.database,
    topology: s.topology,
    processes,
    label: describe(s),
    stop,
    removeData
  }
}

/**
 * Waits until `n` runners are registered and healthy (`cluster_runners`), so no run starts with its shards unassigned.
 */
const runnersHealthy = async (url: string, n: number) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const deadline = Date.now() + 60_000
    for (;;) {
      const rows =
        (await client.query<{ healthy: boolean }>("select healthy from cluster_runners").catch(() => ({ rows: [] })))
          .rows
      if (rows.filter((r) => r.healthy).length >= n) return
      if (Date.now() > deadline) throw new Error(`${n} healthy runner(s) not registered within 60 s`)
      await new Promise((r) => setTimeout(r, 200))
    }
  } finally {
    await client.end()
  }
}

/** The bare baselines (`bare.ts`) in a process of their own, on the server's database (see there). */
export interface Bare {
  readonly url: string
  readonly pid: number
  readonly stop: () => Promise<void>
}

/**
 * Starts `bare.ts` on `server`'s database: Postgres through a `pg` Pool of the server's pool size
 * (DATABASE_POOL_SIZE, default 10); the embedded database by opening the server's data dir with PGlite,
 * so the server must be stopped first (`server.stop(true)`).
 */
/**
 * Runs `file` (TypeScript, through tsx) with `args` in a process of its own, resolved once its output
 * announces its address: the first match of `announce` (its group 1 is the URL). Stopped by SIGTERM.
 */
export const spawnAnnounced = (
  file: string,
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  announce: RegExp
) =>
  new Promise<Bare>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", file, ...args], { cwd: root, env })
    running.add(child)
    const exited = new Promise<void>((done) => child.on("exit", () => (running.delete(child), done())))
    let output = ""
    let ready = false
    child.stdout.on("data", (c: Buffer) => {
      output += c.toString()
      const url = announce.exec(output)?.[1]
      if (url && !ready) {
        ready = true
        resolve({
          url,
          pid: child.pid!,
          stop: async () => {
            if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
            await exited
          }
        })
      }
    })
    child.stderr.on("data", (c: Buffer) => (output += c.toString()))
    child.on("exit", (code) => {
      if (!ready) reject(new Error(`${Path.basename(file)} exited (${code}):\n${output}`))
    })
  })

export const startBare = (server: Server) =>
  spawnAnnounced(Path.join(root, "bench/bare.ts"), [], {
    ...(process.env as Record<string, string>),
    BARE_WORKSPACE: String(server.demo.workspace_id),
    BARE_CHANNEL: String(server.demo.channel.id),
    BARE_PIPELINE: String(server.demo.pipeline_id),
    BARE_POOL_SIZE: process.env.DATABASE_POOL_SIZE ?? "10",
    ...(server.database.kind === "native"
      ? { BARE_DATABASE_URL: server.database.url! }
      : { BARE_PGLITE_DIR: Path.join(server.dataDir, "pgdata") })
  }, /BARE (http:\/\/127\.0\.0\.1:\d+)/)

export interface RequestSpec {
  readonly method: string
  readonly url: string
  readonly headers?: Record<string, string>
  readonly body?: string
}

const agent = new Http.Agent({ keepAlive: true, maxSockets: 256 })

/** One request; one not answered within 60 s fails (a load counts it as an error rather than waiting forever). */
export const send = (spec: RequestSpec) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = Http.request(
      spec.url,
      { method: spec.method, headers: spec.headers, agent, timeout: 60_000 },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }))
      }
    )
    req.on("error", reject)
    req.on("timeout", () => req.destroy(new Error(`no answer within 60 s: ${spec.method} ${spec.url}`)))
    if (spec.body !== undefined) req.write(spec.body)
    req.end()
  })

export interface LoadResult {
  readonly requests: number
  readonly errors: number
  readonly seconds: number
  readonly perSecond: number
  readonly p50: number
  readonly p99: number
}

/**
 * `concurrency` loops, each sending the next request as soon as the last answered, for `seconds`;
 * `answered` sees each answer with its wall-clock send and answer times (Date.now()).
 */
export const load = async (
  concurrency: number,
  seconds: number,
  next: (i: number) => RequestSpec,
  ok: (status: number) => boolean = (s) => s >= 200 && s < 300,
  answered?: (sentAt: number, answeredAt: number, status: number, body: string) => void
): Promise<LoadResult> => {
  const latencies: Array<number> = []
  let errors = 0
  let counter = 0
  const deadline = performance.now() + seconds * 1000
  const started = performance.now()
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < deadline) {
      const spec = next(counter++)
      const t0 = performance.now()
      const sentAt = Date.now()
      try {
        const r = await send(spec)
        if (!ok(r.status)) errors++
        answered?.(sentAt, Date.now(), r.status, r.body)
      } catch {
        errors++
      }
      latencies.push(performance.now() - t0)
    }
  }))
  const elapsed = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0
  return {
    requests: latencies.length,
    errors,
    seconds: elapsed,
    perSecond: latencies.length / elapsed,
    p50: at(0.5),
    p99: at(0.99)
  }
}

export const row = (name: string, concurrency: number, r: LoadResult) =>
  `| ${name} | ${concurrency} | ${r.requests} | ${r.perSecond.toFixed(0)} | ${r.p50.toFixed(2)} | ${
    r.p99.toFixed(2)
  } | ${r.errors} |`

export const header =
  "| scenario | concurrency | requests | req/s | p50 ms | p99 ms | errors |\n|---|---|---|---|---|---|---|"

/** A row with the bare baseline's figures and the server/bare ratio of throughput. */
export const sideBySide = (name: string, concurrency: number, server: LoadResult, bare: LoadResult) =>
  `| ${name} | ${concurrency} | ${server.perSecond.toFixed(0)} | ${server.p50.toFixed(2)} / ${
    server.p99.toFixed(2)
  } | ${server.errors} | ${bare.perSecond.toFixed(0)} | ${bare.p50.toFixed(2)} / ${
    bare.p99.toFixed(2)
  } | ${bare.errors} | **${(server.perSecond / bare.perSecond).toFixed(2)}** |`

export const sideBySideHeader =
  "| scenario | concurrency | server req/s | server p50 / p99 ms | errors | bare req/s | bare p50 / p99 ms | errors | server / bare |\n|---|---|---|---|---|---|---|---|---|"

/** The cumulative buckets, sum and count of `parley_db_pool_wait_seconds` from a process's /metrics. */
interface PoolWait {
  readonly count: number
  readonly sum: number
  readonly buckets: ReadonlyMap<string, number>
}

const scrapePoolWait = async (metrics: string | undefined): Promise<PoolWait | undefined> => {
  if (metrics === undefined) return undefined
  const text = await send({ method: "GET", url: metrics }).then((r) => r.body, () => "")
  const buckets = new Map<string, number>()
  let count = 0
  let sum = 0
  for (const line of text.split("\n")) {
    if (!line.startsWith("parley_db_pool_wait_seconds")) continue
    const value = Number(line.slice(line.lastIndexOf(" ") + 1))
    const le = /le="([^"]+)"/.exec(line)?.[1]
    if (le !== undefined) buckets.set(le, value)
    else if (line.startsWith("parley_db_pool_wait_seconds_sum")) sum = value
    else if (line.startsWith("parley_db_pool_wait_seconds_count")) count = value
  }
  return count === 0 && buckets.size === 0 ? undefined : { count, sum, buckets }
}

/**
 * CPU time every core of the machine spent busy (not idle or waiting for I/O) since boot, and the part of
 * it the kernel spent on its own: interrupts, softirqs (loopback networking) and kernel threads (block I/O,
 * WAL fsyncs), which a benchmark's own traffic causes. ms (/proc, 100 ticks a second).
 */
const machineBusyMs = () => {
  const fields = Fs.readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number)
  // user nice system idle iowait irq softirq steal
  const busy = fields[0]! + fields[1]! + fields[2]! + fields[5]! + fields[6]! + fields[7]!
  let kernel = fields[5]! + fields[6]!
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = Fs.readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]!.split(" ")
      // kernel threads: kthreadd (2) and its children
      if (entry === "2" || stat[1] === "2") kernel += Number(stat[11]) + Number(stat[12])
    } catch {
      // gone meanwhile
    }
  }
  return { busy: (busy * 1000) / 100, kernel: (kernel * 1000) / 100 }
}

/** Per-request costs of one scenario, for "where the time goes". */
export interface Costs {
  readonly requests: number
  /**
   * CPU ms per request of each process measured (server processes by role, or `bare`), of Postgres, and of this load
   * generator.
   */
  readonly cpu: ReadonlyArray<readonly [string, number]>
  readonly postgresCpu: number | undefined
  readonly clientCpu: number
  /** Cores busy over the scenario with the processes measured (server or bare, Postgres, the load generator). */
  readonly busyCores: number
  /**
   * Cores the kernel kept busy on its own meanwhile (interrupts, softirqs, kernel threads): mostly the run's own
   * networking and fsyncs.
   */
  readonly kernelCores: number
  /** Cores busy with anything else on the machine meanwhile (/proc/stat less the above): other work skews a run. */
  readonly otherCores: number
  readonly transactions: number | undefined
  readonly statements: number | undefined
  /**
   * The statements that took the most execution time over the scenario: calls per request, ms per request
   * (pg_stat_statements).
   */
  readonly topStatements: ReadonlyArray<
    { readonly query: string; readonly calls: number; readonly ms: number; readonly planMs: number }
  >
  /** Planning and execution time of every statement, ms per request (pg_stat_statements). */
  readonly statementTime: { readonly planMs: number; readonly execMs: number }
  /** Pool checkouts per request, mean wait ms, share of checkouts that waited 1 ms or more; per process. */
  readonly pool: ReadonlyArray<
    readonly [
      string,
      { readonly checkouts: number; readonly meanMs: number; readonly over1ms: number; readonly over10ms: number }
    ]
  >
}

/** Runs `work` (a load) and measures around it: CPU of `procs` and of Postgres, database counters, pool waits. */
export const measure = async <A extends { readonly requests: number }>(
  database: Database,
  procs: ReadonlyArray<{ readonly name: string; readonly pid: number; readonly metrics?: string | undefined }>,
  work: () => Promise<A>
): Promise<{ readonly result: A; readonly costs: Costs }> => {
  const waitBefore = await Promise.all(procs.map((p) => scrapePoolWait(p.metrics)))
  const countersBefore: Counters | undefined = await database.counters()
  const cpuBefore = procs.map((p) => cpuMs(p.pid))
  const machineBefore = machineBusyMs()
  const clientBefore = process.cpuUsage()
  const t0 = performance.now()
  const result = await work()
  const wall = performance.now() - t0
  const client = process.cpuUsage(clientBefore)
  const machineAfter = machineBusyMs()
  const machine = machineAfter.busy - machineBefore.busy
  const kernel = machineAfter.kernel - machineBefore.kernel
  const cpuAfter = procs.map((p) => cpuMs(p.pid))
  const countersAfter = await database.counters()
  const waitAfter = await Promise.all(procs.map((p) => scrapePoolWait(p.metrics)))
  const n = Math.max(1, result.requests)
  const cpu = procs.map((p, i) => [p.name, (cpuAfter[i]! - cpuBefore[i]!) / n] as const)
  const postgresCpu = countersBefore?.cpu !== undefined && countersAfter?.cpu !== undefined
    ? (countersAfter.cpu - countersBefore.cpu) / n
    : undefined
  const clientCpu = (client.user + client.system) / 1000 / n
  const per = (f: (c: Counters) => number | undefined) => {
    const a = countersBefore && f(countersBefore)
    const b = countersAfter && f(countersAfter)
    return a === undefined || b === undefined ? undefined : (b - a) / n
  }
  const pool = procs.flatMap((p, i) => {
    const a = waitBefore[i]
    const b = waitAfter[i]
    if (a === undefined || b === undefined || b.count === a.count) return []
    const checkouts = b.count - a.count
    const under = (le: string) => (b.buckets.get(le) ?? 0) - (a.buckets.get(le) ?? 0)
    return [
      [p.name, {
        checkouts: checkouts / n,
        meanMs: ((b.sum - a.sum) / checkouts) * 1000,
        over1ms: 1 - under("0.001") / checkouts,
        over10ms: 1 - under("0.01") / checkouts
      }] as const
    ]
  })
  const allStatements = countersAfter?.perStatement === undefined
    ? []
    : [...countersAfter.perStatement].map(([id, after]) => {
      const before = countersBefore?.perStatement?.get(id)
      return {
        query: after.query,
        calls: (after.calls - (before?.calls ?? 0)) / n,
        ms: (after.ms - (before?.ms ?? 0)) / n,
        planMs: (after.planMs - (before?.planMs ?? 0)) / n
      }
    }).filter((x) => x.calls > 0).sort((a, b) => b.ms + b.planMs - a.ms - a.planMs)
  const topStatements = allStatements.slice(0, 12)
  const statementTime = {
    planMs: allStatements.reduce((sum, x) => sum + x.planMs, 0),
    execMs: allStatements.reduce((sum, x) => sum + x.ms, 0)
  }
  const busy = (cpu.reduce((s, [, v]) => s + v, 0) + (postgresCpu ?? 0) + clientCpu) * n
  return {
    result,
    costs: {
      requests: result.requests,
      cpu,
      postgresCpu,
      clientCpu,
      busyCores: busy / wall,
      kernelCores: kernel / wall,
      otherCores: Math.max(0, machine - busy - kernel) / wall,
      transactions: per((c) => c.transactions),
      statements: per((c) => c.statements),
      topStatements,
      statementTime,
      pool
    }
  }
}

export const costsHeader =
  "| scenario | CPU ms per request: server processes | Postgres | load generator | cores busy (other work on the machine; the kernel's own) | transactions / req | statements / req | pool checkouts / req, mean wait, share waiting ≥ 1 ms / ≥ 10 ms |\n|---|---|---|---|---|---|---|---|"

export const costsRow = (name: string, c: Costs) =>
  `| ${name} | ${c.cpu.map(([k, v]) => `${k} ${v.toFixed(2)}`).join(", ")} | ${
    c.postgresCpu === undefined ? "" : c.postgresCpu.toFixed(2)
  } | ${c.clientCpu.toFixed(2)} | ${c.busyCores.toFixed(2)} (${c.otherCores.toFixed(2)}; ${
    c.kernelCores.toFixed(2)
  }) | ${c.transactions === undefined ? "" : c.transactions.toFixed(2)} | ${
    c.statements === undefined ? "" : c.statements.toFixed(1)
  } | ${
    c.pool.map(([k, p]) =>
      `${k}: ${p.checkouts.toFixed(2)}, ${p.meanMs.toFixed(2)} ms, ${(p.over1ms * 100).toFixed(0)}% / ${
        (p.over10ms * 100).toFixed(0)
      }%`
    ).join("; ")
  } |`

/** The statements of a scenario by execution time, when pg_stat_statements was loaded (BENCH_PG_STATEMENTS=1). */
export const statementsTable = (name: string, c: Costs) =>
  c.topStatements.length === 0 ? "" : [
    `\nStatements of "${name}" by planning and execution time (per request, pg_stat_statements; all statements: ${
      c.statementTime.planMs.toFixed(2)
    } ms planning, ${c.statementTime.execMs.toFixed(2)} ms execution):\n`,
    "| calls | plan ms | exec ms | statement |",
    "|---|---|---|---|",
    ...c.topStatements.map((t) =>
      `| ${t.calls.toFixed(2)} | ${t.planMs.toFixed(3)} | ${t.ms.toFixed(3)} | \`${
        t.query.replace(/\s+/g, " ").slice(0, 160)
      }\` |`
    )
  ].join("\n")

/** The server's processes for `measure`, named by role. */
export const serverProcs = (server: Server) =>
  server.processes.map((p, i) => ({
    name: server.processes.filter((q) => q.role === p.role).length > 1
      ? `${p.role} ${server.processes.slice(0, i + 1).filter((q) => q.role === p.role).length}`
      : p.role,
    pid: p.pid,
    metrics: p.metrics
  }))
