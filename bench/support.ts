/**
 * Shared pieces of the benchmarks: a real `parley serve` in its own process on a fresh embedded data
 * dir (as a user runs it), and a closed-loop load generator over keep-alive HTTP.
 */
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"

const root = Path.resolve(import.meta.dirname, "..")

export interface Server {
  readonly api: string
  readonly receiver: string
  readonly dataDir: string
  readonly demo: { token: string; pipeline_id: number; workspace_id: number; channel: { id: number; client_id: string; client_secret: string } }
  readonly stop: () => Promise<void>
}

export const startServer = (env: Record<string, string> = {}) =>
  new Promise<Server>((resolve, reject) => {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-bench-"))
    const child = spawn(Path.join(root, "node_modules/.bin/tsx"), [Path.join(root, "packages/server/src/cli/main.ts"), "serve"], {
      cwd: root,
      env: { ...process.env, PARLEY_DATA_DIR: dataDir, PORT: "0", RECEIVER_PORT: "0", PARLEY_SEED_DEMO: "true", LOG_LEVEL: "Warning", ...env }
    })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      const api = /API\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1]
      const receiver = /Receiver\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1]
      if (api && receiver && output.includes("PARLEY_TOKEN")) {
        const demo = JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8"))
        resolve({
          api,
          receiver,
          dataDir,
          demo,
          stop: () =>
            new Promise<void>((done) => {
              child.on("exit", () => {
                Fs.rmSync(dataDir, { recursive: true, force: true })
                done()
              })
              child.kill("SIGTERM")
            })
        })
      }
    })
    child.stderr.on("data", (c: Buffer) => (output += c.toString()))
    child.on("exit", (code) => reject(new Error(`server exited (${code}):\n${output}`)))
  })

export interface RequestSpec {
  readonly method: string
  readonly url: string
  readonly headers?: Record<string, string>
  readonly body?: string
}

const agent = new Http.Agent({ keepAlive: true, maxSockets: 256 })

export const send = (spec: RequestSpec) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = Http.request(spec.url, { method: spec.method, headers: spec.headers, agent }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }))
    })
    req.on("error", reject)
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

/** `concurrency` loops, each sending the next request as soon as the last answered, for `seconds`. */
export const load = async (
  concurrency: number,
  seconds: number,
  next: (i: number) => RequestSpec,
  ok: (status: number) => boolean = (s) => s >= 200 && s < 300
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
      try {
        const r = await send(spec)
        if (!ok(r.status)) errors++
      } catch {
        errors++
      }
      latencies.push(performance.now() - t0)
    }
  }))
  const elapsed = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0
  return { requests: latencies.length, errors, seconds: elapsed, perSecond: latencies.length / elapsed, p50: at(0.5), p99: at(0.99) }
}

export const row = (name: string, concurrency: number, r: LoadResult) =>
  `| ${name} | ${concurrency} | ${r.requests} | ${r.perSecond.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.errors} |`

export const header = "| scenario | concurrency | requests | req/s | p50 ms | p99 ms | errors |\n|---|---|---|---|---|---|---|"
