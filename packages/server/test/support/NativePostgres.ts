/**
 * A throwaway native Postgres 15 cluster for the suite's `postgres` project (vitest.config.ts): initdb in
 * a temp dir, started on a free port of 127.0.0.1 as an unprivileged user (the `postgres` system user when
 * the suite runs as root), trust authentication, durability off unless asked (a test database is thrown
 * away; the benchmarks ask for it, bench/postgres.ts). pgvector
 * must be installed: `bash scripts/native-postgres.sh` (what `.ci/run` does). Missing, the project fails;
 * it never skips.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"

/** The migrated database every test database is created from. */
export const TEMPLATE_DATABASE = "parley_template"

const bin = process.env.PARLEY_PG_BIN ?? "/usr/lib/postgresql/15/bin"

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = Net.createServer().listen(0, "127.0.0.1", () => {
      const port = (server.address() as Net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })

export interface ClusterOptions {
  /** fsync, synchronous_commit and full_page_writes as Postgres's defaults (on); off unless asked (tests) */
  readonly durable?: boolean
  /** more `-c name=value` settings */
  readonly settings?: ReadonlyArray<string>
}

export interface Cluster {
  /** The postmaster's pid (its backends are its children). */
  readonly pid: () => number
  /** `postgres --version`'s answer. */
  readonly version: () => string
  /** A connection string for `database` as the superuser `postgres`. */
  readonly url: (database: string) => string
  /** Runs one SQL statement on `database` with psql. */
  readonly psql: (database: string, statement: string) => void
  /** Stops the server (fast shutdown: sessions are cut) and starts it again on the same port. */
  readonly stopServer: () => void
  readonly startServer: () => void
  readonly stop: () => void
}

export const startCluster = async (clusterOptions: ClusterOptions = {}): Promise<Cluster> => {
  if (!Fs.existsSync(Path.join(bin, "postgres"))) {
    throw new Error(
      `Native Postgres not found in ${bin}: run \`bash scripts/native-postgres.sh\` (Debian's postgresql-15 and pgvector from vendor/)`
    )
  }
  const root = process.getuid?.() === 0
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-pg-"))
  if (root) execFileSync("chown", ["-R", "postgres:postgres", dir])
  const run = (command: string, args: ReadonlyArray<string>) =>
    root
      ? execFileSync("runuser", ["-u", "postgres", "--", Path.join(bin, command), ...args], { stdio: "pipe" })
      : execFileSync(Path.join(bin, command), args, { stdio: "pipe" })
  const data = Path.join(dir, "data")
  run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"])
  const port = await freePort()
  const options = [
    `-p ${port}`,
    "-c listen_addresses=127.0.0.1",
    `-c unix_socket_directories=${dir}`,
    ...(clusterOptions.durable === true
      ? []
      : ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]),
    "-c max_connections=500",
    ...(clusterOptions.settings ?? []).map((setting) => `-c ${setting}`)
  ].join(" ")
  const startServer = () => {
    try {
      run("pg_ctl", ["-D", data, "-l", Path.join(dir, "server.log"), "-w", "-t", "120", "-o", options, "start"])
    } catch (e) {
      const log = Fs.existsSync(Path.join(dir, "server.log"))
        ? Fs.readFileSync(Path.join(dir, "server.log"), "utf8")
        : ""
      throw new Error(`Postgres did not start: ${String(e)}\n${log}`)
    }
  }
  startServer()
  return {
    pid: () => Number(Fs.readFileSync(Path.join(data, "postmaster.pid"), "utf8").split("\n")[0]),
    version: () => run("postgres", ["--version"]).toString().trim(),
    stopServer: () => void run("pg_ctl", ["-D", data, "-m", "fast", "-w", "-t", "120", "stop"]),
    startServer,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    psql: (database, statement) =>
      void execFileSync(Path.join(bin, "psql"), [
        "-X",
        "-q",
        "-v",
        "ON_ERROR_STOP=1",
        "-h",
        "127.0.0.1",
        "-p",
        String(port),
        "-U",
        "postgres",
        "-d",
        database,
        "-c",
        statement
      ], {
        stdio: "pipe"
      }),
    stop: () => {
      try {
        run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"])
      } catch {
        // already stopped
      } finally {
        Fs.rmSync(dir, { recursive: true, force: true })
      }
    }
  }
}
