/**
 * The real `parley serve` as a child process on a data dir, for tests that crash and restart it, and a
 * plain node:http webhook receiver that records what reaches it.
 *
 * `childDatabase(dataDir)` is the database such a server runs on, in the suite's database mode
 * (NativeDatabase.ts): the embedded one in the data dir by default, or in the `postgres` project a
 * database of its own on the run's native cluster, given to `serve` as DATABASE_URL.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { embeddedDataPath, openPglite } from "../../src/db/Database.js"
import type { ApiResponse } from "./Contract.js"
import { createNativeDatabase, databaseMode, queryUrl } from "./NativeDatabase.js"
import { freePort } from "./Ports.js"

const root = Path.resolve(__dirname, "../../../..")
const cli = Path.join(root, "packages/server/src/cli/main.ts")
const tsx = Path.join(root, "node_modules/.bin/tsx")

export interface Hit {
  readonly at: number
  readonly headers: Http.IncomingHttpHeaders
  readonly rawBody: string
}

/**
 * A webhook receiver. `answer` gets each request's raw body and the hits recorded so far; it returns
 * the status and body to send, and whether to record the request (default: yes).
 */
export const startReceiver = (
  answer: (
    rawBody: string,
    hits: ReadonlyArray<Hit>
  ) => { readonly status: number; readonly body: string; readonly record?: boolean }
) =>
  new Promise<{ url: string; hits: Array<Hit>; close: () => Promise<void> }>((resolve) => {
    const hits: Array<Hit> = []
    const server = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const rawBody = Buffer.concat(chunks).toString("utf8")
        const hit = { at: Date.now(), headers: req.headers, rawBody }
        const { body, record, status } = answer(rawBody, [...hits, hit])
        if (record !== false) hits.push(hit)
        res.writeHead(status, { "content-type": "application/json" }).end(body)
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
        hits,
        close: () =>
          new Promise<void>((r) => {
            server.closeAllConnections()
            server.close(() => r())
          })
      }))
  })

export interface ChildDatabase {
  readonly mode: "embedded" | "postgres"
  /**
   * For `serve` (and the CLI): nothing on the embedded database. On Postgres DATABASE_URL, APP_SECRET
   * (required with it) and RUNNER_PORT: the server is a cluster runner there, on a port of its own
   * (3002 by default, which a suite beside this one would want too); a restart keeps it, as an
   * operator's would.
   */
  readonly env: Record<string, string>
  /** One SQL statement on the server's database. Embedded: only while no server holds the data dir. */
  readonly query: <A = Record<string, unknown>>(text: string, params?: ReadonlyArray<unknown>) => Promise<Array<A>>
  /** Removes the Postgres database at the end (the data dir is the test's to remove). */
  readonly drop: () => Promise<void>
}

/** The database a `serve` on `dataDir` runs on, in this suite's database mode. */
export const childDatabase = async (dataDir: string): Promise<ChildDatabase> => {
  if (databaseMode === "postgres") {
    const db = await createNativeDatabase()
    return {
      mode: "postgres",
      env: { DATABASE_URL: db.url, APP_SECRET: "child-server-app-secret", RUNNER_PORT: String(await freePort()) },
      query: (text, params = []) => queryUrl(db.url, text, params),
      drop: db.drop
    }
  }
  return {
    mode: "embedded",
    env: {},
    query: <A>(text: string, params: ReadonlyArray<unknown> = []) =>
      Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const db = yield* openPglite({ dataDir: embeddedDataPath(dataDir) })
        return yield* Effect.promise(() => db.query<A>(text, [...params]))
      }))).then((r) => r.rows),
    drop: () => Promise.resolve()
  }
}

export interface Running {
  readonly child: ChildProcess
  /** DATABASE_URL was given: no data-dir lock, no `server.json`, no Data line. */
  readonly postgres: boolean
  readonly api: string
  readonly receiver: string
  readonly output: () => string
  readonly exited: Promise<void>
}

/** How long a starting server may print nothing before the start counts as failed. */
const START_SILENCE_MS = 120_000

/**
 * `parley serve` on `dataDir` with the demo seed, free ports, private webhooks allowed, and `env` (with
 * DATABASE_URL, the data dir keeps only the demo's credentials file).
 */
export const serve = (dataDir: string, env: Record<string, string>) =>
  new Promise<Running>((resolve, reject) => {
    // its own process group, so the tsx launcher and the node process it starts can be killed together
    const child = spawn(tsx, [cli, "serve"], {
      cwd: root,
      detached: true,
      env: {
        ...process.env,
        PARLEY_DATA_DIR: dataDir,
        PORT: "0",
        RECEIVER_PORT: "0",
        PARLEY_SEED_DEMO: "true",
        OUTBOUND_ALLOW_PRIVATE: "true",
        LOG_LEVEL: "Warning",
        ...env
      }
    })
    const exited = new Promise<void>((r) => child.on("exit", () => r()))
    let output = ""
    // no fixed deadline for the whole start (a busy machine takes minutes): the server prints a line per
    // step (opening the database, migrating, the engine, the listeners), and only a long silence fails
    let timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), START_SILENCE_MS)
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      clearTimeout(timer)
      timer = setTimeout(
        () => reject(new Error(`server did not start (silent for ${START_SILENCE_MS / 1000} s):\n${output}`)),
        START_SILENCE_MS
      )
      const api = /API\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1]
      const receiver = /Receiver\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1]
      // the banner is written at once: its Data line (embedded), or with DATABASE_URL its Receiver line
      // up to the end of that line (LOG_FORMAT=json: of the JSON line holding the whole banner)
      const running = output.indexOf("Parley is running.")
      const banner = env.DATABASE_URL === undefined
        ? output.includes("Data ")
        : running >= 0 && /Receiver\s+http:\/\/[^\n]*\n/.test(output.slice(running))
      if (api && receiver && banner) {
        clearTimeout(timer)
        resolve({ child, postgres: env.DATABASE_URL !== undefined, api, receiver, output: () => output, exited })
      }
    })
    child.stderr!.on("data", (c: Buffer) => (output += c.toString()))
    child.on("exit", (code, signal) => {
      clearTimeout(timer)
      reject(new Error(`server exited with ${code ?? signal}:\n${output}`))
    })
  })

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const killGroup = (server: Running, signal: NodeJS.Signals) => {
  try {
    process.kill(-server.child.pid!, signal)
  } catch {
    // already gone
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Until `check` holds, polling; fails after `timeoutMs`. */
const waitFor = async (what: string, check: () => boolean, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await sleep(50)
  }
}

/** Whether any process of the group `pgid` is left (kill(-pgid, 0) fails with ESRCH once none is). */
const groupAlive = (pgid: number) => {
  try {
    process.kill(-pgid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== "ESRCH"
  }
}

/**
 * A crash: SIGKILL, no shutdown. On the embedded database to the serving node process (the pid in the
 * data dir's `lock`) and its tsx launcher; with DATABASE_URL (no lock) to the whole process group the
 * child was spawned in. Returns the serving pid (embedded) or the group's id.
 */
export const crash = async (server: Running, dataDir: string) => {
  if (server.postgres) {
    const pgid = server.child.pid!
    killGroup(server, "SIGKILL")
    await server.exited
    await waitFor(`process group ${pgid} gone after SIGKILL`, () => !groupAlive(pgid), 30_000)
    return pgid
  }
  const pid = Number(Fs.readFileSync(Path.join(dataDir, "lock"), "utf8").trim())
  expect(pid).toBe(JSON.parse(Fs.readFileSync(Path.join(dataDir, "server.json"), "utf8")).pid)
  expect(pid).not.toBe(server.child.pid)
  process.kill(pid, "SIGKILL")
  killGroup(server, "SIGKILL")
  await server.exited
  await waitFor(`serving process ${pid} gone after SIGKILL`, () => !alive(pid), 30_000)
  return pid
}

/** An orderly stop (SIGTERM, as an operator would), SIGKILL if it hangs. */
export const stop = async (server: Running | undefined) => {
  if (!server || server.child.exitCode !== null || server.child.signalCode !== null) return
  server.child.kill("SIGTERM")
  const timeout = setTimeout(() => killGroup(server, "SIGKILL"), 15_000)
  await server.exited
  clearTimeout(timeout)
}

export const until = async <A>(
  what: string,
  check: () => Promise<A | undefined> | A | undefined,
  timeoutMs: number
) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const value = await check()
    if (value !== undefined) return value
    await sleep(50)
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`)
}

/**
 * A JSON request with a bearer token or Basic channel credentials, answered as an `ApiResponse`
 * (support/Contract.ts) that `ok(r, "group.endpoint")` and `failure(r)` read typed. The body is `body` as
 * given (a string the caller encoded), or `json` encoded here.
 */
export const call = async (
  url: string,
  init: RequestInit & { token?: string; basic?: readonly [string, string]; json?: unknown } = {}
): Promise<ApiResponse> => {
  const { basic, json, token, ...rest } = init
  const authorization = token !== undefined
    ? `Bearer ${token}`
    : `Basic ${Buffer.from(`${basic![0]}:${basic![1]}`).toString("base64")}`
  const response = await fetch(url, {
    ...rest,
    ...(json !== undefined ? { body: JSON.stringify(json) } : {}),
    headers: { authorization, accept: "application/json", "content-type": "application/json", ...rest.headers }
  })
  const body: unknown = await response.json()
  return { status: response.status, body, headers: response.headers, method: rest.method ?? "GET", url }
}
