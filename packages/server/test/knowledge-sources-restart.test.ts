/**
 * A crawl cut short by a crash (issue 41): the sync is a SyncKnowledgeSource workflow whose frontier is stored, so after
 * a kill -9 mid-crawl the restarted server's engine resumes the same run (the lease is set far beyond the test, so the
 * dispatcher could not start it over) at the first page not yet recorded: the pages read before the crash are not read
 * again (a cut-short step reads at most its own few pages twice), and the source ends `ready` with every page's point.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { promisify } from "node:util"
import { call, childDatabase, crash, type Running, serve, stop, until } from "./support/ChildServer.js"
import { ok } from "./support/Contract.js"

const run = promisify(execFile)
const root = Path.resolve(__dirname, "../../..")
const cli = Path.join(root, "packages/server/src/cli/main.ts")
const tsx = Path.join(root, "node_modules/.bin/tsx")

const PAGES = 40
/** SourceSteps.ts's STEP_PAGES: what a crash may make the run read twice. */
const STEP_PAGES = 5

/** A site of a start page linking to PAGES pages, each answered after `delayMs` (so the crawl takes a while). */
const startSite = async (delayMs: number) => {
  const asked: Array<string> = []
  const server = Http.createServer((req, res) => {
    const path = req.url ?? "/"
    asked.push(path)
    const html = (title: string, body: string) =>
      `<!doctype html><html><head><title>${title}</title></head><body><main><article>${body}</article></main></body></html>`
    if (path === "/robots.txt") return void res.writeHead(404).end()
    const n = /^\/page\/(\d+)$/.exec(path)?.[1]
    const body = path === "/"
      ? html(
        "Index",
        `<h1>Index</h1><p>The index of the walnut catalogue.</p>${
          Array.from({ length: PAGES }, (_, i) => `<a href="/page/${i + 1}">Page ${i + 1}</a>`).join(" ")
        }`
      )
      : n === undefined
      ? null
      : html(`Shelf ${n}`, `<h1>Shelf ${n}</h1><p>Walnut shelf number ${n} holds ${Number(n) * 7} books.</p>`)
    if (body === null) return void res.writeHead(404).end()
    setTimeout(() => res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(body), delayMs)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { origin, asked, close: () => new Promise<void>((r) => server.close(() => r())) }
}

describe("a crawl across a crash", () => {
  it("the restarted server resumes the same run where it stopped and ends ready with every page", async () => {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-sources-restart-"))
    const database = await childDatabase(dataDir)
    const site = await startSite(60)
    const env = {
      ...database.env,
      METRICS_PORT: "0",
      KNOWLEDGE_SOURCES_POLL_MS: "100",
      KNOWLEDGE_SOURCES_LEASE_MS: "3600000",
      SOURCE_HOST_DELAY_MS: "0"
    }
    let server: Running | undefined
    try {
      server = await serve(dataDir, env)
      const demo = JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8")) as {
        token: string
        workspace_id: number
      }
      await run(tsx, [
        cli,
        "workspace",
        "set",
        "--workspace-id",
        String(demo.workspace_id),
        "--training-credits",
        "5000"
      ], {
        cwd: root,
        env: { ...process.env, PARLEY_DATA_DIR: dataDir, ...database.env }
      })
      const table = await call(`${server.api}/api/user/knowledge-tables`, {
        token: demo.token,
        method: "POST",
        json: {
          name: "Catalogue",
          columns: [
            { name: "text", data_type: "string", order: 1, is_searchable: true },
            { name: "title", data_type: "string", order: 2 },
            { name: "section", data_type: "string", order: 3 },
            { name: "source", data_type: "string", order: 4, is_filterable: true },
            { name: "page", data_type: "number", order: 5 }
          ]
        }
      })
      const tableId = ok(table, "knowledge.create").id
      const sources = `/api/user/knowledge-tables/${tableId}/sources`
      const created = await call(`${server.api}${sources}`, {
        token: demo.token,
        method: "POST",
        json: { kind: "crawl", url: `${site.origin}/`, max_pages: 100, max_depth: 1 }
      })
      const sourceId = ok(created, "knowledge.addSource").id
      const source = (api: string) =>
        call(`${api}${sources}/${sourceId}`, { token: demo.token }).then((r) => ok(r, "knowledge.source"))

      // killed once a dozen pages are recorded, well before the end
      await until("a dozen pages read", async () => {
        const s = await source(server!.api)
        return (s.progress?.done ?? 0) >= 12 ? true : undefined
      }, 120_000)
      await crash(server, dataDir)
      server = undefined
      const readBefore = new Set(site.asked.filter((p) => p.startsWith("/page/")))
      const askedBefore = site.asked.length

      server = await serve(dataDir, env)
      const api = server.api
      const done = await until("the resumed sync is ready", async () => {
        const s = await source(api)
        return s.status === "ready" || s.status === "failed" ? s : undefined
      }, 180_000)
      expect(done.status).toBe("ready")
      expect(done.error).toBeNull()
      expect(done.pages).toBe(PAGES + 1)
      expect(done.points).toBe(PAGES + 1)

      const after = site.asked.slice(askedBefore).filter((p) => p.startsWith("/page/"))
      // not started over: what was recorded before the crash is not asked for again
      // (the progress counted the index page too)
      expect(readBefore.size).toBeGreaterThanOrEqual(11)
      expect(after.length).toBeLessThanOrEqual(PAGES - readBefore.size + STEP_PAGES)
      expect(new Set([...readBefore, ...after]).size).toBe(PAGES)
      // the same run, resumed by the engine (the dispatcher did not hand it out again)
      const rows = await database.query<{ sync_run: number; dispatches: number }>(
        `select sync_run, dispatches from knowledge_sources where id = $1`,
        [sourceId]
      )
      expect(rows[0]).toEqual({ sync_run: 1, dispatches: 1 })

      const found = await call(`${api}/api/user/knowledge-tables/${tableId}/search`, {
        token: demo.token,
        method: "POST",
        json: { query: "walnut shelf number 33", limit: 3, use_hybrid: true }
      })
      const hit = ok(found, "knowledge.search").results[0]!
      expect(hit.data.source).toBe(`${site.origin}/page/33`)
    } finally {
      await stop(server)
      await site.close()
      await database.drop()
      Fs.rmSync(dataDir, { recursive: true, force: true })
    }
  }, 600_000)
})
