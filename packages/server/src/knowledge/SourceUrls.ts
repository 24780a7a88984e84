/**
 * The URLs of a knowledge source on the web: how a page is known (no fragment), which ones a source's include and
 * exclude globs take (see CrawlSpec in SourceFetch.ts), which a crawl skips unread, and what a sitemap lists.
 */
/** links to these are files no page text comes from: not fetched in a crawl */
export const SKIPPED =
  /\.(?:png|jpe?g|gif|webp|avif|ico|bmp|svg|css|js|mjs|json|zip|gz|tgz|rar|7z|mp3|mp4|m4a|wav|ogg|webm|mov|avi|woff2?|ttf|eot|exe|dmg|iso)$/i

const globRegex = (pattern: string) =>
  new RegExp(pattern.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*"))

/** Whether `spec`'s include and exclude patterns take `url`. */
export const taken = (spec: { readonly include: ReadonlyArray<string>; readonly exclude: ReadonlyArray<string> }) => {
  const include = spec.include.map(globRegex)
  const exclude = spec.exclude.map(globRegex)
  return (url: string) => {
    const target = new URL(url)
    const path = target.pathname + target.search
    return (include.length === 0 || include.some((r) => r.test(path))) && !exclude.some((r) => r.test(path))
  }
}

/** The URL a page is known by: absolute, without its fragment; null when it is not an http(s) URL. */
export const normalize = (url: string, base?: string) => {
  try {
    const target = new URL(url, base)
    target.hash = ""
    return target.protocol === "http:" || target.protocol === "https:" ? target.href : null
  } catch {
    return null
  }
}

const XML_ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'" }

/** A sitemap's `<loc>`s and whether it is a sitemap index (its `<loc>`s are sitemaps, not pages). */
export const sitemapOf = (xml: string) => ({
  index: /<sitemapindex[\s>]/i.test(xml),
  locs: Array.from(
    xml.matchAll(/<loc>\s*(?:<!\[CDATA\[)?\s*([^<\]]*?)\s*(?:\]\]>)?\s*<\/loc>/gi),
    (m) => m[1]!.replace(/&(amp|lt|gt|quot|apos);/g, (_, e: string) => XML_ENTITIES[e]!)
  )
})
