/**
 * The run of a web source over the fetching of SourceFetch.ts: where it starts (its URL, a crawl's start page, a
 * sitemap's pages), what one page gives (its document, the links to follow, or why it was refused), and the pages of a
 * run on a frontier in memory. The durable sync keeps its frontier in the database instead (SourceSteps.ts) and
 * visits its pages with the same `visit`, so both keep to the same rules.
 */
import { Effect, Option, Stream } from "effect"
import { type CrawlSpec, type FetchedPage, FetchFailed } from "./SourceFetch.js"
import type { Robots } from "./SourceRobots.js"
import { normalize, SKIPPED, taken } from "./SourceUrls.js"

/** A page to read and how many links away from the start it was found. */
export interface FrontierEntry {
  readonly url: string
  readonly depth: number
}

/** Where a run starts: the URLs to read first, the sitemaps that could not be read, and the run's host if known. */
export interface RunStart {
  readonly entries: ReadonlyArray<string>
  readonly skipped: ReadonlyArray<FetchFailed>
  readonly site: string | null
}

/** What a run learns as it goes, kept in memory: its host (from the start page) and each origin's robots.txt. */
export interface RunState {
  site: string | null
  readonly robots: Map<string, Robots>
}

/** A page read (`take`: its chunks are wanted; `follow`: the links to read next), or why not. */
export type Visit =
  | FetchedPage & { readonly _tag: "Page"; readonly take: boolean; readonly follow: ReadonlyArray<string> }
  | { readonly _tag: "Failed"; readonly failure: FetchFailed; readonly fetched: boolean }

/** What a run needs of SourceFetch.ts. */
export interface Fetching {
  /** one page anywhere (its redirects may change host) */
  readonly page: (url: string) => Effect.Effect<FetchedPage, FetchFailed>
  /** one page on `site` (null: any host) */
  readonly pageOn: (url: string, site: string | null) => Effect.Effect<FetchedPage, FetchFailed>
  readonly robotsOf: (origin: string) => Effect.Effect<Robots>
  readonly sitemapUrls: (
    spec: CrawlSpec
  ) => Effect.Effect<
    { readonly site: string; readonly pages: ReadonlyArray<string>; readonly skipped: ReadonlyArray<FetchFailed> },
    FetchFailed
  >
}

export const crawling = ({ page, pageOn, robotsOf, sitemapUrls }: Fetching) => {
  /**
   * Where a run of `spec` starts: its one URL, the crawl's start page, or the pages a sitemap lists (include, exclude
   * and duplicates applied; a sitemap of an index that could not be read is a failure value). Fails when the run
   * cannot start at all.
   */
  const startOf = (spec: CrawlSpec) =>
    Effect.gen(function*() {
      if (spec.kind !== "sitemap") {
        const url = normalize(spec.url)
        if (url === null) {
          return yield* new FetchFailed({
            url: spec.url,
            reason: "unreadable",
            message: `${spec.url} is not an http or https URL`
          })
        }
        return { entries: [url], skipped: [], site: null } satisfies RunStart
      }
      const { pages, site, skipped } = yield* sitemapUrls(spec)
      const filter = taken(spec)
      const seen = new Set<string>()
      const entries = pages.flatMap((loc) => {
        const url = normalize(loc, spec.url)
        if (url === null || seen.has(url) || !filter(url)) return []
        seen.add(url)
        return [url]
      })
      return { entries, skipped, site } satisfies RunStart
    })

  /**
   * One page of a run: fetched, or why not (a refusal of robots.txt or of another host is not `fetched`: it does not
   * count against the page limit). A crawl's page brings the links to follow from it (same host, patterns, depth);
   * its start page fixes the run's host. Fails only when the whole run must: its one URL or its start page failing.
   */
  const visit = (spec: CrawlSpec, entry: FrontierEntry, state: RunState) =>
    Effect.gen(function*() {
      const isStart = spec.kind === "url" || (spec.kind === "crawl" && state.site === null)
      const failed = (failure: FetchFailed, fetched: boolean) =>
        isStart ? Effect.fail(failure) : Effect.succeed<Visit>({ _tag: "Failed", failure, fetched })
      if (spec.kind === "url") return { _tag: "Page", ...(yield* page(entry.url)), take: true, follow: [] } as Visit
      if (state.site !== null && new URL(entry.url).host !== state.site) {
        const message = `${entry.url} is not on the sitemap's host ${state.site}`
        return yield* failed(new FetchFailed({ url: entry.url, reason: "foreign_host", message }), false)
      }
      const origin = new URL(entry.url).origin
      const robots = state.robots.get(origin) ?? (yield* robotsOf(origin))
      state.robots.set(origin, robots)
      if (!robots.allows(entry.url)) {
        const message = `${entry.url} is disallowed by robots.txt`
        return yield* failed(new FetchFailed({ url: entry.url, reason: "robots", message }), false)
      }
      const result = yield* Effect.either(pageOn(entry.url, state.site))
      if (result._tag === "Left") return yield* failed(result.left, true)
      const fetched = result.right
      if (isStart) state.site = new URL(fetched.url).host
      const filter = taken(spec)
      const follow = spec.kind !== "crawl" || entry.depth >= spec.maxDepth ? [] : fetched.links.flatMap((link) => {
        const target = normalize(link)
        if (target === null || new URL(target).host !== state.site) return []
        return SKIPPED.test(new URL(target).pathname) || !filter(target) ? [] : [target]
      })
      // the start page is read for its links even when the patterns do not take it
      return { _tag: "Page", ...fetched, take: !isStart || filter(fetched.url), follow } as Visit
    })

  /**
   * The pages of `spec`, one at a time, on a frontier in memory (the durable sync keeps its frontier in the database:
   * SourceSteps.ts). A page that fails is a `FetchFailed` value; the stream fails only when its start (the URL, the
   * sitemap, the crawl's first page) does. A single URL ignores robots.txt (someone asked for that page, as a
   * browser would); a sitemap and a crawl honour it.
   */
  const pages = (spec: CrawlSpec): Stream.Stream<FetchedPage | FetchFailed, FetchFailed> =>
    Stream.unwrap(Effect.gen(function*() {
      const start = yield* startOf(spec)
      const state: RunState = { site: start.site, robots: new Map() }
      const queue: Array<FrontierEntry> = start.entries.map((url) => ({ url, depth: 0 }))
      const seen = new Set(start.entries)
      let fetched = 0
      const next: Effect.Effect<FetchedPage | FetchFailed, Option.Option<FetchFailed>> = Effect.gen(function*() {
        while (queue.length > 0 && fetched < spec.maxPages) {
          const entry = queue.shift()!
          const visited = yield* Effect.mapError(visit(spec, entry, state), Option.some)
          if (visited._tag === "Failed") {
            if (visited.fetched) fetched++
            return visited.failure
          }
          fetched++
          seen.add(visited.url)
          for (const link of visited.follow) {
            if (seen.has(link)) continue
            seen.add(link)
            queue.push({ url: link, depth: entry.depth + 1 })
          }
          if (visited.take) return { url: visited.url, document: visited.document, links: visited.links }
        }
        return yield* Effect.fail(Option.none())
      })
      return Stream.concat(Stream.fromIterable(start.skipped), Stream.repeatEffectOption(next))
    })).pipe(Stream.withSpan("SourceFetch.pages", { attributes: { kind: spec.kind, url: spec.url } }))

  return { startOf, visit, pages }
}
