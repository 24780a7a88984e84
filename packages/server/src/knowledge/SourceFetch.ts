/**
 * The pages of a knowledge source on the web: one URL, the URLs a sitemap lists, or a crawl of one site. Every
 * request goes out under the outbound policy (outbound/OutboundHttp.ts: each address a host resolves to is checked
 * when connecting, redirects are followed here one by one and each target checked again), bounded in bytes and
 * time, paced per host, and named by its User-Agent. A sitemap or a crawl never leaves its site's host and honours
 * its robots.txt.
 */
import { Config, Data, Effect } from "effect"
import { gunzipSync } from "node:zlib"
import { AppConfig } from "../config/AppConfig.js"
import { decodeText } from "../files/Extract.js"
import type { SourceDocument } from "./Chunker.js"
import { documentOf, htmlPage } from "./DocumentText.js"
import { crawling } from "./SourceCrawl.js"
import { type Fetched, fetchOnce, type Policy } from "./SourceHttp.js"
import { type Robots, robotsFrom } from "./SourceRobots.js"
import { normalize, sitemapOf } from "./SourceUrls.js"

export interface FetchedPage {
  /** the page's URL after redirects */
  readonly url: string
  readonly document: SourceDocument
  /** its links, absolute, without fragments */
  readonly links: ReadonlyArray<string>
}

export class FetchFailed extends Data.TaggedError("FetchFailed")<{
  readonly url: string
  readonly reason: "private_address" | "robots" | "timeout" | "too_large" | "status" | "unreadable" | "foreign_host"
  readonly message: string
}> {}

/**
 * What to fetch. `include` and `exclude` are globs over a URL's path and query: `*` stands for any run of characters
 * and a pattern matches anywhere in them (`/docs/` matches every page under /docs/, `/blog/*.pdf` every PDF under
 * /blog/). A page is taken when it matches one of `include` (or `include` is empty) and none of `exclude`.
 */
export interface CrawlSpec {
  readonly kind: "url" | "sitemap" | "crawl"
  readonly url: string
  readonly maxPages: number
  /** links followed from the start page: 0 is the start page alone */
  readonly maxDepth: number
  readonly include: ReadonlyArray<string>
  readonly exclude: ReadonlyArray<string>
}

export const USER_AGENT = "ParleyBot/1.0 (+https://github.com/parley)"

const MAX_REDIRECTS = 5
/** RFC 9309 asks a crawler to read at least 500 KiB of a robots.txt */
const ROBOTS_MAX_BYTES = 512 * 1024
/** a sitemap index lists sitemaps; more than this many is not a site's own but a trap */
const MAX_SITEMAPS = 50
/** page URLs read from a sitemap at most (the page limit is applied after include, exclude and robots.txt) */
const MAX_LISTED = 100_000
const positive = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: "Expected a positive integer", validation: (n) => n > 0 }),
    Config.withDefault(fallback)
  )

export class SourceFetch extends Effect.Service<SourceFetch>()("@parley/server/SourceFetch", {
  dependencies: [AppConfig.Default],
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const maxBytes = yield* positive("SOURCE_PAGE_MAX_BYTES", 5 * 1024 * 1024)
    const timeoutMs = yield* positive("SOURCE_PAGE_TIMEOUT_MS", 15_000)
    const hostDelayMs = yield* Config.integer("SOURCE_HOST_DELAY_MS").pipe(
      Config.validate({ message: "Expected a number of milliseconds", validation: (n) => n >= 0 }),
      Config.withDefault(250)
    )
    const policy: Policy = { allowPrivate: config.outboundAllowPrivate, timeoutMs, userAgent: USER_AGENT }

    /** One request at a time per host, `hostDelayMs` after the previous one ended. */
    const hosts = new Map<string, { readonly lock: Effect.Semaphore; last: number }>()
    const paced = <A, E>(host: string, effect: Effect.Effect<A, E>) =>
      Effect.suspend(() => {
        let slot = hosts.get(host)
        if (slot === undefined) {
          slot = { lock: Effect.unsafeMakeSemaphore(1), last: 0 }
          hosts.set(host, slot)
        }
        const held = slot
        return held.lock.withPermits(1)(
          Effect.suspend(() => {
            const wait = held.last + hostDelayMs - Date.now()
            return wait > 0 ? Effect.sleep(wait) : Effect.void
          }).pipe(Effect.zipRight(effect), Effect.ensuring(Effect.sync(() => (held.last = Date.now()))))
        )
      })

    /**
     * GET `url`, its redirects followed and each target checked again. `site`: the one host it may lead to (a
     * redirect elsewhere is `foreign_host`); null lets a single page's redirects change host.
     */
    const get = (url: string, site: string | null, limit: number) =>
      Effect.gen(function*() {
        let current = url
        for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
          const failed = (reason: FetchFailed["reason"], message: string) => new FetchFailed({ url, reason, message })
          const target = normalize(current)
          if (target === null) return yield* failed("unreadable", `${current} is not an http or https URL`)
          const host = new URL(target).host
          if (site !== null && host !== site) {
            return yield* failed("foreign_host", `${url} leads to ${host}, another host than ${site}`)
          }
          const answer: Fetched = yield* paced(host, fetchOnce(new URL(target), { ...policy, maxBytes: limit })).pipe(
            Effect.mapError((e) => failed(e.reason, e.message))
          )
          if (answer._tag === "Redirect") {
            current = new URL(answer.location, target).href
            continue
          }
          return { ...answer, url: target }
        }
        return yield* new FetchFailed({
          url,
          reason: "status",
          message: `${url} redirects more than ${MAX_REDIRECTS} times`
        })
      })

    /** The page at `url` as a document; a status other than 2xx, or a body no text comes from, fails it. */
    const pageOn = (url: string, site: string | null) =>
      Effect.gen(function*() {
        const answer = yield* get(url, site, maxBytes)
        if (answer.status < 200 || answer.status > 299) {
          return yield* new FetchFailed({ url, reason: "status", message: `${url} answered HTTP ${answer.status}` })
        }
        const type = answer.contentType.split(";")[0]!.trim().toLowerCase()
        // a page served without a type is taken for HTML when it opens like HTML
        const sniffed = type === "" &&
          /^\s*<(?:!doctype html|html)/i.test(answer.body.subarray(0, 512).toString("latin1"))
        if (type === "text/html" || type === "application/xhtml+xml" || sniffed) {
          const charset = /charset=/i.test(answer.contentType)
            ? answer.contentType
            : `text/html; charset=${
              /<meta[^>]+charset=["']?([\w-]+)/i.exec(answer.body.subarray(0, 2048).toString("latin1"))?.[1] ?? "utf-8"
            }`
          const html = yield* Effect.try({
            try: () => htmlPage(decodeText(answer.body, charset), answer.url, answer.url),
            catch: () => new FetchFailed({ url, reason: "unreadable", message: `${url} could not be read as HTML` })
          })
          return { url: answer.url, document: html.document, links: html.links } satisfies FetchedPage
        }
        const document = yield* documentOf(answer.body, answer.contentType, answer.url).pipe(
          Effect.mapError((e) =>
            new FetchFailed({ url, reason: e.reason === "too_large" ? "too_large" : "unreadable", message: e.message })
          )
        )
        return { url: answer.url, document, links: [] } satisfies FetchedPage
      })

    /**
     * The robots.txt rules of `origin`, read once per source run. No file (4xx) allows everything; a server error or
     * no answer disallows everything (RFC 9309 2.3.1.4: the site may be down, not open).
     */
    const robotsOf = (origin: string) =>
      get(`${origin}/robots.txt`, new URL(origin).host, ROBOTS_MAX_BYTES).pipe(
        Effect.map((answer): Robots =>
          answer.status >= 200 && answer.status <= 299
            ? robotsFrom(answer.body.toString("utf8"), "ParleyBot")
            : answer.status < 500
            ? robotsFrom("", "ParleyBot")
            : robotsFrom("User-agent: *\nDisallow: /", "ParleyBot")
        ),
        Effect.catchAll((e) =>
          Effect.succeed(robotsFrom(
            e.reason === "timeout" || e.reason === "unreadable" ? "User-agent: *\nDisallow: /" : "",
            "ParleyBot"
          ))
        )
      )

    const sitemapUrls = (spec: CrawlSpec) =>
      Effect.gen(function*() {
        const site = new URL(spec.url).host
        const pages: Array<string> = []
        const skipped: Array<FetchFailed> = []
        const readSitemap = (url: string) =>
          get(url, site, maxBytes).pipe(
            Effect.flatMap((answer) =>
              answer.status < 200 || answer.status > 299
                ? new FetchFailed({ url, reason: "status", message: `${url} answered HTTP ${answer.status}` })
                : Effect.try({
                  // a .xml.gz sitemap, inflated to the page limit at most
                  try: () =>
                    sitemapOf(
                      (answer.body[0] === 0x1f && answer.body[1] === 0x8b
                        ? gunzipSync(answer.body, { maxOutputLength: maxBytes })
                        : answer.body).toString("utf8")
                    ),
                  catch: () =>
                    new FetchFailed({
                      url,
                      reason: "too_large",
                      message: `${url} is a gzip file that is corrupt or inflates past ${maxBytes} bytes`
                    })
                })
            )
          )
        const first = yield* readSitemap(spec.url)
        const queue = first.index ? [...first.locs] : []
        if (!first.index) pages.push(...first.locs)
        for (let read = 0; queue.length > 0 && read < MAX_SITEMAPS && pages.length < MAX_LISTED; read++) {
          const next = yield* Effect.either(readSitemap(normalize(queue.shift()!, spec.url) ?? spec.url))
          if (next._tag === "Left") skipped.push(next.left)
          else if (next.right.index) queue.push(...next.right.locs)
          else pages.push(...next.right.locs)
        }
        return { site, pages, skipped }
      })

    const page = Effect.fn("SourceFetch.page")(function*(url: string) {
      yield* Effect.annotateCurrentSpan({ url })
      return yield* pageOn(url, null)
    })

    return { page, ...crawling({ page, pageOn, robotsOf, sitemapUrls }) }
  })
}) {}
