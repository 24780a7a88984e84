/**
 * A small website on 127.0.0.1 for knowledge-source tests (SourceFetch, the sources resource and its runner), with a
 * second server on another port standing for another host, which a crawl must never reach.
 *
 * ```ts
 * const site = await startTestSite()
 * site.origin                          // "http://127.0.0.1:PORT"
 * site.setPage("/changing", "<html>…") // adds or replaces a page (text/html unless a type is given)
 * site.requests                        // every path asked, in order ({ path, userAgent, at, end })
 * site.other.origin, site.other.requests
 * await site.close()
 * ```
 * Pages (SourceFetch needs OUTBOUND_ALLOW_PRIVATE=true to reach 127.0.0.1):
 * - `/robots.txt`: `User-agent: *` / `Disallow: /private/`
 * - `/sitemap.xml`: a sitemap index naming `/sitemap-pages.xml`, which lists `/`, `/pricing`, `/docs/setup`,
 *   `/private/secret` (disallowed) and a page of the other host
 * - `/`: "Acme help center", links to `/pricing`, `/docs/setup`, `/private/secret`, `/notes.md` and the other host;
 *   `/pricing`: `## Plans` > `### Annual plan` (990 euros a year) and `### Monthly plan`; `/docs/setup`: links to
 *   `/docs/advanced` (depth 2); `/notes.md`: Markdown; `/changing`: "Version 1" (replace it with setPage)
 * - traps, linked from nowhere: `/redirect-private` (302 to http://169.254.169.254/latest/meta-data/), `/hang`
 *   (headers and a first line, then nothing, never ends), `/huge` (10 MB of one line, streamed), `/missing` (404),
 *   `/redirect-home` (302 to `/`), `/redirect-other` (302 to the other host)
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

export interface SiteRequest {
  readonly path: string
  readonly userAgent: string | undefined
  /** when the request arrived and when its answer ended (ms since the epoch; end 0 while unfinished) */
  readonly at: number
  end: number
}

export interface TestSite {
  readonly origin: string
  readonly setPage: (path: string, html: string, contentType?: string) => void
  readonly requests: ReadonlyArray<SiteRequest>
  readonly other: { readonly origin: string; readonly requests: ReadonlyArray<SiteRequest> }
  readonly close: () => Promise<void>
}

const html = (title: string, body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>` +
  `<nav><a href="/">Home</a></nav><main><article>${body}</article></main><footer>© Acme</footer></body></html>`

const serve = async (handle: (path: string, res: Http.ServerResponse) => void) => {
  const requests: Array<SiteRequest> = []
  const open = new Set<Http.ServerResponse>()
  const server = Http.createServer((req, res) => {
    const entry: SiteRequest = { path: req.url ?? "/", userAgent: req.headers["user-agent"], at: Date.now(), end: 0 }
    requests.push(entry)
    open.add(res)
    res.on("close", () => {
      entry.end = Date.now()
      open.delete(res)
    })
    handle(entry.path, res)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const close = () =>
    new Promise<void>((resolve) => {
      for (const res of open) res.destroy()
      server.close(() => resolve())
      server.closeAllConnections()
    })
  return { origin, requests, close }
}

export const startTestSite = async (): Promise<TestSite> => {
  const other = await serve((_path, res) => {
    res.writeHead(200, { "content-type": "text/html" }).end(html("Elsewhere", "<p>Another host's page.</p>"))
  })
  const pages = new Map<string, { body: string; type: string }>()
  const setPage = (path: string, body: string, contentType = "text/html; charset=utf-8") =>
    void pages.set(path, { body, type: contentType })

  const site = await serve((path, res) => {
    const page = pages.get(path)
    if (page !== undefined) return res.writeHead(200, { "content-type": page.type }).end(page.body)
    switch (path) {
      case "/redirect-private":
        return res.writeHead(302, { location: "http://169.254.169.254/latest/meta-data/" }).end()
      case "/redirect-home":
        return res.writeHead(302, { location: "/" }).end()
      case "/redirect-other":
        return res.writeHead(302, { location: `${other.origin}/page` }).end()
      case "/hang":
        // the first bytes come at once, the rest never
        return res.writeHead(200, { "content-type": "text/html" }).write("<html><body><p>Loading")
      case "/huge": {
        res.writeHead(200, { "content-type": "text/html" })
        const block = Buffer.alloc(64 * 1024, "a")
        let sent = 0
        const pump = () => {
          while (sent < 10 * 1024 * 1024) {
            sent += block.length
            if (!res.write(block)) return void res.once("drain", pump)
          }
          res.end()
        }
        return pump()
      }
      default:
        return res.writeHead(404, { "content-type": "text/plain" }).end("not found")
    }
  })

  const o = site.origin
  setPage("/robots.txt", "User-agent: *\nDisallow: /private/\n", "text/plain")
  setPage(
    "/sitemap.xml",
    `<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
      `<sitemap><loc>${o}/sitemap-pages.xml</loc></sitemap></sitemapindex>`,
    "application/xml"
  )
  setPage(
    "/sitemap-pages.xml",
    `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
      ["/", "/pricing", "/docs/setup", "/private/secret"].map((p) => `<url><loc>${o}${p}</loc></url>`).join("") +
      `<url><loc>${other.origin}/page</loc></url></urlset>`,
    "application/xml"
  )
  setPage(
    "/",
    html(
      "Acme help center",
      `<h1>Acme help center</h1><p>Everything about Acme's service: plans, setup and support hours.</p>` +
        `<ul><li><a href="/pricing">Pricing</a></li><li><a href="docs/setup#install">Setup</a></li>` +
        `<li><a href="/private/secret">Staff only</a></li><li><a href="/notes.md">Notes</a></li>` +
        `<li><a href="${other.origin}/page">Partner site</a></li></ul>`
    )
  )
  setPage(
    "/pricing",
    html(
      "Pricing",
      `<h1>Pricing</h1><p>Acme has two plans; both include support on weekdays.</p><h2>Plans</h2>` +
        `<h3>Annual plan</h3><p>The annual plan costs 990 euros a year, paid once.</p>` +
        `<h3>Monthly plan</h3><p>The monthly plan costs 99 euros a month and can be cancelled any time.</p>`
    )
  )
  setPage(
    "/docs/setup",
    html(
      "Setup",
      `<h1>Setup</h1><p>Install the Acme agent, then sign in with your account e-mail.</p>` +
        `<p>See <a href="/docs/advanced">advanced setup</a> for proxies.</p>`
    )
  )
  setPage("/docs/advanced", html("Advanced setup", "<h1>Advanced setup</h1><p>Set HTTPS_PROXY before starting.</p>"))
  setPage("/private/secret", html("Secret", "<p>Staff door code 4321.</p>"))
  setPage("/notes.md", "# Notes\n\n## Support hours\n\nWeekdays from 9 to 17.\n", "text/markdown; charset=utf-8")
  setPage("/changing", html("Changing", "<h1>Changing</h1><p>Version 1 of this page.</p>"))

  return {
    origin: o,
    setPage,
    requests: site.requests,
    other: { origin: other.origin, requests: other.requests },
    close: () => Promise.all([site.close(), other.close()]).then(() => undefined)
  }
}
