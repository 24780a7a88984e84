/**
 * Knowledge sources from upload to searchable (issue 41), through the REST API only, as a user runs it:
 * Run: npx tsx bench/ingest.ts [--quick]   (--quick: a 50-page PDF and a 100-page site)
 *   env BENCH_PDF_PAGES, BENCH_SITE_PAGES: other sizes (default 500 and 1,000).
 *
 * 1. A PDF the bench writes (ingest-data.ts, with test/support/Pdf.ts): each page a chapter heading, three section headings and two
 *    paragraphs under each, one line carrying a code of its own (`REF-0437-PDF`).
 * 2. A site the bench serves on 127.0.0.1: a sitemap listing every page, a robots.txt, and pages of real HTML (a nav
 *    of links, an article with h1, h2s and paragraphs, a footer), one code of their own each (`WEB-0789-SITE`).
 * For each, a fresh `parley serve` (embedded database, one process, support.ts) with KNOWLEDGE_SOURCES_POLL_MS=100
 * (a new source is claimed within 0.1 s, not 1 s) and SOURCE_HOST_DELAY_MS=0 (the site is local: the default 250 ms
 * pace between a host's pages would be most of the time measured). The demo workspace gets training credits (one a
 * chunk embedded) and a table with the document columns; then the clock runs from the POST of the source until
 * GET .../sources/{id} says `ready` and a search for the last page's code finds it. The embedder is the fresh
 * server's default, `EMBEDDING_PROVIDER=local` (256-dimension hashing, in-process, no network).
 *
 * Figures: pages a second, MB a second (the PDF's bytes; the HTML bytes the site served), the server's CPU per page
 * (/proc/<pid>/stat: HTTP, extraction, chunking, embedding and the embedded database, all in that one process), its
 * peak RSS during the ingest (VmHWM, reset when the source is added) and the points made. Each beside work the bench
 * does in its own process on the same input, as ratios: the floor (unpdf's bare `extractText` of the whole PDF, as
 * files/Extract.ts calls it; a bare sequential GET of every page) and the server's own steps without the database
 * (DocumentText.ts's reading, Chunker.ts, the local embedding of each chunk).
 */
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { extractText } from "../packages/server/src/files/Extract.js"
import { chunk, DEFAULT_CHUNK_OPTIONS, type SourceDocument } from "../packages/server/src/knowledge/Chunker.js"
import { documentOf, htmlPage } from "../packages/server/src/knowledge/DocumentText.js"
import { localEmbedding } from "../packages/server/src/knowledge/Embedder.js"
import { buildPdf, pagePath, pdfCode, siteCode, startSite } from "./ingest-data.js"
import { statementCount } from "./statements.js"
import { cpuMs, send, type Server, startServer } from "./support.js"

const quick = process.argv.includes("--quick")
const PDF_PAGES = Number(process.env.BENCH_PDF_PAGES ?? (quick ? 50 : 500))
const SITE_PAGES = Number(process.env.BENCH_SITE_PAGES ?? (quick ? 100 : 1000))
const root = Path.resolve(import.meta.dirname, "..")
const SERVER_ENV = { KNOWLEDGE_SOURCES_POLL_MS: "100", SOURCE_HOST_DELAY_MS: "0", OUTBOUND_ALLOW_PRIVATE: "true" }

// ---------------------------------------------------------------------------------------------------
// measuring

const quantile = (xs: ReadonlyArray<number>, q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? 0
const cpuSelf = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}
const vm = (pid: number, field: "VmRSS" | "VmHWM") =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(Fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024

interface Timed {
  readonly seconds: number
  readonly cpuMs: number
}

/** `work` in this process, twice (the first run loads and compiles the libraries): the second run's time and CPU. */
const inProcess = async (work: () => Promise<unknown>): Promise<Timed> => {
  await work()
  const t = performance.now()
  const c = cpuSelf()
  await work()
  return { seconds: (performance.now() - t) / 1000, cpuMs: cpuSelf() - c }
}

/** What the server does to a document apart from its database: chunks, and a local embedding of each. */
const chunkAndEmbed = (doc: SourceDocument) => {
  const chunks = chunk(doc, DEFAULT_CHUNK_OPTIONS)
  for (const c of chunks) localEmbedding(c.text)
  return chunks.length
}

/** GET /health every 100 ms until stopped; the slowest answer. */
const probeHealth = (server: Server) => {
  let running = true
  let slowest = 0
  const loop = (async () => {
    while (running) {
      const t = performance.now()
      await send({ method: "GET", url: `${server.api}/health` }).catch(() => undefined)
      slowest = Math.max(slowest, performance.now() - t)
      await new Promise((r) => setTimeout(r, 100))
    }
  })()
  return {
    stop: async () => {
      running = false
      await loop
      return slowest
    }
  }
}

const cli = (dataDir: string, args: ReadonlyArray<string>) =>
  new Promise<void>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", Path.join(root, "packages/server/src/cli/main.ts"), ...args],
      { cwd: root, env: { ...process.env, PARLEY_DATA_DIR: dataDir, LOG_LEVEL: "Warning" } }
    )
    let output = ""
    child.stdout.on("data", (c: Buffer) => (output += c.toString()))
    child.stderr.on("data", (c: Buffer) => (output += c.toString()))
    child.on("exit", (code) => code === 0 ? resolve() : reject(new Error(`parley ${args.join(" ")}:\n${output}`)))
  })

/** A request of the bench; a GET or a search is sent again when a kept-alive connection was closed under it. */
const call = async (server: Server, method: string, path: string, body?: unknown) => {
  const once = () =>
    send({
      method,
      url: `${server.api}${path}`,
      headers: { authorization: `Bearer ${server.demo.token}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
  const again = method === "GET" || path.endsWith("/search")
  const r = await once().catch((e: NodeJS.ErrnoException) => {
    if (again && e.code === "ECONNRESET") return once()
    throw e
  })
  if (r.status < 200 || r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.body.slice(0, 500)}`)
  return JSON.parse(r.body).data
}

interface Ingested {
  readonly ready: number
  readonly searchable: number
  readonly cpuMs: number
  readonly rssStartMiB: number
  readonly peakRssMiB: number
  readonly points: number
  readonly pages: number
  /** how long GET .../sources/{id} took while the source synced: the API's answer under the ingest */
  readonly pollMs: { readonly p50: number; readonly max: number }
  /** the slowest GET /health (no database) meanwhile: how long the server's event loop was held at most */
  readonly healthMs: number
  /** SQL statements the server ran meanwhile (parley_db_statements_total), the bench's polls included */
  readonly statements: number
}

/**
 * A fresh server; the source added by `add` (its answer's data is the source) to a new document table; the clock
 * stopped once the source is `ready` and a search for `code` has it among its hits.
 */
const ingest = async (
  add: (server: Server, table: number) => Promise<{ id: number }>,
  code: string
): Promise<Ingested> => {
  const server = await startServer(SERVER_ENV)
  try {
    const pid = server.processes[0]!.pid
    await cli(server.dataDir, [
      "workspace",
      "set",
      "--workspace-id",
      String(server.demo.workspace_id),
      "--training-credits",
      "1000000"
    ])
    const table = await call(server, "POST", "/api/user/knowledge-tables", {
      name: "Bench documents",
      columns: [
        { name: "text", data_type: "string", order: 1, is_searchable: true },
        { name: "title", data_type: "string", order: 2 },
        { name: "section", data_type: "string", order: 3 },
        { name: "source", data_type: "string", order: 4, is_filterable: true },
        { name: "page", data_type: "number", order: 5 }
      ]
    })
    const rssStartMiB = vm(pid, "VmRSS")
    // the peak from here on, not the start-up's: "5" resets VmHWM to the current RSS (Linux 4.0+, proc(5))
    Fs.writeFileSync(`/proc/${pid}/clear_refs`, "5")
    const statements0 = await statementCount(server)
    const health = probeHealth(server)
    const cpu0 = cpuMs(pid)
    const t0 = performance.now()
    const source = await add(server, table.id)
    const path = `/api/user/knowledge-tables/${table.id}/sources/${source.id}`
    const deadline = Date.now() + 30 * 60_000
    let state: { status: string; error: string | null; points: number; pages: number }
    let shown = 0
    const latencies: Array<number> = []
    for (;;) {
      const asked = performance.now()
      state = await call(server, "GET", path)
      latencies.push(performance.now() - asked)
      if (state.status === "failed") throw new Error(`the source failed: ${state.error}`)
      if (state.status === "ready") break
      if (performance.now() - shown > 10_000) {
        shown = performance.now()
        const progress = JSON.stringify((state as { progress?: unknown }).progress ?? null)
        process.stderr.write(`  ${((shown - t0) / 1000).toFixed(0)} s: ${state.status} ${progress}\n`)
      }
      if (Date.now() > deadline) throw new Error("the source was not ready within 30 minutes")
      await new Promise((r) => setTimeout(r, 200))
    }
    const ready = (performance.now() - t0) / 1000
    for (;;) {
      const found = await call(server, "POST", `/api/user/knowledge-tables/${table.id}/search`, {
        query: code,
        limit: 5
      })
      if ((found.results as Array<{ data: { text?: string } }>).some((h) => h.data.text?.includes(code))) break
      if (Date.now() > deadline) throw new Error(`a search for ${code} found nothing`)
      await new Promise((r) => setTimeout(r, 100))
    }
    const searchable = (performance.now() - t0) / 1000
    const cpu = cpuMs(pid) - cpu0
    const healthMs = await health.stop()
    return {
      ready,
      searchable,
      cpuMs: cpu,
      rssStartMiB,
      peakRssMiB: vm(pid, "VmHWM"),
      points: state.points,
      pages: state.pages,
      pollMs: { p50: quantile(latencies, 0.5), max: Math.max(...latencies) },
      healthMs,
      statements: (await statementCount(server)) - statements0
    }
  } catch (e) {
    process.stderr.write(`the server's output:\n${server.processes[0]!.output().slice(-5000)}\n`)
    throw e
  } finally {
    await server.stop()
  }
}

// ---------------------------------------------------------------------------------------------------
// the runs

const MB = 1024 * 1024
const f1 = (x: number) => x.toFixed(1)
const f2 = (x: number) => x.toFixed(2)
const rows: Array<string> = []
const ratios: Array<string> = []
const report = (name: string, bytes: number, pages: number, r: Ingested) => {
  rows.push(
    `| ${name} | ${pages} | ${f2(bytes / MB)} | ${f2(r.ready)} | ${f2(r.searchable)} | ${f1(pages / r.searchable)} | ${
      f2(bytes / MB / r.searchable)
    } | ${f1(r.cpuMs / pages)} | ${r.rssStartMiB.toFixed(0)} / ${r.peakRssMiB.toFixed(0)} | ${r.points} | ${
      r.pollMs.p50.toFixed(0)
    } / ${r.pollMs.max.toFixed(0)} | ${r.healthMs.toFixed(0)} | ${(r.statements / pages).toFixed(1)} |`
  )
}
const against = (name: string, what: string, pages: number, server: Ingested, other: Timed) =>
  ratios.push(
    `| ${name} | ${what} | ${f2(other.seconds)} | ${f1(other.cpuMs / pages)} | ${
      f1(server.searchable / other.seconds)
    } | ${f1(server.cpuMs / other.cpuMs)} |`
  )

console.log(`bench/ingest.ts: a ${PDF_PAGES}-page PDF and a ${SITE_PAGES}-page local site, node ${process.version}`)

// the PDF
const file = buildPdf(PDF_PAGES)
// files/Extract.ts reads a PDF the turn is given: unpdf's getDocumentProxy and extractText, nothing else
const pdfFloor = await inProcess(() =>
  Effect.runPromise(extractText(file, "application/pdf", "handbook.pdf", Infinity, { maxBytes: Infinity }))
)
let pdfChunks = 0
const pdfSteps = await inProcess(async () => {
  const doc = await Effect.runPromise(documentOf(file, "application/pdf", "handbook.pdf"))
  pdfChunks = chunkAndEmbed(doc)
})
const pdfRun = await ingest(async (server, table) => {
  const form = new FormData()
  form.append("file", new Blob([new Uint8Array(file)], { type: "application/pdf" }), "handbook.pdf")
  const r = await fetch(`${server.api}/api/user/knowledge-tables/${table}/sources`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.demo.token}`, accept: "application/json" },
    body: form
  })
  if (r.status !== 200 && r.status !== 201) throw new Error(`upload: ${r.status} ${await r.text()}`)
  return (await r.json() as { data: { id: number } }).data
}, pdfCode(PDF_PAGES))
report(`PDF (${PDF_PAGES} pages)`, file.byteLength, PDF_PAGES, pdfRun)
against("PDF", "unpdf `extractText`, whole file", PDF_PAGES, pdfRun, pdfFloor)
against("PDF", `read + chunk + embed (${pdfChunks} chunks)`, PDF_PAGES, pdfRun, pdfSteps)

// the site
const site = await startSite(SITE_PAGES)
try {
  const urls = Array.from({ length: SITE_PAGES }, (_, k) => `${site.origin}${pagePath(k + 1)}`)
  const bodies: Array<string> = []
  const siteFloor = await inProcess(async () => {
    bodies.length = 0
    for (const url of urls) {
      bodies.push(await (await fetch(url, { headers: { "user-agent": "bench-floor" } })).text())
    }
  })
  let siteChunks = 0
  const siteSteps = await inProcess(async () => {
    siteChunks = 0
    for (const [k, html] of bodies.entries()) siteChunks += chunkAndEmbed(htmlPage(html, urls[k]!, urls[k]).document)
  })
  const siteRun = await ingest(
    (server, table) =>
      call(server, "POST", `/api/user/knowledge-tables/${table}/sources`, {
        kind: "sitemap",
        url: `${site.origin}/sitemap.xml`,
        max_pages: SITE_PAGES
      }),
    siteCode(SITE_PAGES)
  )
  const bot = [...site.served.entries()].find(([agent]) => agent.startsWith("ParleyBot"))?.[1]
  if (bot === undefined || bot.requests < SITE_PAGES) throw new Error(`the server fetched ${bot?.requests ?? 0} pages`)
  report(`site (${SITE_PAGES} pages, sitemap)`, bot.bytes, SITE_PAGES, siteRun)
  against("site", "bare sequential GET of every page", SITE_PAGES, siteRun, siteFloor)
  against("site", `read + chunk + embed (${siteChunks} chunks)`, SITE_PAGES, siteRun, siteSteps)
  console.log(
    `\nthe server asked the site ${bot.requests} times (${f2(bot.bytes / MB)} MB), robots.txt and sitemap included`
  )
} finally {
  await site.close()
}

console.log(
  "\n| source | pages | MB | ready s | searchable s | pages/s | MB/s | server CPU ms/page | RSS start / peak MiB | points " +
    "| GET source p50 / max ms | slowest /health ms | statements/page |"
)
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for (const r of rows) console.log(r)
console.log("\n| source | beside (in the bench's process) | its s | its CPU ms/page | time ratio | CPU ratio |")
console.log("|---|---|---|---|---|---|")
for (const r of ratios) console.log(r)
process.exit(0)
