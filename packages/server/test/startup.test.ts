/**
 * `/ready` against the real `parley serve` on a fresh data dir (its embedded database, or in the postgres
 * project a migrated native one as DATABASE_URL: support/ChildServer.ts): it answers 503 while the
 * process starts (listeners bound, demo not yet seeded) and 200 only once everything the banner names
 * exists.
 *
 * The 503 window is the demo seeding after the listeners bind: tens of milliseconds, which a probe on a
 * busy machine can sleep through. On Postgres the test holds the window open: it locks `users` (the
 * seeding's first read) until its probe has been told 503. The embedded database lives inside the
 * server's process, so there a start whose window the probe missed is tried again on a new data dir.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import pg from "pg"
import { type ChildDatabase, childDatabase, type Running, serve, sleep, stop } from "./support/ChildServer.js"
import { freePort } from "./support/Ports.js"

const servers: Array<Running> = []
const databases: Array<ChildDatabase> = []
const dataDirs: Array<string> = []

afterAll(async () => {
  for (const server of servers) await stop(server)
  for (const database of databases) await database.drop()
  for (const dir of dataDirs) Fs.rmSync(dir, { recursive: true, force: true })
})

interface Answer {
  readonly status: number
  readonly body: unknown
}

/** Starts a server on a new data dir and probes `/ready` until its first 200. */
const probeStart = async () => {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-ready-"))
  dataDirs.push(dataDir)
  const port = await freePort()
  const api = `http://127.0.0.1:${port}`
  const database = await childDatabase(dataDir)
  databases.push(database)
  // Postgres: a transaction holding `users` keeps the seeding waiting until the probe has seen a 503
  let lock: pg.Client | undefined
  if (database.mode === "postgres") {
    lock = new pg.Client({ connectionString: database.env.DATABASE_URL })
    await lock.connect()
    await lock.query("begin")
    await lock.query("lock table users in access exclusive mode")
  }
  const release = async () => {
    const held = lock
    lock = undefined
    if (held !== undefined) await held.query("commit").finally(() => held.end())
  }
  const started = serve(dataDir, { ...database.env, PORT: String(port), OUTBOUND_ALLOW_PRIVATE: "false" })
  started.catch(() => undefined)
  const credentialsFile = Path.join(dataDir, "demo-credentials.json")
  const before: Array<Answer & { readonly credentials: boolean }> = []
  const deadline = Date.now() + 120_000
  let first: { body: unknown; credentials: string | undefined } | undefined
  try {
    while (first === undefined && Date.now() < deadline) {
      const answer: Answer | undefined = await fetch(`${api}/ready`).then(
        async (r) => ({ status: r.status, body: await r.json() }),
        () => undefined
      )
      if (answer?.status === 200) {
        // read at once: whatever the probe is told must already be true
        first = {
          body: answer.body,
          credentials: Fs.existsSync(credentialsFile) ? Fs.readFileSync(credentialsFile, "utf8") : undefined
        }
      } else {
        if (answer !== undefined) {
          before.push({ ...answer, credentials: Fs.existsSync(credentialsFile) })
          await release()
        }
        await sleep(10)
      }
    }
  } finally {
    await release()
  }
  const server = await started
  servers.push(server)
  return { api, before, first, server }
}

describe("readiness of parley serve", () => {
  it("answers 503 while starting; its first 200 comes after the demo credentials are written and the demo page is up", async () => {
    let run = await probeStart()
    // embedded only (see above): a start whose short window the probe slept through proves nothing either way
    for (let attempt = 2; run.before.length === 0 && attempt <= 3; attempt++) run = await probeStart()
    const { api, before, first, server } = run
    expect(first?.body).toEqual({ status: "ready" })
    expect(first?.credentials).toBeDefined()
    const credentials = JSON.parse(first!.credentials!)
    expect(credentials.widget.client_id).toMatch(/^wc_/)
    expect(credentials.token).toMatch(/^pat_/)
    // the listener answered before start-up was over, and said so, before the credentials existed
    expect(before.length).toBeGreaterThan(0)
    expect(before.every((b) => b.status === 503)).toBe(true)
    expect(before[0]!.body).toEqual({ status: "starting" })
    expect(before[0]!.credentials).toBe(false)

    expect(server.output()).toContain(credentials.token)
    const page = await fetch(`${api}/`).then((r) => r.text())
    expect(page).toContain(credentials.widget.client_id)
    expect((await fetch(`${api}/ready`)).status).toBe(200)
  })
})
