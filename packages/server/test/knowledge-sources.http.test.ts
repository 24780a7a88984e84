/**
 * Knowledge sources through the real server (issue 41): real files (Markdown, a DOCX zipped with jszip, a corrupt
 * PDF) and a local site (TestSite.ts) become chunks of a document table, searchable with the table's search; a sync
 * keeps unchanged points, updates changed ones and deletes vanished ones; deleting a source deletes its points.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import http from "node:http"
import { failure, ok } from "./support/Contract.js"
import { DOCX, docx, PPTX, pptx, XLSX, xlsx, zipBomb } from "./support/Documents.js"
import { documentColumns, SOURCES_ENV } from "./support/KnowledgeSources.js"
import { type Caller, del, expect422, expectStatus, get, post, put } from "./support/Opportunities.js"
import { sqlRows } from "./support/Opportunities.js"
import { pdf } from "./support/Pdf.js"
import { fetchJson, giveCredits, seedUser, TestServer, TestServerLive } from "./support/TestServer.js"
import { startTestSite } from "./support/TestSite.js"
import { eventually } from "./support/WebhookReceiver.js"

const TABLES = "/api/user/knowledge-tables"
const sourcesOf = (table: number) => `${TABLES}/${table}/sources`

/** A user with training credits and a document table. */
const fixture = Effect.gen(function*() {
  const owner = yield* seedUser()
  yield* giveCredits(owner.workspace_id, { training_credits: 1_000 })
  const table = ok(yield* post(owner, TABLES, { name: "Docs", columns: documentColumns }), "knowledge.create")
  return { owner, table: table.id }
})

const upload = (who: Caller, table: number, name: string, type: string, bytes: Uint8Array) =>
  Effect.flatMap(TestServer, ({ baseUrl }) => {
    const form = new FormData()
    form.append("file", new Blob([new Uint8Array(bytes)], { type }), name)
    return fetchJson(`${baseUrl}${sourcesOf(table)}`, {
      method: "POST",
      headers: { authorization: `Bearer ${who.token}`, accept: "application/json" },
      body: form
    })
  })

/** The source once its sync ended (`ready` or `failed`). */
const settled = (who: Caller, table: number, source: number) =>
  eventually(Effect.map(get(who, `${sourcesOf(table)}/${source}`), (r) => {
    const s = ok(r, "knowledge.source")
    return s.status === "ready" || s.status === "failed" ? s : undefined
  }))

interface Point {
  readonly point_id: string
  readonly default_id: string
  readonly data: Record<string, unknown>
  readonly modified_date: string
}
const pointsOf = (who: Caller, table: number) =>
  Effect.map(
    get(who, `${TABLES}/${table}/points?per_page=100`),
    (r) => ok(r, "knowledge.points").records as ReadonlyArray<Point>
  )

const encode = (s: string) => new TextEncoder().encode(s)

const guide = `# Parley guide

## Pricing

The annual plan costs 480 euros a year and includes priority support.

## Delivery

Orders ship from Rotterdam within two working days.
`

const kb = (sections: ReadonlyArray<readonly [string, string]>) =>
  `<!doctype html><html><head><title>Knowledge base</title></head><body><main><article><h1>Knowledge base</h1>${
    sections.map(([h, p]) => `<h2>${h}</h2><p>${p}</p>`).join("")
  }</article></main></body></html>`

layer(
  TestServerLive({ ...SOURCES_ENV, SOURCE_PAGE_TIMEOUT_MS: "1500" }),
  { excludeTestServices: true }
)(
  "knowledge sources over REST",
  (it) => {
    it.effect("a Markdown file and a DOCX become chunks with the document columns, found by the table's search", () =>
      Effect.gen(function*() {
        const { owner, table } = yield* fixture
        const md = ok(yield* upload(owner, table, "guide.md", "text/markdown", encode(guide)), "knowledge.addSource")
        expect(md).toMatchObject({ kind: "file", name: "guide.md", status: "pending", knowledge_table_id: table })
        const offer = yield* docx(["Offer for ACME", "Delivery of the hex bolts in May"])
        const word = ok(yield* upload(owner, table, "offer.docx", DOCX, offer), "knowledge.addSource")

        const mdDone = yield* settled(owner, table, md.id)
        expect(mdDone).toMatchObject({ status: "ready", error: null, pages: 1 })
        expect(mdDone.points).toBeGreaterThan(0)
        expect(mdDone.last_synced_at).not.toBeNull()
        expect(yield* settled(owner, table, word.id)).toMatchObject({ status: "ready", pages: 1 })

        const points = yield* pointsOf(owner, table)
        const pricing = points.find((p) => String(p.data.text).includes("480 euros"))!
        expect(pricing.default_id).toMatch(new RegExp(`^src${md.id}-[0-9a-f]{16}$`))
        expect(pricing.data.source).toBe("guide.md")
        expect(pricing.data.page ?? null).toBeNull()
        expect(String(pricing.data.section)).toContain("Pricing")
        expect(String(pricing.data.text)).not.toContain("Rotterdam")
        const fromWord = points.filter((p) => p.data.source === "offer.docx")
        expect(fromWord.map((p) => p.data.text).join(" ")).toContain("hex bolts in May")

        const found = ok(
          yield* post(owner, `${TABLES}/${table}/search`, { query: "annual plan", limit: 3 }),
          "knowledge.search"
        )
        expect(found.results[0]!.point_id).toBe(pricing.point_id)
        const list = ok(yield* get(owner, sourcesOf(table)), "knowledge.sources")
        expect(list.map((s) => s.id)).toEqual([md.id, word.id])
      }))

    it.scoped("a page synced again keeps its unchanged chunks, updates the changed one and deletes the vanished one", () =>
      Effect.gen(function*() {
        const { owner, table } = yield* fixture
        const site = yield* Effect.acquireRelease(
          Effect.promise(() => startTestSite()),
          (s) => Effect.promise(() => s.close())
        )
        site.setPage(
          "/kb",
          kb([
            ["Returns", "Returns are accepted within thirty days of delivery with the receipt."],
            ["Shipping", "Parcels leave the Rotterdam warehouse every weekday at noon."],
            ["Warranty", "Every kettle carries a two year warranty against defects."]
          ])
        )
        const url = `${site.origin}/kb`
        const source = ok(yield* post(owner, sourcesOf(table), { kind: "url", url }), "knowledge.addSource")
        expect(source).toMatchObject({ kind: "url", url, name: url, status: "pending" })
        expect(yield* settled(owner, table, source.id)).toMatchObject({ status: "ready", pages: 1, error: null })
        const first = yield* pointsOf(owner, table)
        const find = (points: ReadonlyArray<Point>, text: string) =>
          points.find((p) => String(p.data.text).includes(text))
        const returns = find(first, "thirty days")!
        const shipping = find(first, "Rotterdam")!
        expect(returns.data).toMatchObject({ source: url, section: expect.stringContaining("Returns") })
        expect(find(first, "two year warranty")).toBeDefined()
        expect(site.requests.filter((r) => r.path === "/kb")[0]!.userAgent).toContain("ParleyBot/1.0")

        site.setPage(
          "/kb",
          kb([
            ["Returns", "Returns are accepted within thirty days of delivery with the receipt."],
            ["Shipping", "Parcels leave the Rotterdam warehouse every weekday at three."]
          ])
        )
        const asked = ok(yield* post(owner, `${sourcesOf(table)}/${source.id}/sync`, {}), "knowledge.syncSource")
        expect(asked.status).toBe("pending")
        yield* eventually(Effect.map(get(owner, `${sourcesOf(table)}/${source.id}`), (r) => {
          const s = ok(r, "knowledge.source")
          return s.status === "ready" && s.updated_at > asked.updated_at ? s : undefined
        }))
        const second = yield* pointsOf(owner, table)
        // unchanged: the same point, not written again
        expect(find(second, "thirty days")).toEqual(returns)
        const moved = find(second, "at three")!
        expect(moved.default_id).not.toBe(shipping.default_id)
        expect(find(second, "at noon")).toBeUndefined()
        expect(find(second, "two year warranty")).toBeUndefined()
        expect(second.every((p) => p.default_id.startsWith(`src${source.id}-`))).toBe(true)
        expect(ok(yield* get(owner, `${sourcesOf(table)}/${source.id}`), "knowledge.source").points)
          .toBe(second.length)
      }))

    it.effect("deleting a source deletes its points and only them", () =>
      Effect.gen(function*() {
        const { owner, table } = yield* fixture
        const a = ok(
          yield* upload(owner, table, "a.md", "text/markdown", encode("# A\n\nAlpha facts.")),
          "knowledge.addSource"
        )
        const b = ok(
          yield* upload(owner, table, "b.md", "text/markdown", encode("# B\n\nBeta facts.")),
          "knowledge.addSource"
        )
        yield* settled(owner, table, a.id)
        yield* settled(owner, table, b.id)
        const removed = ok(yield* del(owner, `${sourcesOf(table)}/${a.id}`), "knowledge.removeSource")
        expect(removed.deleted).toBeGreaterThan(0)
        expect((yield* pointsOf(owner, table)).map((p) => p.data.source)).toEqual(["b.md"])
        expectStatus(yield* get(owner, `${sourcesOf(table)}/${a.id}`), 404, "Knowledge source not found.")
      }))

    it.effect("a corrupt PDF fails with a reason, a table without document columns is a 422, 51 MB is a 413", () =>
      Effect.gen(function*() {
        const { owner, table } = yield* fixture
        const pdf = ok(
          yield* upload(owner, table, "broken.pdf", "application/pdf", encode("%PDF-1.7\nnot really a pdf")),
          "knowledge.addSource"
        )
        const failed = yield* settled(owner, table, pdf.id)
        expect(failed.status).toBe("failed")
        expect(failed.error).toMatch(/broken\.pdf|PDF/i)
        expect(failed.points).toBe(0)

        const plain = ok(
          yield* post(owner, TABLES, {
            name: "Plain",
            columns: [{ name: "answer", data_type: "string", order: 1, is_searchable: true }]
          }),
          "knowledge.create"
        )
        expect422(yield* post(owner, sourcesOf(plain.id), { kind: "url", url: "https://example.com/" }), [
          "columns.page",
          "columns.section",
          "columns.source",
          "columns.text",
          "columns.title"
        ])
        expect422(yield* post(owner, sourcesOf(table), { kind: "url", url: "ftp://example.com/" }), ["url"])

        const big = new Uint8Array(51 * 1024 * 1024)
        expectStatus(yield* upload(owner, table, "big.txt", "text/plain", big), 413)
      }))

    it.effect("another workspace gets 404 for the table's sources and cannot sync or delete them", () =>
      Effect.gen(function*() {
        const { owner, table } = yield* fixture
        const source = ok(
          yield* upload(owner, table, "c.md", "text/markdown", encode("# C\n\nGamma facts.")),
          "knowledge.addSource"
        )
        const stranger = yield* seedUser()
        expectStatus(yield* get(stranger, sourcesOf(table)), 404, "Knowledge table not found.")
        expectStatus(yield* get(stranger, `${sourcesOf(table)}/${source.id}`), 404)
        expectStatus(yield* post(stranger, `${sourcesOf(table)}/${source.id}/sync`, {}), 404)
        expectStatus(yield* del(stranger, `${sourcesOf(table)}/${source.id}`), 404)
        expectStatus(yield* upload(stranger, table, "d.md", "text/markdown", encode("# D")), 404)
        // a source id of another table is not found through this one
        const { owner: other, table: otherTable } = yield* fixture
        expectStatus(yield* get(other, `${sourcesOf(otherTable)}/${source.id}`), 404, "Knowledge source not found.")
        yield* settled(owner, table, source.id)
      }))

    it.scoped("a daily source syncs itself once a day has passed since its last sync; an off one never does", () =>
      Effect.gen(function*() {
        const { owner, table } = yield* fixture
        const site = yield* Effect.acquireRelease(
          Effect.promise(() => startTestSite()),
          (s) => Effect.promise(() => s.close())
        )
        site.setPage("/daily", kb([["Hours", "The shop opens at nine every morning."]]))
        site.setPage("/manual", kb([["Phone", "Call the front desk on extension twelve."]]))
        // created first: a sweep would take it before the daily one, were it due
        const manual = ok(
          yield* post(owner, sourcesOf(table), { kind: "url", url: `${site.origin}/manual` }),
          "knowledge.addSource"
        )
        expect(manual.sync).toBe("off")
        const daily = ok(
          yield* post(owner, sourcesOf(table), { kind: "url", url: `${site.origin}/daily`, sync: "daily" }),
          "knowledge.addSource"
        )
        expect(daily.sync).toBe("daily")
        const first = yield* settled(owner, table, daily.id)
        yield* settled(owner, table, manual.id)
        const fetched = (path: string) => site.requests.filter((r) => r.path === path).length
        expect(fetched("/daily")).toBe(1)

        // a day later, as the database's clock sees it: both last synced 25 hours ago
        yield* sqlRows`update knowledge_sources set last_synced_at = now() - interval '25 hours'
                       where id in (${daily.id}, ${manual.id})`
        site.setPage("/daily", kb([["Hours", "The shop opens at eight every morning."]]))
        const again = yield* eventually(
          Effect.map(get(owner, `${sourcesOf(table)}/${daily.id}`), (r) => {
            const s = ok(r, "knowledge.source")
            // later than the first sync (the update above moved it back a day)
            return s.status === "ready" && Date.parse(s.last_synced_at!) > Date.parse(first.last_synced_at!)
              ? s
              : undefined
          }),
          20_000
        )
        expect(again.error).toBeNull()
        expect(fetched("/daily")).toBe(2)
        const texts = (yield* pointsOf(owner, table)).map((p) => String(p.data.text))
        expect(texts.some((t) => t.includes("opens at eight"))).toBe(true)
        expect(texts.some((t) => t.includes("opens at nine"))).toBe(false)
        // the source without a schedule waits for a sync to be asked for
        expect(fetched("/manual")).toBe(1)
      }))

    it.effect("a table created without columns gets the document columns and takes a file", () =>
      Effect.gen(function*() {
        const { owner } = yield* fixture
        const table = ok(yield* post(owner, TABLES, { name: "Handbook" }), "knowledge.create")
        expect(table.columns.map((c) => [c.name, c.data_type, c.is_searchable, c.is_filterable])).toEqual([
          ["text", "string", true, false],
          ["title", "string", false, false],
          ["section", "string", false, false],
          ["source", "string", false, true],
          ["page", "number", false, false]
        ])
        const md = ok(yield* upload(owner, table.id, "guide.md", "text/markdown", encode(guide)), "knowledge.addSource")
        expect(yield* settled(owner, table.id, md.id)).toMatchObject({ status: "ready", error: null })
        const long = yield* post(owner, sourcesOf(table.id), {
          kind: "url",
          url: `https://a.example/${"a".repeat(2100)}`
        })
        expect(long.status).toBe(422)
        // (a JSON body is also told what a file upload would need: one endpoint takes both)
        expect(failure(long).validation).toContainEqual({
          field: "url",
          message: "The url field may not be greater than 2000 characters."
        })
      }))

    it.effect("a PDF of several pages with headings and a large Markdown file become chunks with their pages and sections", () =>
      Effect.gen(function*() {
        const { owner, table } = yield* fixture
        yield* giveCredits(owner.workspace_id, { training_credits: 5_000 })
        const handbook = pdf([
          [[18, "Pricing"], [11, "Acme sells two plans to small shops."], [14, "Annual plan"], [
            11,
            "The annual plan costs 990 euros a year, paid once."
          ]],
          [[18, "Delivery"], [11, "Parcels leave the Rotterdam warehouse every weekday at noon."]],
          [[18, "Returns"], [11, "Returns are accepted within thirty days with the receipt."]]
        ], { title: "Acme handbook" })
        const file = ok(
          yield* upload(owner, table, "handbook.pdf", "application/pdf", handbook),
          "knowledge.addSource"
        )
        // 400 sections of about 2.5 KB each: a 1 MB Markdown file
        const sections = Array.from(
          { length: 400 },
          (_, i) => `## Topic ${i}\n\n${`Topic ${i} is about walnut shelf number ${i}. `.repeat(60)}\n`
        )
        const large = `# Catalogue\n\n${sections.join("\n")}`
        expect(large.length).toBeGreaterThan(1_000_000)
        const md = ok(
          yield* upload(owner, table, "catalogue.md", "text/markdown", encode(large)),
          "knowledge.addSource"
        )
        expect(yield* settled(owner, table, file.id)).toMatchObject({ status: "ready", error: null, pages: 3 })
        const big = yield* settled(owner, table, md.id)
        expect(big).toMatchObject({ status: "ready", error: null, pages: 1 })
        // each section's text is longer than a chunk: two or three chunks each
        expect(big.points).toBeGreaterThanOrEqual(800)
        const points = yield* sqlRows<{ data: Record<string, unknown> }>`
          select data from knowledge_points where knowledge_table_id = ${table}`
        const pdfPoints = points.filter((p) => p.data.source === "handbook.pdf").map((p) => p.data)
        expect(pdfPoints.find((d) => String(d.text).includes("990 euros"))).toMatchObject({
          title: "Acme handbook",
          section: "Pricing > Annual plan",
          page: 1
        })
        expect(pdfPoints.find((d) => String(d.text).includes("thirty days"))).toMatchObject({
          section: "Returns",
          page: 3
        })
        const topic = points.find((p) => p.data.source === "catalogue.md" && String(p.data.text).includes("number 317"))
        expect(topic?.data).toMatchObject({ section: "Catalogue > Topic 317", page: null })
        expect(String(topic?.data.text).length).toBeLessThanOrEqual(1200)
      }))

    it.scoped("a crawl and a sitemap keep to their host and robots.txt; a private redirect and a hanging page fail alone", () =>
      Effect.gen(function*() {
        const { owner, table } = yield* fixture
        const site = yield* Effect.acquireRelease(
          Effect.promise(() => startTestSite()),
          (s) => Effect.promise(() => s.close())
        )
        const o = site.origin
        const crawl = ok(
          yield* post(owner, sourcesOf(table), { kind: "crawl", url: `${o}/`, max_depth: 2 }),
          "knowledge.addSource"
        )
        const crawled = yield* settled(owner, table, crawl.id)
        // the home page, /pricing, /docs/setup, /notes.md and /docs/advanced (two links away)
        expect(crawled).toMatchObject({ status: "ready", pages: 5 })
        // the refusal is told, not hidden
        expect(crawled.error).toBe(
          `1 page(s) could not be read; the first: ${o}/private/secret is disallowed by robots.txt`
        )
        const sources = new Set((yield* pointsOf(owner, table)).map((p) => p.data.source))
        expect(sources).toEqual(
          new Set([`${o}/`, `${o}/pricing`, `${o}/docs/setup`, `${o}/notes.md`, `${o}/docs/advanced`])
        )
        expect(site.requests.some((r) => r.path.startsWith("/private/"))).toBe(false)
        expect(site.other.requests).toHaveLength(0)

        site.setPage(
          "/sitemap-traps.xml",
          `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
            ["/pricing", "/redirect-private", "/hang", "/private/secret", `${site.other.origin}/page`]
              .map((p) => `<url><loc>${p.startsWith("/") ? o + p : p}</loc></url>`).join("") +
            `</urlset>`,
          "application/xml"
        )
        const traps = ok(
          yield* post(owner, sourcesOf(table), { kind: "sitemap", url: `${o}/sitemap-traps.xml` }),
          "knowledge.addSource"
        )
        const trapped = yield* settled(owner, table, traps.id)
        // the page that could be read is kept; each other one is a failure of its own, named in `error`
        expect(trapped).toMatchObject({ status: "ready", pages: 1 })
        expect(trapped.error).toMatch(/^4 page\(s\) could not be read; the first: /)
        expect(trapped.points).toBeGreaterThan(0)
        expect(site.requests.some((r) => r.path.startsWith("/private/"))).toBe(false)
        expect(site.other.requests).toHaveLength(0)
        // the hanging page was asked for and given up
        expect(site.requests.filter((r) => r.path === "/hang")).toHaveLength(1)
      }))

    it.effect("an XLSX and a PPTX become chunks a page per sheet and per slide, their rows labelled by the header", () =>
      Effect.gen(function*() {
        const { owner, table } = yield* fixture
        const sheet = yield* xlsx([
          { name: "Prices", rows: [["Plan", "Price"], ["Pro", 480], ["Team", 960]] },
          { name: "Terms", rows: [["Prices exclude VAT and are billed yearly."]] }
        ])
        const deck = yield* pptx([{ title: "Roadmap", body: ["Faster search in May."] }, { body: ["Questions?"] }])
        const xl = ok(yield* upload(owner, table, "prices.xlsx", XLSX, sheet), "knowledge.addSource")
        const pp = ok(yield* upload(owner, table, "deck.pptx", PPTX, deck), "knowledge.addSource")
        // a file's `pages` are its sheets and slides
        expect(yield* settled(owner, table, xl.id)).toMatchObject({ status: "ready", error: null, pages: 2 })
        expect(yield* settled(owner, table, pp.id)).toMatchObject({ status: "ready", error: null, pages: 2 })
        const data = (yield* pointsOf(owner, table)).map((p) => p.data)
        expect(data.find((d) => String(d.text).includes("Plan: Pro"))).toMatchObject({
          text: "Prices\n\nPlan: Pro\nPrice: 480\n\nPlan: Team\nPrice: 960",
          title: "prices",
          section: "Prices",
          source: "prices.xlsx",
          page: 1
        })
        expect(data.find((d) => String(d.text).includes("VAT"))).toMatchObject({ section: "Terms", page: 2 })
        expect(data.find((d) => String(d.text).includes("Faster search"))).toMatchObject({
          text: "Roadmap\n\nFaster search in May.",
          title: "deck",
          section: "Roadmap",
          source: "deck.pptx",
          page: 1
        })
        expect(data.find((d) => String(d.text).includes("Questions?"))).toMatchObject({ section: "Slide 2", page: 2 })
      }))

    it.effect("a zip bomb dressed as a DOCX fails with its reason; a 60 MB chunked upload is a 413 and stores nothing", () =>
      Effect.gen(function*() {
        const { owner, table } = yield* fixture
        // 200 MB of XML in a few hundred KB: refused from its central directory, before anything is inflated
        const bomb = yield* zipBomb(200)
        expect(bomb.byteLength).toBeLessThan(1024 * 1024)
        const source = ok(yield* upload(owner, table, "bomb.docx", DOCX, bomb), "knowledge.addSource")
        const failed = yield* settled(owner, table, source.id)
        expect(failed).toMatchObject({ status: "failed", points: 0 })
        expect(failed.error).toMatch(/^"bomb\.docx" is refused: .*more than 100 MB/)

        const { baseUrl } = yield* TestServer
        const other = ok(yield* post(owner, TABLES, { name: "Huge", columns: documentColumns }), "knowledge.create")
        const answer = yield* Effect.promise(() => streamUpload(`${baseUrl}${sourcesOf(other.id)}`, owner.token, 60))
        expect(answer.status).toBe(413)
        expect(JSON.parse(answer.body)).toEqual({
          status: false,
          code: 413,
          validation: [],
          data: null,
          message: "The request body is larger than this endpoint accepts."
        })
        expect(ok(yield* get(owner, sourcesOf(other.id)), "knowledge.sources")).toEqual([])
      }))

    it.effect("chunk_size and chunk_overlap are set on create and update, answered on GET, and bounded", () =>
      Effect.gen(function*() {
        const { owner } = yield* fixture
        const made = ok(
          yield* post(owner, TABLES, { name: "Chunky", columns: documentColumns, chunk_size: 600 }),
          "knowledge.create"
        )
        expect(made).toMatchObject({ chunk_size: 600, chunk_overlap: 150 })
        const small = ok(
          yield* post(owner, TABLES, { name: "Small", columns: documentColumns, chunk_size: 200 }),
          "knowledge.create"
        )
        // the default overlap is more than half of 200: the largest allowed is taken
        expect(small).toMatchObject({ chunk_size: 200, chunk_overlap: 100 })
        const long = `# Plans\n\n${
          Array.from({ length: 12 }, (_, i) => `Plan ${i} costs ${i * 10} euros a month.`).join(" ")
        }`
        const md = ok(yield* upload(owner, small.id, "plans.md", "text/markdown", encode(long)), "knowledge.addSource")
        expect(yield* settled(owner, small.id, md.id)).toMatchObject({ status: "ready" })
        const texts = (yield* pointsOf(owner, small.id)).map((p) => String(p.data.text))
        expect(texts.length).toBeGreaterThan(2)
        expect(texts.every((t) => t.length <= 200 && t.startsWith("Plans\n\n"))).toBe(true)
        const updated = ok(
          yield* put(owner, `${TABLES}/${made.id}`, { chunk_size: 2000, chunk_overlap: 300 }),
          "knowledge.update"
        )
        expect(updated).toMatchObject({ chunk_size: 2000, chunk_overlap: 300, name: "Chunky" })
        expect(ok(yield* get(owner, `${TABLES}/${made.id}`), "knowledge.get")).toMatchObject({
          chunk_size: 2000,
          chunk_overlap: 300
        })
        expect422(yield* post(owner, TABLES, { name: "Bad", columns: documentColumns, chunk_size: 100 }), [
          "chunk_size"
        ])
        expect422(yield* put(owner, `${TABLES}/${made.id}`, { chunk_size: 9000, chunk_overlap: -1 }), [
          "chunk_overlap",
          "chunk_size"
        ])
        // 300 of overlap is more than half of 400
        expect422(yield* put(owner, `${TABLES}/${made.id}`, { chunk_size: 400 }), ["chunk_overlap"])
      }))
  }
)

/**
 * A multipart upload of `megabytes` MB streamed with chunked transfer encoding (no Content-Length), a megabyte at a
 * time, stopping when the server answers: its status and body.
 */
const streamUpload = (url: string, token: string, megabytes: number) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const boundary = "parley-test-boundary"
    const request = http.request(url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        accept: "application/json",
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "transfer-encoding": "chunked"
      }
    })
    let answered = false
    let wake = () => {}
    request.on("response", (response) => {
      answered = true
      wake()
      let body = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => body += chunk)
      response.on("end", () => {
        request.destroy()
        resolve({ status: response.statusCode ?? 0, body })
      })
    })
    // the server may close the connection on a body it refused: the answer above is what counts
    request.on("error", (error) => answered ? undefined : reject(error))
    const megabyte = Buffer.alloc(1024 * 1024, 0x61)
    const send = async () => {
      request.write(
        `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="huge.txt"\r\n` +
          "content-type: text/plain\r\n\r\n"
      )
      for (let i = 0; i < megabytes && !answered; i++) {
        if (!request.write(megabyte)) {
          await new Promise<void>((resolve) => {
            wake = resolve
            request.once("drain", resolve)
          })
        }
      }
      if (!answered) request.end(`\r\n--${boundary}--\r\n`)
    }
    void send()
  })
