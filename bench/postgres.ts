/**
 * The database a benchmark runs on, chosen from the environment:
 *
 * - nothing set: the embedded database (PGlite in the server's fresh data dir), as `parley serve` runs by default;
 * - `DATABASE_URL=postgres://…`: that Postgres 15+ (with pgvector); the database must be empty (the server
 *   migrates it and seeds the demo workspace the benchmark uses);
 * - `BENCH_PG=throwaway`: a native Postgres 15 cluster started for the run (initdb in a temp dir, a free port of
 *   127.0.0.1, trust authentication, as the `postgres` user when run as root) and removed afterwards, even
 *   when the run fails. Durable by default (Postgres's own defaults: fsync, synchronous_commit and
 *   full_page_writes on); `BENCH_PG_DURABLE=off` turns the three off. `BENCH_PG_STATEMENTS=1` loads
 *   pg_stat_statements, so a run can count the statements of each request (diagnosis only: it costs a little).
 *
 * The server's binaries come from PARLEY_PG_BIN (default /usr/lib/postgresql/15/bin), as in the test suite.
 */
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import type PgTypes from "pg"
import { startCluster } from "../packages/server/test/support/NativePostgres.js"

const root = Path.resolve(import.meta.dirname, "..")
/** `pg` is a dependency of the server package, not of the repository root. */
export const pg = createRequire(Path.join(root, "packages/server/package.json"))("pg") as typeof PgTypes

export { freePort } from "../packages/server/test/support/Ports.js"

/** CPU time (user + system) a process has used, in ms (Linux, 100 ticks a second); 0 once it is gone. */
export const cpuMs = (pid: number) => {
  try {
    const fields = Fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
  } catch {
    return 0
  }
}

/** Every process whose parent is `pid` (Postgres backends are children of the postmaster). */
const childrenOf = (pid: number) => {
  const found: Array<number> = []
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = Fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      if (Number(stat.split(") ")[1]!.split(" ")[1]) === pid) found.push(Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return found
}

export interface Counters {
  /** Transactions committed and rolled back in the database (pg_stat_database). */
  readonly transactions: number
  /** Top-level statements run in the database (pg_stat_statements), when loaded. */
  readonly statements?: number
  /** Each statement's calls and execution time (pg_stat_statements, by query id), when loaded. */
  readonly perStatement?: ReadonlyMap<
    string,
    { readonly query: string; readonly calls: number; readonly ms: number; readonly planMs: number }
  >
  /**
   * CPU of the Postgres server (postmaster and every backend), ms, when it runs here. Backends that exited meanwhile
   * are not counted.
   */
  readonly cpu?: number
}

export interface Database {
  readonly kind: "embedded" | "native"
  /** The connection string for the server and the bare baselines (native only). */
  readonly url?: string
  readonly label: string
  /** Counters to diff around a scenario (native only; the embedded database has none outside the server). */
  readonly counters: () => Promise<Counters | undefined>
  readonly stop: () => Promise<void>
}

const embedded: Database = {
  kind: "embedded",
  label: "the embedded database (PGlite)",
  counters: async () => undefined,
  stop: async () => {}
}

/** pg_stat_database's and pg_stat_statements's counters of `url`'s database (the statistics are flushed first). */
const readCounters = async (url: string, statements: boolean): Promise<Omit<Counters, "cpu">> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query("select pg_stat_force_next_flush()").catch(() => undefined)
    const [row] = (await client.query<{ n: string }>(
      "select (xact_commit + xact_rollback)::text as n from pg_stat_database where datname = current_database()"
    )).rows
    if (!statements) return { transactions: Number(row?.n ?? 0) }
    const rows = (await client.query<{ id: string; query: string; calls: string; ms: number; plan_ms: number }>(
      // top-level statements only: a trigger's statements and foreign-key checks count in their statement's time
      `select queryid::text as id, query, calls::text, total_exec_time as ms, total_plan_time as plan_ms from pg_stat_statements
       where dbid = (select oid from pg_database where datname = current_database()) and toplevel`
    )).rows
    const perStatement = new Map(
      rows.map((r) => [r.id, { query: r.query, calls: Number(r.calls), ms: r.ms, planMs: r.plan_ms }])
    )
    const count = rows.reduce((sum, r) => sum + Number(r.calls), 0)
    return { transactions: Number(row?.n ?? 0), statements: count, perStatement }
  } finally {
    await client.end()
  }
}

/**
 * A native Postgres 15 cluster for this run only (the suite's, test/support/NativePostgres.ts); removed by `stop`, or
 * at exit should the run fail.
 */
const throwaway = async (): Promise<Database> => {
  const durable = process.env.BENCH_PG_DURABLE !== "off"
  const statements = process.env.BENCH_PG_STATEMENTS === "1"
  const cluster = await startCluster({
    durable,
    settings: statements
      ? [
        "shared_preload_libraries=pg_stat_statements",
        "pg_stat_statements.track=all",
        "pg_stat_statements.track_planning=on"
      ]
      : []
  })
  let stopped = false
  const stopNow = () => {
    if (stopped) return
    stopped = true
    cluster.stop()
  }
  // a failed or interrupted run still removes its cluster (support.ts turns SIGINT and SIGTERM into an exit)
  process.on("exit", stopNow)
  const postmaster = cluster.pid()
  const url = cluster.url("parley_bench")
  cluster.psql("postgres", "create database parley_bench")
  if (statements) cluster.psql("parley_bench", "create extension pg_stat_statements")
  const version = cluster.version()
  return {
    kind: "native",
    url,
    label: `native Postgres (${version.replace(/^postgres \(PostgreSQL\) /, "")}, throwaway cluster, ${
      durable ? "durable: fsync and synchronous_commit on" : "fsync, synchronous_commit and full_page_writes off"
    }${statements ? ", pg_stat_statements loaded" : ""})`,
    counters: async () => {
      const counts = await readCounters(url, statements)
      const cpu = [postmaster, ...childrenOf(postmaster)].reduce((sum, pid) => sum + cpuMs(pid), 0)
      return { ...counts, cpu }
    },
    stop: async () => stopNow()
  }
}

/**
 * A Postgres the caller runs (DATABASE_URL): refuses a database that already has users (the demo seed needs an empty
 * one).
 */
const given = async (url: string): Promise<Database> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const [row] =
      (await client.query<{ users: boolean }>("select to_regclass('public.users') is not null as users")).rows
    if (row?.users) {
      const [n] = (await client.query<{ n: number }>("select count(*)::int as n from users")).rows
      if ((n?.n ?? 0) > 0) {
        throw new Error(
          "DATABASE_URL names a database with users in it: the benchmarks need an empty database (they seed the demo workspace)"
        )
      }
    }
  } finally {
    await client.end()
  }
  const statements = process.env.BENCH_PG_STATEMENTS === "1"
  return {
    kind: "native",
    url,
    label: "native Postgres (DATABASE_URL)",
    counters: () => readCounters(url, statements),
    stop: async () => {}
  }
}

export const openDatabase = async (): Promise<Database> => {
  if (process.env.BENCH_PG === "throwaway") return throwaway()
  if (process.env.BENCH_PG !== undefined && process.env.BENCH_PG !== "") {
    throw new Error(`BENCH_PG must be "throwaway" (got ${process.env.BENCH_PG})`)
  }
  const url = process.env.DATABASE_URL
  return url === undefined || url === "" ? embedded : given(url)
}
