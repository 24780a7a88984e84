/**
 * `parley knowledge add-source|sources|sync` as an operator runs them (issue 41): child processes talking to a real
 * server over REST, a Markdown file uploaded from the disk and pages of a local site (support/TestSite.ts) followed
 * to `ready` with their points, plain progress lines on stderr (not a terminal), exit code 1 for a source that ends
 * `failed` and for a refused token, 2 for a command line it cannot read.
 */
import { expect, layer } from "@effect/vitest"
import { KnowledgeSource } from "@parley/domain"
import { Effect, Schema } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { jsonAs, run, testTimeout } from "./support/Cli.js"
import { ok } from "./support/Contract.js"
import { documentColumns, SOURCES_ENV } from "./support/KnowledgeSources.js"
import { get, post } from "./support/Opportunities.js"
import { giveCredits, seedUser, TestServer, TestServerLive } from "./support/TestServer.js"
import { startTestSite } from "./support/TestSite.js"

const guide = `# Parley guide

## Pricing

The annual plan costs 480 euros a year and includes priority support.

## Delivery

Orders ship from Rotterdam within two working days.
`

layer(
  TestServerLive(SOURCES_ENV),
  { excludeTestServices: true }
)("parley knowledge add-source, sources and sync", (it) => {
  it.scoped(
    "follows a file and a page to ready with their points, exits 1 for a failed source or a refused token, 2 on usage",
    () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestServer
        const owner = yield* seedUser()
        yield* giveCredits(owner.workspace_id, { training_credits: 1_000 })
        const table = ok(
          yield* post(owner, "/api/user/knowledge-tables", { name: "Docs", columns: documentColumns }),
          "knowledge.create"
        ).id
        const site = yield* Effect.acquireRelease(
          Effect.promise(() => startTestSite()),
          (s) => Effect.promise(() => s.close())
        )
        const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-sources-"))
        const file = Path.join(dir, "guide.md")
        Fs.writeFileSync(file, guide)
        const cli = (args: ReadonlyArray<string>, token = owner.token) =>
          Effect.promise(() => run(dir, ["knowledge", ...args], { PARLEY_URL: baseUrl, PARLEY_TOKEN: token }))

        // a file and a page at once, each followed to ready
        const [uploaded, page] = yield* Effect.all([
          cli(["add-source", String(table), "--file", file, "--json"]),
          cli(["add-source", String(table), "--url", `${site.origin}/pricing`, "--sync", "weekly"])
        ], { concurrency: 2 })
        expect(uploaded.code, uploaded.stderr).toBe(0)
        const fromFile = jsonAs(uploaded.stdout, KnowledgeSource)
        expect(fromFile).toMatchObject({ kind: "file", name: "guide.md", status: "ready", error: null, pages: 1 })
        expect(fromFile.points).toBeGreaterThan(0)
        // not a terminal: plain lines, the last one the end
        expect(uploaded.stderr).toMatch(new RegExp(`^source ${fromFile.id}: ready, 1 page, \\d+ points?$`, "m"))
        expect(uploaded.stderr).not.toContain("\r")
        expect(page.code, page.stderr).toBe(0)
        expect(page.stdout).toMatch(/^status\s+ready$/m)
        expect(page.stdout).toMatch(/^sync\s+weekly$/m)
        expect(page.stdout).toMatch(/^points\s+[1-9]\d*$/m)

        const points =
          ok(yield* get(owner, `/api/user/knowledge-tables/${table}/points?per_page=100`), "knowledge.points")
            .records
        expect(points.find((p) => String(p.data.text).includes("480 euros"))?.data.source).toBe("guide.md")
        expect(points.some((p) => String(p.data.text).includes("990 euros"))).toBe(true)

        // the table's sources, a sync followed to its end, a page that is not there (the source ends failed, its
        // reason printed, exit code 1), a token the server refuses and a command line without a source
        const [listed, synced, missing, refused, usage] = yield* Effect.all([
          cli(["sources", String(table)]),
          cli(["sync", String(table), String(fromFile.id), "--json"]),
          cli(["add-source", String(table), "--url", `${site.origin}/missing`]),
          cli(["sources", String(table), "--json"], "pat_not-a-token"),
          cli(["add-source", String(table), "--kind", "crawl"])
        ], { concurrency: 5 })
        expect(listed.code, listed.stderr).toBe(0)
        expect(listed.stdout).toMatch(/^ID\s+KIND\s+NAME\s+STATUS\s+PAGES\s+POINTS\s+SYNC\s+LAST SYNCED\s+ERROR$/m)
        const pageId = /^id\s+(\d+)$/m.exec(page.stdout)?.[1]
        expect(listed.stdout).toMatch(
          new RegExp(`^${pageId}\\s+url\\s+\\S+/pricing\\s+ready\\s+1\\s+[1-9]\\d*\\s+weekly\\s`, "m")
        )
        expect(synced.code, synced.stderr).toBe(0)
        const again = jsonAs(synced.stdout, KnowledgeSource)
        expect(again).toMatchObject({ id: fromFile.id, status: "ready", points: fromFile.points })
        expect(again.last_synced_at! >= fromFile.last_synced_at!).toBe(true)
        expect(missing.code, missing.stdout + missing.stderr).toBe(1)
        expect(missing.stdout).toMatch(/^status\s+failed$/m)
        expect(missing.stderr).toMatch(/^Error: source \d+ failed: .*404/m)
        expect(refused.code).toBe(1)
        expect(jsonAs(refused.stdout, Schema.Struct({ error: Schema.String }))).toEqual({
          error: "Unauthenticated. The token (--token or PARLEY_TOKEN) was refused."
        })
        expect(refused.stdout + refused.stderr).not.toContain("pat_not-a-token")
        expect(usage.code).toBe(2)
        expect(usage.stderr).toContain("knowledge add-source takes --file PATH or --url URL")
      }),
    { timeout: testTimeout }
  )
})
