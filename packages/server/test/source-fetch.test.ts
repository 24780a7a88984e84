/**
 * SourceFetch (knowledge/SourceFetch.ts) against a local site (support/TestSite.ts) and a second server standing for
 * another host: a page as Markdown with its links, a crawl and a sitemap that keep to their host and honour robots.txt,
 * include and exclude patterns, depth and page limits, and each refusal: a private address (directly, or behind a
 * redirect), a page that never finishes, 10 MB of one line, a 404. No database.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, ConfigProvider, Effect, Layer, Stream } from "effect"
import { afterAll, beforeAll } from "vitest"
import { chunk, DEFAULT_CHUNK_OPTIONS } from "../src/knowledge/Chunker.js"
import { type CrawlSpec, type FetchedPage, FetchFailed, SourceFetch, USER_AGENT } from "../src/knowledge/SourceFetch.js"
import { startTestSite, type TestSite } from "./support/TestSite.js"

let site: TestSite
beforeAll(async () => {
  site = await startTestSite()
})
afterAll(() => site.close())

/** SourceFetch on exactly this configuration (nothing read from the process environment). */
const withFetch = <A, E>(env: Record<string, string>, f: (fetch: SourceFetch) => Effect.Effect<A, E>) => {
  const config = { OUTBOUND_ALLOW_PRIVATE: "true", SOURCE_PAGE_TIMEOUT_MS: "400", SOURCE_HOST_DELAY_MS: "0", ...env }
  const layer = SourceFetch.Default.pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(config))))),
    Layer.orDie
  )
  return Effect.provide(Effect.flatMap(SourceFetch, f), layer)
}

const spec = (kind: CrawlSpec["kind"], path: string, more: Partial<CrawlSpec> = {}): CrawlSpec => ({
  kind,
  url: `${site.origin}${path}`,
  maxPages: 50,
  maxDepth: 5,
  include: [],
  exclude: [],
  ...more
})

/** What a stream gave, as `OK path` and `reason path` lines, and the paths the site was asked for meanwhile. */
const run = (s: CrawlSpec, env: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const from = site.requests.length
    const otherFrom = site.other.requests.length
    const items = yield* withFetch(env, (f) => Stream.runCollect(f.pages(s)))
    const path = (url: string) => url.replace(site.origin, "")
    return {
      items: Chunk.toArray(items),
      lines: Chunk.toArray(items).map((i: FetchedPage | FetchFailed) =>
        i instanceof FetchFailed ? `${i.reason} ${path(i.url)}` : `OK ${path(i.url)}`
      ),
      asked: site.requests.slice(from).map((r) => r.path),
      otherAsked: site.other.requests.length - otherFrom
    }
  })

describe("SourceFetch", () => {
  it.live("reads a page's article as Markdown with its links, and names itself", () =>
    Effect.gen(function*() {
      const from = site.requests.length
      const page = yield* withFetch({}, (f) => f.page(`${site.origin}/pricing`))
      expect(page.url).toBe(`${site.origin}/pricing`)
      expect(page.document.title).toBe("Pricing")
      expect(page.document.pages).toEqual([{
        page: null,
        markdown: "Acme has two plans; both include support on weekdays.\n\n## Plans\n\n### Annual plan\n\n" +
          "The annual plan costs 990 euros a year, paid once.\n\n### Monthly plan\n\n" +
          "The monthly plan costs 99 euros a month and can be cancelled any time."
      }])
      expect(chunk(page.document, DEFAULT_CHUNK_OPTIONS).map((c) => c.section)).toEqual([
        null,
        "Plans > Annual plan",
        "Plans > Monthly plan"
      ])
      expect(site.requests[from]!.userAgent).toBe(USER_AGENT)
      const home = yield* withFetch({}, (f) => f.page(`${site.origin}/redirect-home`))
      expect(home.url).toBe(`${site.origin}/`)
      expect(home.links).toEqual([
        `${site.origin}/`,
        `${site.origin}/pricing`,
        `${site.origin}/docs/setup`,
        `${site.origin}/private/secret`,
        `${site.origin}/notes.md`,
        `${site.other.origin}/page`
      ])
      const notes = yield* withFetch({}, (f) => f.page(`${site.origin}/notes.md`))
      expect(notes.document).toEqual({
        title: "Notes",
        pages: [{ page: null, markdown: "# Notes\n\n## Support hours\n\nWeekdays from 9 to 17." }]
      })
    }))

  it.live("crawls breadth-first on its host only, honours robots.txt and the depth and page limits", () =>
    Effect.gen(function*() {
      const all = yield* run(spec("crawl", "/"))
      expect(all.lines).toEqual([
        "OK /",
        "OK /pricing",
        "OK /docs/setup",
        "robots /private/secret",
        "OK /notes.md",
        "OK /docs/advanced"
      ])
      expect(all.asked.filter((p) => p === "/robots.txt")).toHaveLength(1)
      expect(all.asked).not.toContain("/private/secret")
      expect(all.otherAsked).toBe(0)
      const shallow = yield* run(spec("crawl", "/", { maxDepth: 1, maxPages: 3 }))
      expect(shallow.lines).toEqual(["OK /", "OK /pricing", "OK /docs/setup"])
      const docs = yield* run(spec("crawl", "/", { include: ["/docs/"], exclude: ["/advan*"] }))
      // the start page is read for its links, and given only when the patterns take it
      expect(docs.lines).toEqual(["OK /docs/setup"])
      expect(docs.asked).toEqual(["/robots.txt", "/", "/docs/setup"])
    }))

  it.live("reads a sitemap index's sitemaps and their pages, never another host's nor a disallowed one", () =>
    Effect.gen(function*() {
      const result = yield* run(spec("sitemap", "/sitemap.xml"))
      expect(result.lines).toEqual([
        "OK /",
        "OK /pricing",
        "OK /docs/setup",
        "robots /private/secret",
        `foreign_host ${site.other.origin}/page`
      ])
      expect(result.otherAsked).toBe(0)
      expect(result.asked).not.toContain("/private/secret")
      const limited = yield* run(spec("sitemap", "/sitemap.xml", { maxPages: 2 }))
      expect(limited.lines).toEqual(["OK /", "OK /pricing"])
    }))

  it.live("fails the stream when its start fails, and gives a page that changed as it is now", () =>
    Effect.gen(function*() {
      const missing = yield* Effect.flip(withFetch({}, (f) => Stream.runCollect(f.pages(spec("crawl", "/missing")))))
      expect([missing.reason, missing.message]).toEqual(["status", `${site.origin}/missing answered HTTP 404`])
      const once = yield* run(spec("url", "/changing"))
      site.setPage(
        "/changing",
        "<html><body><article><h1>Changing</h1><p>Version 2 of this page.</p></article></body></html>"
      )
      const twice = yield* run(spec("url", "/changing"))
      const text = (r: typeof once) => (r.items[0] as FetchedPage).document.pages[0]!.markdown
      expect(text(once)).toContain("Version 1 of this page.")
      expect(text(twice)).toContain("Version 2 of this page.")
    }))

  it.live("refuses a private address, directly or behind a redirect", () =>
    Effect.gen(function*() {
      const redirected = yield* Effect.flip(withFetch({}, (f) => f.page(`${site.origin}/redirect-private`)))
      expect(redirected.reason).toBe("private_address")
      expect(redirected.message).toContain("169.254.169.254")
      const from = site.requests.length
      const loopback = yield* Effect.flip(
        withFetch({ OUTBOUND_ALLOW_PRIVATE: "false" }, (f) => Stream.runCollect(f.pages(spec("crawl", "/"))))
      )
      expect(loopback.reason).toBe("private_address")
      expect(site.requests.length).toBe(from)
    }))

  it.live("gives up a page that never finishes, one over the byte limit and one answering 404", () =>
    Effect.gen(function*() {
      const started = Date.now()
      const hang = yield* Effect.flip(withFetch({}, (f) => f.page(`${site.origin}/hang`)))
      expect(hang.reason).toBe("timeout")
      expect(Date.now() - started).toBeGreaterThanOrEqual(400)
      const huge = yield* Effect.flip(withFetch({}, (f) => f.page(`${site.origin}/huge`)))
      expect([huge.reason, huge.message]).toEqual(["too_large", `${site.origin}/huge is larger than 5242880 bytes`])
      const missing = yield* Effect.flip(withFetch({}, (f) => f.page(`${site.origin}/missing`)))
      expect(missing.reason).toBe("status")
    }))

  it.live("paces two requests to one host", () =>
    Effect.gen(function*() {
      const from = site.requests.length
      yield* withFetch({ SOURCE_HOST_DELAY_MS: "300" }, (f) =>
        Effect.all([f.page(`${site.origin}/pricing`), f.page(`${site.origin}/notes.md`)], { concurrency: 2 }))
      const [first, second] = site.requests.slice(from)
      expect(second!.at - first!.at).toBeGreaterThanOrEqual(300)
    }))
})
