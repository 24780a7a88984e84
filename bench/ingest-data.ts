/**
 * The input of bench/ingest.ts, the same bytes in every run: a PDF of chapters with headings and paragraphs, and a
 * website on 127.0.0.1 (robots.txt, a sitemap listing every page, pages of real HTML with a nav and an article).
 * Each page carries a code of its own, which a search for it finds only on that page.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { pdf } from "../packages/server/test/support/Pdf.js"

const WORDS = (
  "account address agent answer annual appointment archive balance basket billing booking branch budget cancel " +
  "card carrier catalogue change channel charge checkout claim client code contract courier credit customer " +
  "delivery deposit desk discount dispatch document domestic export fee form freight guarantee handling holiday " +
  "import invoice item label ledger licence limit locker manual member method monthly notice offer order package " +
  "pallet parcel partner payment period pickup plan policy portal price priority profile quote rate receipt refund " +
  "region renewal repair report request return route schedule seat service shipment signature storage subscription " +
  "supplier support surcharge tariff tax team term ticket tracking transfer trial upgrade voucher warehouse warranty " +
  "weekday weight window"
).split(" ")
const LINKING = "the a of to for and with on by from in at within after before under".split(" ")

/** mulberry32: a small seeded generator, so the documents are the same in every run */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
const pick = <A>(next: () => number, xs: ReadonlyArray<A>) => xs[Math.floor(next() * xs.length)]!
const sentence = (next: () => number) => {
  const words = Array.from({ length: 9 + Math.floor(next() * 8) }, (_, i) => pick(next, i % 3 === 2 ? LINKING : WORDS))
  const text = words.join(" ")
  return `${text[0]!.toUpperCase()}${text.slice(1)}.`
}
const titleOf = (next: () => number, n: number) =>
  Array.from({ length: n }, () => pick(next, WORDS)).map((w) => `${w[0]!.toUpperCase()}${w.slice(1)}`).join(" ")
const pad = (i: number) => String(i).padStart(4, "0")

/** One page's content: a heading, three sections of two paragraphs (sentences), the page's code in the first. */
const pageContent = (i: number, code: string) => {
  const next = random(i * 7919)
  return {
    heading: `Chapter ${i}: ${titleOf(next, 3)}`,
    sections: Array.from({ length: 3 }, (_, s) => ({
      heading: `${i}.${s + 1} ${titleOf(next, 2)}`,
      paragraphs: Array.from(
        { length: 2 },
        (_, p) => Array.from({ length: 6 }, () => sentence(next)).concat(s + p === 0 ? [`Reference code ${code}.`] : [])
      )
    }))
  }
}

/** Sentences as lines of about 90 characters, as a PDF sets a paragraph. */
const lines = (sentences: ReadonlyArray<string>) =>
  sentences.join(" ").split(" ").reduce<Array<string>>((out, word) => {
    const last = out[out.length - 1]
    if (last !== undefined && last.length + word.length < 90) out[out.length - 1] = `${last} ${word}`
    else out.push(word)
    return out
  }, [])

export const pdfCode = (i: number) => `REF-${pad(i)}-PDF`
export const buildPdf = (pages: number) =>
  pdf(
    Array.from({ length: pages }, (_, k) => {
      const c = pageContent(k + 1, pdfCode(k + 1))
      return [
        [18, c.heading] as const,
        ...c.sections.flatMap((s) => [
          [11, ""] as const,
          [14, s.heading] as const,
          ...s.paragraphs.flatMap((p) => [[11, ""] as const, ...lines(p).map((l) => [11, l] as const)])
        ])
      ]
    }),
    { title: "Carrier handbook" }
  )

export const siteCode = (i: number) => `WEB-${pad(i)}-SITE`
export const pagePath = (i: number) => `/docs/page-${pad(i)}.html`
const sitePage = (i: number, pages: number) => {
  const c = pageContent(100_000 + i, siteCode(i))
  const nav = [1, i - 1, i + 1, ...Array.from({ length: 8 }, (_, k) => 1 + ((i * 37 + k * 101) % pages))]
    .filter((n) => n >= 1 && n <= pages)
    .map((n) => `<li><a href="${pagePath(n)}">Page ${n}</a></li>`).join("")
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${c.heading} | Acme help</title>` +
    `<link rel="stylesheet" href="/site.css"></head><body><header><a href="/">Acme help center</a>` +
    `<nav aria-label="Docs"><ul>${nav}</ul></nav></header><main><article><h1>${c.heading}</h1>` +
    c.sections.map((s) => `<h2>${s.heading}</h2>${s.paragraphs.map((p) => `<p>${p.join(" ")}</p>`).join("")}`)
      .join("") +
    `</article></main><footer><p>© Acme. <a href="/contact">Contact</a> · <a href="/privacy">Privacy</a></p>` +
    `</footer></body></html>`
}

export interface Site {
  readonly origin: string
  /** bytes and requests served to each User-Agent */
  readonly served: Map<string, { bytes: number; requests: number }>
  readonly close: () => Promise<void>
}

/** The site, on 127.0.0.1 only, pages rendered once up front. */
export const startSite = async (pages: number): Promise<Site> => {
  const body = new Map<string, string>()
  for (let i = 1; i <= pages; i++) body.set(pagePath(i), sitePage(i, pages))
  body.set("/robots.txt", "User-agent: *\nDisallow: /private/\n")
  const served = new Map<string, { bytes: number; requests: number }>()
  const server = Http.createServer((req, res) => {
    const path = req.url ?? "/"
    const text = path === "/sitemap.xml"
      ? `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${
        Array.from({ length: pages }, (_, k) => `<url><loc>${origin}${pagePath(k + 1)}</loc></url>`).join("\n")
      }\n</urlset>\n`
      : body.get(path)
    const buffer = Buffer.from(text ?? "not found")
    const agent = req.headers["user-agent"] ?? "none"
    const count = served.get(agent) ?? { bytes: 0, requests: 0 }
    served.set(agent, { bytes: count.bytes + buffer.length, requests: count.requests + 1 })
    const type = path.endsWith(".xml") ? "application/xml" : path.endsWith(".txt") ? "text/plain" : "text/html"
    res.writeHead(text === undefined ? 404 : 200, { "content-type": `${type}; charset=utf-8` }).end(buffer)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    origin,
    served,
    close: () => new Promise<void>((resolve) => (server.close(() => resolve()), server.closeAllConnections()))
  }
}
