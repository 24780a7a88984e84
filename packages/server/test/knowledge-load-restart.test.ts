/**
 * A large knowledge load cut short by a crash (knowledge/Graph.ts): the load dropped the HNSW graph, the
 * process is killed (SIGKILL) with a batch in flight, before writes paused; the restarted server builds the
 * graph, and every row the load had written is there and found.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { promisify } from "node:util"
import { GRAPH_INDEX } from "../src/knowledge/Graph.js"
import { call, childDatabase, crash, type Running, serve, stop, until } from "./support/ChildServer.js"
import { ok } from "./support/Contract.js"

const run = promisify(execFile)
const root = Path.resolve(__dirname, "../../..")
const cli = Path.join(root, "packages/server/src/cli/main.ts")
const tsx = Path.join(root, "node_modules/.bin/tsx")

const row = (i: number) => ({
  default_id: `r${i}`,
  name: `walnut shelf ${i}`,
  description: `batch ${Math.floor(i / 500)}, item ${i % 500}`
})
const batch = (from: number, n: number) => Array.from({ length: n }, (_, j) => row(from + j))

describe("a large knowledge load across a crash", () => {
  it("the restarted server builds the graph the load dropped; every written row is kept and found", async () => {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-knowledge-restart-"))
    const database = await childDatabase(dataDir)
    const env = { ...database.env, METRICS_PORT: "0" }
    let server: Running | undefined
    const graph = async () =>
      (await database.query<{ valid: boolean }>(
        `select indisvalid as valid from pg_index where indexrelid = to_regclass($1)`,
        [GRAPH_INDEX]
      ))[0]
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
      const api = server.api
      const table = await call(`${api}/api/user/knowledge-tables`, {
        token: demo.token,
        method: "POST",
        json: {
          name: "Shelves",
          columns: [
            { name: "name", data_type: "string", order: 1, is_searchable: true },
            { name: "description", data_type: "string", order: 2, is_searchable: true }
          ]
        }
      })
      expect(table.status).toBe(200)
      const tableId = ok(table, "knowledge.create").id
      const upsert = (points: Array<Record<string, unknown>>) =>
        call(`${api}/api/user/knowledge-tables/${tableId}/points`, {
          token: demo.token,
          method: "PUT",
          json: { points }
        })
      for (let b = 0; b < 3; b++) {
        const r = await upsert(batch(b * 500, 500))
        expect(r.status).toBe(200)
      }
      // a fourth batch in flight, and the process killed before writes paused
      const inFlight = upsert(batch(1500, 500)).catch(() => undefined)
      await crash(server, dataDir)
      server = undefined
      await inFlight
      expect(await graph(), "the load dropped the graph, and it was not built before the crash").toBeUndefined()

      server = await serve(dataDir, env)
      const metrics = /Metrics\s+(http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(server.output())![1]!
      const value = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1])
      await until("the graph built after the restart", async () => {
        const text = await fetch(metrics).then((r) => r.text(), () => "")
        return value(text, "parley_knowledge_graph_ready") === 1 &&
            value(text, "parley_knowledge_graph_builds_total") === 1
          ? true
          : undefined
      }, 120_000)
      const tables = await call(`${server.api}/api/user/knowledge-tables`, { token: demo.token })
      const points = ok(tables, "knowledge.list").find((t) => t.id === tableId)!.points_count
      // the three answered batches, and the fourth if it committed before the kill
      expect([1500, 2000]).toContain(points)
      const found = await call(`${server.api}/api/user/knowledge-tables/${tableId}/search`, {
        token: demo.token,
        method: "POST",
        json: { query: "walnut shelf 1234", limit: 5, use_hybrid: true }
      })
      expect(found.status).toBe(200)
      expect(ok(found, "knowledge.search").results[0]!.default_id).toBe("r1234")
      await stop(server)
      server = undefined
      expect(await graph()).toEqual({ valid: true })
    } finally {
      await stop(server)
      await database.drop()
      Fs.rmSync(dataDir, { recursive: true, force: true })
    }
  }, 300_000)
})
