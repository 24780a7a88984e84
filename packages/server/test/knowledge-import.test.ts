/**
 * `parley knowledge import` as an operator runs it: the real CLI on a temporary data dir with no server
 * (the CLI opens the embedded database once and runs every batch there), or in the postgres project with
 * DATABASE_URL (support/ChildServer.ts: childDatabase). Bad rows are found by sending the failing batch
 * again row by row; the rest of the file is imported.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFile, type ExecFileException } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { promisify } from "node:util"
import { type ImportResult, parseCsv } from "../src/cli/Import.js"
import { type ChildDatabase, childDatabase, serve, stop } from "./support/ChildServer.js"

const run = promisify(execFile)
const root = Path.resolve(__dirname, "../../..")
const cli = Path.join(root, "packages/server/src/cli/main.ts")
const tsx = Path.join(root, "node_modules/.bin/tsx")

const envFor = (dataDir: string, database: ChildDatabase) => ({
  ...process.env,
  PARLEY_DATA_DIR: dataDir,
  PORT: "0",
  RECEIVER_PORT: "0",
  PARLEY_SEED_DEMO: "false",
  ...database.env
})

/** The database the CLI and the server use; `query` on the embedded one only while no server holds the data dir. */
let database: ChildDatabase

const parley = async (dataDir: string, args: ReadonlyArray<string>) => {
  try {
    const { stdout, stderr } = await run(tsx, [cli, ...args], { cwd: root, env: envFor(dataDir, database) })
    return { code: 0, stdout, stderr }
  } catch (e) {
    // a non-zero exit: promisified execFile rejects with the exit code and what the CLI printed
    const failed = e as ExecFileException & { readonly stdout: string; readonly stderr: string }
    return { code: failed.code as number, stdout: failed.stdout, stderr: failed.stderr }
  }
}

describe("CSV parsing", () => {
  it("handles quotes, escaped quotes, commas and line breaks inside quotes, CRLF and a BOM", () => {
    expect(parseCsv("\ufeffa,b,c\r\n1,\"x, \"\"y\"\"\",\"line 1\nline 2\"\r\n2,,\n")).toEqual([
      ["a", "b", "c"],
      ["1", "x, \"y\"", "line 1\nline 2"],
      ["2", "", ""]
    ])
    expect(parseCsv("a\n\nb")).toEqual([["a"], ["b"]])
  })
})

describe("parley knowledge import", () => {
  it("imports the good rows of a CSV in batches, reports the rejected ones and exits with 1", async () => {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-import-"))
    database = await childDatabase(dataDir)
    try {
      const user = await parley(dataDir, [
        "user",
        "create",
        "--email",
        "kb@example.com",
        "--password",
        "s3cret-pass",
        "--workspace-name",
        "KB",
        "--json"
      ])
      expect(user.code).toBe(0)
      const workspaceId = JSON.parse(user.stdout).workspace_id as number
      expect(
        (await parley(dataDir, [
          "workspace",
          "set",
          "--workspace-id",
          String(workspaceId),
          "--training-credits",
          "100",
          "--json"
        ])).code
      ).toBe(0)

      const [table] = await database.query<{ id: number }>(
        "insert into knowledge_tables (workspace_id, name) values ($1, 'Products') returning id",
        [workspaceId]
      )
      const tableId = Number(table!.id)
      const columns: Array<[string, string, number, boolean, boolean]> = [
        ["name", "string", 1, true, false],
        ["sku", "string", 2, false, true],
        ["price", "number", 3, false, false],
        ["in_stock", "boolean", 4, false, false]
      ]
      for (const [name, type, order, searchable, unique] of columns) {
        await database.query(
          `insert into knowledge_columns (workspace_id, knowledge_table_id, name, data_type, sort_order, is_searchable, is_unique)
           values ($1, $2, $3, $4, $5, $6, $7)`,
          [workspaceId, tableId, name, type, order, searchable, unique]
        )
      }

      // 25 rows: row 7 has a price that is not a number, row 15 repeats row 3's sku (unique)
      const lines = ["default_id,name,sku,price,in_stock"]
      for (let i = 1; i <= 25; i++) {
        const name = i === 2 ? "\"Widget, \"\"deluxe\"\"\nedition\"" : `Widget ${i}`
        const sku = i === 15 ? "SKU-3" : `SKU-${i}`
        const price = i === 7 ? "cheap" : (i * 1.5).toFixed(2)
        const stock = i === 4 ? "" : i % 2 === 0 ? "true" : "false"
        lines.push(`p${i},${name},${sku},${price},${stock}`)
      }
      const file = Path.join(dataDir, "products.csv")
      Fs.writeFileSync(file, lines.join("\r\n") + "\r\n")

      const result = await parley(dataDir, [
        "knowledge",
        "import",
        "--table-id",
        String(tableId),
        "--file",
        file,
        "--batch-size",
        "10",
        "--json"
      ])
      expect(result.code).toBe(1)
      const report = JSON.parse(result.stdout) as ImportResult
      expect(report.upserted).toBe(23)
      expect(report.rejected).toHaveLength(2)
      expect(report.rejected[0]).toMatchObject({ row: 7, default_id: "p7", errors: [{ field: "price" }] })
      expect(report.rejected[0]!.errors[0]!.message).toMatch(/must be a number/)
      expect(report.rejected[1]).toMatchObject({ row: 15, default_id: "p15", errors: [{ field: "sku" }] })
      expect(report.rejected[1]!.errors[0]!.message).toMatch(/p3/)
      // not a terminal: plain progress lines on stderr
      expect(result.stderr).toContain("25/25 rows")

      const points = await database.query<
        { default_id: string; data: Record<string, unknown>; has_embedding: boolean }
      >(
        "select default_id, data, embedding is not null as has_embedding from knowledge_points where knowledge_table_id = $1 order by default_id",
        [tableId]
      )
      const ids = points.map((p) => p.default_id)
      expect(ids).toHaveLength(23)
      expect(ids).not.toContain("p7")
      expect(ids).not.toContain("p15")
      expect(points.every((p) => p.has_embedding)).toBe(true)
      const byId = new Map(points.map((p) => [p.default_id, p.data]))
      expect(byId.get("p2")).toEqual({ name: "Widget, \"deluxe\"\nedition", sku: "SKU-2", price: 3, in_stock: true })
      expect(byId.get("p4")).toEqual({ name: "Widget 4", sku: "SKU-4", price: 6 }) // empty cell omitted
      const [credits] = await database.query<{ training_credits: number }>(
        "select training_credits::float8 as training_credits from workspaces where id = $1",
        [workspaceId]
      )
      expect(Number(credits!.training_credits)).toBe(100 - 23)

      // the summary for people
      const fixed = Path.join(dataDir, "fixed.csv")
      Fs.writeFileSync(fixed, "default_id,price\np7,7.5\n")
      const again = await parley(dataDir, ["knowledge", "import", "--table-id", String(tableId), "--file", fixed])
      expect(again.code).toBe(0)
      expect(again.stdout).toMatch(/Upserted 1 row, rejected 0, in \d+\.\d+s/)

      // usage errors: unknown table, unreadable file, missing flags
      const unknown = await parley(dataDir, ["knowledge", "import", "--table-id", "999", "--file", file])
      expect(unknown.code).toBe(2)
      expect(unknown.stderr).toContain("No knowledge table with id 999")
      const missing = await parley(dataDir, [
        "knowledge",
        "import",
        "--table-id",
        String(tableId),
        "--file",
        Path.join(dataDir, "nope.csv")
      ])
      expect(missing.code).toBe(2)
      expect((await parley(dataDir, ["knowledge", "import", "--file", file])).code).toBe(2)

      // while a server runs: embedded, the batches go through its admin endpoint (it holds the data dir);
      // with DATABASE_URL, the CLI writes to the database beside it (JSON Lines here)
      const jsonl = Path.join(dataDir, "more.jsonl")
      Fs.writeFileSync(
        jsonl,
        [
          JSON.stringify({ default_id: "q1", name: "Gadget 1", price: 10, in_stock: true }),
          JSON.stringify({ default_id: "q2", name: "Gadget 2", colour: "red" }),
          "{not json",
          JSON.stringify({ default_id: 3, name: "Gadget 3", sku: "SKU-99" })
        ].join("\n") + "\n"
      )
      const server = await serve(dataDir, { PARLEY_SEED_DEMO: "false", ...database.env })
      let online: Awaited<ReturnType<typeof parley>>
      try {
        online = await parley(dataDir, [
          "knowledge",
          "import",
          "--table-id",
          String(tableId),
          "--file",
          jsonl,
          "--json"
        ])
      } finally {
        await stop(server)
      }
      expect(online.code).toBe(1)
      const onlineReport = JSON.parse(online.stdout) as ImportResult
      expect(onlineReport.upserted).toBe(2)
      expect(onlineReport.rejected.map((r) => [r.row, r.default_id, r.errors[0]!.field])).toEqual([[
        2,
        "q2",
        "colour"
      ], [3, null, ""]])
      const count = await database.query<{ n: number }>(
        "select count(*)::int as n from knowledge_points where knowledge_table_id = $1",
        [tableId]
      )
      expect(count[0]!.n).toBe(26)
    } finally {
      await database.drop()
      Fs.rmSync(dataDir, { recursive: true, force: true })
    }
  }, 180_000)
})
