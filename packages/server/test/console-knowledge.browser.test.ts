/**
 * The console's knowledge page in real Chromium (docs/console.md, "Knowledge"), on the in-process server with a local
 * site (TestSite.ts): the operator opens a document table from the nav, drops a Markdown file and adds a page of the
 * site, watches both reach `ready` with their points, syncs the page again and searches the table; a file dropped on
 * a table without the document columns shows the server's 422; deleting a source asks first. Screenshot in
 * test-results/console-knowledge.png.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Page } from "playwright-core"
import { launch } from "./support/Browser.js"
import { ok } from "./support/Contract.js"
import { documentColumns, SOURCES_ENV } from "./support/KnowledgeSources.js"
import { post } from "./support/Opportunities.js"
import { giveCredits, seedUser, TestServer, TestServerLive } from "./support/TestServer.js"
import { startTestSite } from "./support/TestSite.js"

const TABLES = "/api/user/knowledge-tables"
const WAIT = { timeout: 20_000 }
const artifacts = Path.resolve(__dirname, "../../../test-results")

const guide = `# Shipping guide

## Delivery

Parcels leave the Rotterdam warehouse every weekday at noon.
`

/** A real drop of a file on the drop zone: the DataTransfer the browser builds for a drag from the desktop. */
const dropFile = async (page: Page, name: string, text: string) => {
  const transfer = await page.evaluateHandle(([n, t]) => {
    const data = new DataTransfer()
    data.items.add(new File([t!], n!, { type: "text/markdown" }))
    return data
  }, [name, text])
  await page.locator(".dropzone").dispatchEvent("dragover", { dataTransfer: transfer })
  await page.locator(".dropzone").dispatchEvent("drop", { dataTransfer: transfer })
}

/** The source row of `name` once it is ready with points. */
const readyRow = async (page: Page, name: string) => {
  const row = page.getByRole("table", { name: "Sources" }).locator("tr[data-status=ready]", { hasText: name })
  await row.waitFor(WAIT)
  return row
}

layer(
  TestServerLive(SOURCES_ENV),
  { excludeTestServices: true }
)("the console's knowledge page", (it) => {
  it.scoped(
    "drops a file and adds a page that reach ready with points, syncs and searches the table",
    () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestServer
        const owner = yield* seedUser()
        yield* giveCredits(owner.workspace_id, { training_credits: 1_000 })
        const docs = ok(
          yield* post(owner, TABLES, { name: "Help center", columns: documentColumns }),
          "knowledge.create"
        )
        const plain = ok(
          yield* post(owner, TABLES, {
            name: "Prices",
            columns: [{ name: "name", data_type: "string", order: 1, is_searchable: true }]
          }),
          "knowledge.create"
        )
        const site = yield* Effect.acquireRelease(
          Effect.promise(() => startTestSite()),
          (s) => Effect.promise(() => s.close())
        )
        const browser = yield* launch
        const page = yield* Effect.promise(async () => {
          const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
          return context.newPage()
        })
        const errors: Array<string> = []
        page.on("pageerror", (e) => errors.push(String(e)))

        yield* Effect.promise(async () => {
          await page.goto(`${baseUrl}/console`)
          await page.getByLabel("Email").fill(owner.email)
          await page.getByLabel("Password").fill("correct horse battery")
          await page.getByRole("button", { name: "Sign in" }).click()
          await page.waitForURL(`${baseUrl}/console`)

          // the tables of the workspace, from the nav
          await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Knowledge" }).click()
          await page.waitForURL(`${baseUrl}/console/knowledge`)
          const listed = page.locator(`table.knowledge-tables tr[data-id="${docs.id}"]`)
          await listed.waitFor(WAIT)
          // the sources' count comes from a request of its own: "…" until it answers
          await listed.getByText("…").waitFor({ state: "hidden", ...WAIT })
          expect(await listed.innerText()).toMatch(/Help center\s+0\s+0/)
          await listed.getByRole("link", { name: "Help center" }).click()
          await page.waitForURL(`${baseUrl}/console/knowledge/${docs.id}`)

          // a dropped file and a page of the site, each a source, polled until ready
          await dropFile(page, "shipping.md", guide)
          await readyRow(page, "shipping.md")
          await page.getByLabel("URL").fill(`${site.origin}/pricing`)
          await page.getByRole("button", { name: "Add", exact: true }).click()
          const pricing = await readyRow(page, "/pricing")
          for (const name of ["shipping.md", "/pricing"]) {
            const row = await readyRow(page, name)
            expect(Number(await row.locator("td.points").innerText())).toBeGreaterThan(0)
          }
          expect(await page.locator(".table-points").innerText()).not.toBe("0 points")

          // once none syncs, the page stops asking
          const asked: Array<string> = []
          page.on("request", (r) => r.url().includes("/sources") && asked.push(r.url()))
          await page.waitForTimeout(1_300)
          expect(asked).toEqual([])

          // sync now fetches the page again
          await pricing.getByRole("button", { name: /^Sync .* now$/ }).click()
          const fetched = () => site.requests.filter((r) => r.path === "/pricing").length
          await expect.poll(fetched, WAIT).toBeGreaterThanOrEqual(2)
          await readyRow(page, "/pricing")

          // the table's search shows hits with their columns and score
          await page.getByLabel("Search query").fill("annual plan price in euros")
          await page.getByRole("button", { name: "Search", exact: true }).click()
          const hits = page.getByRole("table", { name: "Search results" })
          await hits.waitFor(WAIT)
          const first = hits.locator("tbody tr").first()
          expect(await first.locator("td[data-column=text]").innerText()).toContain("990 euros")
          expect(await first.locator("td[data-column=source]").innerText()).toBe(`${site.origin}/pricing`)
          expect(Number(await first.locator("td.score").innerText())).toBeGreaterThan(0)
          Fs.mkdirSync(artifacts, { recursive: true })
          await page.screenshot({ path: Path.join(artifacts, "console-knowledge.png"), fullPage: true })

          // deleting asks first; its points go with it
          const shipping = await readyRow(page, "shipping.md")
          await shipping.getByRole("button", { name: "Delete shipping.md" }).click()
          await shipping.getByRole("group", { name: "Delete shipping.md?" }).getByRole("button", { name: "Delete" })
            .click()
          await page.getByRole("table", { name: "Sources" }).locator("tr", { hasText: "shipping.md" }).waitFor({
            state: "detached",
            ...WAIT
          })

          // a table without the document columns refuses the file: the server's 422 at the file
          await page.goto(`${baseUrl}/console/knowledge/${plain.id}`)
          await page.getByRole("heading", { name: "Prices" }).waitFor(WAIT)
          await page.locator("#knowledge-files").setInputFiles({
            name: "notes.md",
            mimeType: "text/markdown",
            buffer: Buffer.from(guide)
          })
          const refused = page.getByRole("list", { name: "Uploads" }).getByRole("alert")
          await refused.waitFor(WAIT)
          expect(await refused.innerText()).toContain("columns.text")
        })
        expect(errors).toEqual([])
      }),
    { timeout: 90_000 }
  )
})
