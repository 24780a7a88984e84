/**
 * The CLI as an operator runs it: real child processes on a temporary data dir, first with no server
 * (the CLI opens the embedded database itself), then while `parley serve` holds it (commands travel
 * to the server's loopback admin endpoint; the data dir is never opened twice).
 */
import { describe, expect, it } from "@effect/vitest"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { promisify } from "node:util"

const run = promisify(execFile)
const root = Path.resolve(__dirname, "../../..")
const cli = Path.join(root, "packages/server/src/cli/main.ts")
const tsx = Path.join(root, "node_modules/.bin/tsx")

const envFor = (dataDir: string, extra: Record<string, string> = {}) => ({
  ...process.env,
  PARLEY_DATA_DIR: dataDir,
  PORT: "0",
  RECEIVER_PORT: "0",
  PARLEY_SEED_DEMO: "false",
  ...extra
})

const parley = async (dataDir: string, args: ReadonlyArray<string>) => {
  const { stdout } = await run(tsx, [cli, ...args, "--json"], { cwd: root, env: envFor(dataDir) })
  return JSON.parse(stdout.trim()) as any
}

interface Running {
  readonly child: ChildProcess
  readonly api: string
  readonly output: () => string
}

const serve = (dataDir: string, extra: Record<string, string> = {}) =>
  new Promise<Running>((resolve, reject) => {
    const child = spawn(tsx, [cli, "serve"], { cwd: root, env: envFor(dataDir, extra) })
    let output = ""
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 60_000)
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const match = /API\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (match && output.includes("Data ")) {
        clearTimeout(timer)
        resolve({ child, api: match[1]!, output: () => output })
      }
    }
    child.stdout.on("data", onData)
    child.stderr.on("data", (c: Buffer) => (output += c.toString()))
    child.on("exit", (code) => reject(new Error(`server exited with ${code}:\n${output}`)))
  })

const stop = (server: Running) =>
  new Promise<void>((resolve) => {
    server.child.on("exit", () => resolve())
    server.child.kill("SIGTERM")
  })

const api = async (base: string, path: string, token: string, init: RequestInit = {}) => {
  const response = await fetch(base + path, {
    ...init,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...init.headers }
  })
  return { status: response.status, body: (await response.json()) as any }
}

describe("parley CLI", () => {
  it("creates a user, token and channel with the server stopped and while it runs", async () => {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-cli-"))

    // server stopped: the CLI opens (and migrates) the embedded database itself
    const user = await parley(dataDir, ["user", "create", "--email", "ops@example.com", "--password", "s3cret-pass", "--workspace-name", "Ops"])
    expect(user).toMatchObject({ email: "ops@example.com", workspace_id: 1 })
    const offline = await parley(dataDir, ["token", "create", "--email", "ops@example.com", "--scopes", "pipelines:read,pipelines:write,channels:read"])
    expect(offline.token).toMatch(/^pat_[0-9A-Za-z]{43}$/)
    expect(Fs.existsSync(Path.join(dataDir, "lock"))).toBe(false)

    const server = await serve(dataDir)
    try {
      const info = JSON.parse(Fs.readFileSync(Path.join(dataDir, "server.json"), "utf8"))
      expect(info.admin_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      // the serving process (tsx runs it as a child) holds the data-dir lock
      expect(Fs.readFileSync(Path.join(dataDir, "lock"), "utf8")).toBe(String(info.pid))

      const me = await api(server.api, "/api/user/me", offline.token)
      expect(me.status).toBe(200)
      expect(me.body.data.user.email).toBe("ops@example.com")

      // server running: commands go through its admin endpoint
      const online = await parley(dataDir, ["token", "create", "--email", "ops@example.com", "--scopes", "channels:read", "--name", "online"])
      expect((await api(server.api, "/api/user/channels", online.token)).status).toBe(200)

      const pipeline = await api(server.api, "/api/user/pipelines", offline.token, {
        method: "POST",
        body: JSON.stringify({ name: "CLI pipeline", agent_type_id: 1, ai_model_id: 1, language_id: 1 })
      })
      expect(pipeline.status).toBe(200)
      const channel = await parley(dataDir, [
        "channel", "create", "--workspace-id", "1", "--kind", "web", "--pipeline-id", String(pipeline.body.data.id),
        "--callback-url", "https://example.com/hook", "--allowed-origins", "https://shop.example.com"
      ])
      expect(channel.client_id).toMatch(/^wc_/)
      expect(channel.client_secret).toMatch(/^wcs_/)
      const metadata = await parley(dataDir, [
        "channel", "create", "--workspace-id", "1", "--kind", "web", "--callback-url", "http://169.254.169.254/latest/meta-data"
      ]).catch((e) => JSON.parse(e.stdout))
      expect(metadata).toEqual({
        error: "callback_url: The callback_url field must point at a public address: 169.254.169.254 is a loopback, private or " +
          "link-local address, which this server calls only when OUTBOUND_ALLOW_PRIVATE=true."
      })
      const channels = await api(server.api, "/api/user/channels", online.token)
      expect(channels.body.data.map((c: any) => c.client_id)).toEqual([channel.client_id])
      expect(channels.body.data[0]).toMatchObject({ pipeline_id: pipeline.body.data.id, allowed_origins: ["https://shop.example.com"] })

      const revoked = await parley(dataDir, ["token", "revoke", "--id", String(online.id)])
      expect(revoked).toEqual({ id: online.id, revoked: true })
      expect((await api(server.api, "/api/user/channels", online.token)).status).toBe(401)

      const failure = await parley(dataDir, ["user", "grant-manager", "--email", "nobody@example.com", "--workspace-id", "1"])
        .catch((e) => JSON.parse(e.stdout))
      expect(failure).toEqual({ error: "No user with email nobody@example.com" })
    } finally {
      await stop(server)
    }
    expect(Fs.existsSync(Path.join(dataDir, "server.json"))).toBe(false)
    expect(Fs.existsSync(Path.join(dataDir, "lock"))).toBe(false)

    // stopped again: direct access sees everything the server wrote
    const rotated = await parley(dataDir, ["channel", "rotate", "--id", "1"])
    expect(rotated.client_id).not.toBe(undefined)
    const again = await serve(dataDir)
    try {
      const list = await api(again.api, "/api/user/channels", offline.token)
      expect(list.body.data.map((c: any) => c.client_id)).toEqual([rotated.client_id])
    } finally {
      await stop(again)
    }
  }, 180_000)

  it("first start seeds a demo workspace whose printed token works, and later starts reuse it", async () => {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-demo-"))
    const first = await serve(dataDir, { PARLEY_SEED_DEMO: "true" })
    let token = ""
    try {
      token = /export PARLEY_TOKEN=(pat_\w+)/.exec(first.output())?.[1] ?? ""
      expect(token).not.toBe("")
      const pipelines = await api(first.api, "/api/user/pipelines", token)
      expect(pipelines.body.data).toHaveLength(1)
      const detail = await api(first.api, `/api/user/pipelines/${pipelines.body.data[0].id}`, token)
      expect(detail.body.data.stages.map((s: any) => [s.name, s.nature, s.order])).toEqual([
        ["New lead", "neutral", 1],
        ["Demo booked", "won", 2],
        ["Not interested", "lost", 3]
      ])
      const channels = await api(first.api, "/api/user/channels", token)
      expect(channels.body.data[0]).toMatchObject({ kind: "web", pipeline_id: pipelines.body.data[0].id })
    } finally {
      await stop(first)
    }
    const second = await serve(dataDir, { PARLEY_SEED_DEMO: "true" })
    try {
      expect(second.output()).toContain(`export PARLEY_TOKEN=${token}`)
      expect((await api(second.api, "/api/user/pipelines", token)).body.data).toHaveLength(1)
    } finally {
      await stop(second)
    }
  }, 180_000)

  it("refuses an unknown command with the usage text and exit code 2", async () => {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-usage-"))
    const error = await run(tsx, [cli, "frobnicate"], { cwd: root, env: envFor(dataDir) }).catch((e) => e)
    expect(error.code).toBe(2)
    expect(error.stderr).toContain("Unknown command: frobnicate")
    expect(error.stderr).toContain("Usage: pnpm parley")
  })
})
