/**
 * `/ready` against the real `parley serve` on a fresh data dir (its embedded database, or in the postgres
 * project a migrated native one as DATABASE_URL: support/ChildServer.ts): it answers 503 while the
 * process starts (listeners bound, demo not yet seeded) and 200 only once everything the banner names
 * exists.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { type ChildDatabase, childDatabase, type Running, serve, sleep, stop } from "./support/ChildServer.js"
import { freePort } from "./support/Ports.js"

let server: Running | undefined
let database: ChildDatabase | undefined
const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-ready-"))

afterAll(async () => {
  await stop(server)
  await database?.drop()
  Fs.rmSync(dataDir, { recursive: true, force: true })
})

describe("readiness of parley serve", () => {
  it("answers 503 while starting; its first 200 comes after the demo credentials are written and the demo page is up", async () => {
    const port = await freePort()
    const api = `http://127.0.0.1:${port}`
    database = await childDatabase(dataDir)
    const started = serve(dataDir, { ...database.env, PORT: String(port), OUTBOUND_ALLOW_PRIVATE: "false" })
    started.catch(() => undefined)
    const credentialsFile = Path.join(dataDir, "demo-credentials.json")
    const before: Array<{ status: number; body: unknown; credentials: boolean }> = []
    const deadline = Date.now() + 60_000
    let first: { body: unknown; credentials: string | undefined } | undefined
    while (first === undefined && Date.now() < deadline) {
      const answer = await fetch(`${api}/ready`).then(
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
        if (answer !== undefined) before.push({ ...answer, credentials: Fs.existsSync(credentialsFile) })
        await sleep(10)
      }
    }
    expect(first?.body).toEqual({ status: "ready" })
    expect(first?.credentials).toBeDefined()
    const credentials = JSON.parse(first!.credentials!)
    expect(credentials.widget.client_id).toMatch(/^wc_/)
    expect(credentials.token).toMatch(/^pat_/)
    // the listener answered before start-up was over, and said so
    expect(before.length).toBeGreaterThan(0)
    expect(before.every((b) => b.status === 503)).toBe(true)
    expect(before[0]!.body).toEqual({ status: "starting" })

    server = await started
    expect(server.output()).toContain(credentials.token)
    const page = await fetch(`${api}/`).then((r) => r.text())
    expect(page).toContain(credentials.widget.client_id)
    expect((await fetch(`${api}/ready`)).status).toBe(200)
  })
})
