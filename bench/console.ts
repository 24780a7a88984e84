/**
 * The operator console's budgets (issue 20), in headless Chromium against a real `parley serve`:
 *
 * - first load of `/console` (a fresh browser context each time: nothing cached, the session cookie
 *   given) until the inbox is drawn and the socket is live, against the same HTML, script and stylesheet
 *   served bare by node:http and loaded to the `load` event in the same run;
 * - a contact's message to the receiver until its row shows it in an open console's inbox, against the
 *   same message reaching a bare socket.io client joined to the workspace's room.
 *
 * Also the bundle's size, gzipped; and with a third argument, that many conversations in the workspace
 * (made through the API): the first load, the list endpoint's first and a deep page, and scrolling the
 * inbox through 1,000 rows, with how many rows the page holds meanwhile (the list is virtualised).
 * Run: npx tsx bench/console.ts [loads] [messages] [conversations]
 */
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Zlib from "node:zlib"
import { chromium } from "playwright-core"
import { io } from "socket.io-client"
import { chromiumPath } from "../packages/server/test/support/Browser.js"
import { startServer } from "./support.js"

const loads = Number(process.argv[2] ?? 10)
const messages = Number(process.argv[3] ?? 20)
const conversations = Number(process.argv[4] ?? 20)

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const p95 = (xs: ReadonlyArray<number>) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.95))]!
const ms = (x: number) => `${x.toFixed(0)} ms`

const server = await startServer()
const credentials = JSON.parse(Fs.readFileSync(Path.join(server.dataDir, "demo-credentials.json"), "utf8")) as {
  email: string
  password: string
  token: string
  workspace_id: number
}
const basic = `Basic ${
  Buffer.from(`${server.demo.channel.client_id}:${server.demo.channel.client_secret}`).toString("base64")
}`
const post = (url: string, body: unknown, authorization = basic) =>
  fetch(url, {
    method: "POST",
    headers: { authorization, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

const browser = await chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox"] })
try {
  // sign in once; each load below is a fresh context with only the session cookie
  const signInContext = await browser.newContext()
  const signIn = await signInContext.newPage()
  await signIn.goto(`${server.api}/console`)
  await signIn.getByLabel("Email").fill(credentials.email)
  await signIn.getByLabel("Password").fill(credentials.password)
  await signIn.getByRole("button", { name: "Sign in" }).click()
  await signIn.locator(".conn[data-state=live]").waitFor({ timeout: 60_000 })
  const cookies = (await signInContext.cookies()).filter((c) => c.name === "parley_session")

  // conversations for the inbox to draw, eight requests at a time
  let made = 0
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (made < conversations) {
      const i = made++
      const r = await post(`${server.api}/api/user/web-chat/initiate`, {
        contact_id: `bench-console-${i}`,
        name: `Bench contact ${i}`
      })
      if (r.status !== 200) throw new Error(`initiate answered ${r.status}`)
    }
  }))

  // each new conversation gets the first stage's opening message: wait until those are all made and
  // delivered (the workspace's counts stop moving), so the figures below are not measured beside them
  let last = ""
  for (let still = 0; still < 3;) {
    await new Promise((r) => setTimeout(r, 1000))
    const now = await (await fetch(`${server.api}/api/user/analytics/summary`, {
      headers: { authorization: `Bearer ${credentials.token}` }
    })).text()
    still = now === last ? still + 1 : 0
    last = now
  }

  // the page's own files, for the bare comparison and the size budget
  const shell = await (await signIn.request.get(`${server.api}/console`)).text()
  const jsPath = /src="([^"]+console\.js[^"]*)"/.exec(shell)![1]!
  const cssPath = /href="([^"]+console\.css[^"]*)"/.exec(shell)![1]!
  const js = Buffer.from(await (await signIn.request.get(`${server.api}${jsPath}`)).body())
  const css = Buffer.from(await (await signIn.request.get(`${server.api}${cssPath}`)).body())
  const bare = Http.createServer((req, res) => {
    if (req.url?.startsWith("/console/assets/console.js")) {
      res.writeHead(200, { "content-type": "text/javascript" }).end(js)
    } else if (req.url?.startsWith("/console/assets/console.css")) {
      res.writeHead(200, { "content-type": "text/css" }).end(css)
    } else {res.writeHead(200, { "content-type": "text/html" }).end(
        shell.replace(/<script type="module"[^>]*><\/script>/, `<script type="module" src="${jsPath}"></script>`)
      )}
  })
  await new Promise<void>((r) => bare.listen(0, "127.0.0.1", () => r()))
  const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}/console`

  const consoleLoads: Array<number> = []
  let timings: Array<string> = []
  const inPage: Array<number> = []
  const drawn: Array<number> = []
  const live: Array<number> = []
  const bareLoads: Array<number> = []
  for (let i = 0; i < loads + 1; i++) {
    const context = await browser.newContext()
    await context.addCookies(cookies)
    const page = await context.newPage()
    // when the page itself saw the inbox drawn and the socket live (ms since navigation start)
    await page.addInitScript(() => {
      const w = window as unknown as { drawnAt?: number; liveAt?: number }
      new MutationObserver(() => {
        if (w.drawnAt === undefined && document.querySelector("ul.rows li.row") !== null) w.drawnAt = performance.now()
        if (w.liveAt === undefined && document.querySelector(".conn[data-state=live]") !== null) {
          w.liveAt = performance.now()
        }
      }).observe(document, { subtree: true, childList: true, attributes: true })
    })
    const t = performance.now()
    await page.goto(`${server.api}/console`)
    await page.locator("ul.rows li.row").first().waitFor({ timeout: 30_000 })
    await page.locator(".conn[data-state=live]").waitFor({ timeout: 30_000 })
    if (i > 0) consoleLoads.push(performance.now() - t) // the first builds the bundle when running from the sources
    if (i > 0) {
      const seen = await page.evaluate(() => {
        const w = window as unknown as { drawnAt: number; liveAt: number }
        return { drawnAt: w.drawnAt, liveAt: w.liveAt }
      })
      inPage.push(Math.max(seen.drawnAt, seen.liveAt))
      drawn.push(seen.drawnAt)
      live.push(seen.liveAt)
    }
    if (i === loads) {
      // where the last load's time went: each request's start and duration, from the page's own timings
      timings = await page.evaluate(() =>
        performance.getEntriesByType("resource").map((e) =>
          `${e.name.replace(location.origin, "").replace(/\?.*/, "")} at ${e.startTime.toFixed(0)} ms took ${
            e.duration.toFixed(0)
          } ms`
        )
      )
    }
    await context.close()

    const bareContext = await browser.newContext()
    const barePage = await bareContext.newPage()
    const b = performance.now()
    await barePage.goto(bareUrl, { waitUntil: "load" })
    if (i > 0) bareLoads.push(performance.now() - b)
    await bareContext.close()
  }
  bare.close()

  // the list endpoint as the console calls it: the first page, and one 1,000 rows deep
  const listPage = async (cursor?: string) => {
    const t = performance.now()
    const r = await fetch(
      `${server.api}/api/user/conversations?order=queue&per_page=50${cursor === undefined ? "" : `&cursor=${cursor}`}`,
      {
        headers: { authorization: `Bearer ${credentials.token}` }
      }
    )
    const body = (await r.json()) as { data: { next_cursor: string | null } }
    return { ms: performance.now() - t, next: body.data.next_cursor }
  }
  const firstPages: Array<number> = []
  const deepPages: Array<number> = []
  for (let i = 0; i < 5; i++) {
    let page = await listPage()
    firstPages.push(page.ms)
    for (let p = 1; p < 20 && page.next !== null; p++) page = await listPage(page.next)
    if (page.next !== null) deepPages.push((await listPage(page.next)).ms)
  }

  // scrolling the inbox through 1,000 rows (or all there are): pages load as it goes, rows in view only
  const scrollContext = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  await scrollContext.addCookies(cookies)
  const scrollPage = await scrollContext.newPage()
  await scrollPage.goto(`${server.api}/console`)
  await scrollPage.locator("ul.rows li.row").first().waitFor({ timeout: 30_000 })
  const target = Math.min(1000, conversations)
  const scrolled = performance.now()
  let mostRows = 0
  while (true) {
    const state = await scrollPage.evaluate(() => {
      const list = document.querySelector("ul.rows") as HTMLElement
      list.scrollTop = list.scrollHeight
      list.dispatchEvent(new Event("scroll"))
      const rows = list.querySelectorAll("li.row")
      const last = rows[rows.length - 1] as HTMLElement | undefined
      return { inDom: rows.length, lastTop: last === undefined ? 0 : last.offsetTop }
    })
    mostRows = Math.max(mostRows, state.inDom)
    if (state.lastTop / 78 >= target - 1) break
    if (performance.now() - scrolled > 120_000) throw new Error("scrolling did not reach the target")
    await scrollPage.waitForTimeout(20)
  }
  const scrollMs = performance.now() - scrolled
  await scrollContext.close()

  // live: the receiver's 200 to the row in an open inbox, and to a bare socket client
  const context = await browser.newContext()
  await context.addCookies(cookies)
  const page = await context.newPage()
  await page.goto(`${server.api}/console`)
  await page.locator(".conn[data-state=live]").waitFor({ timeout: 30_000 })
  const socket = io(server.api, { transports: ["websocket"] })
  await new Promise<void>((resolve) =>
    socket.on(
      "connect",
      () =>
        socket.emit("join-workspace", { workspace_id: credentials.workspace_id, token: credentials.token }, () =>
          resolve())
    )
  )
  const socketSeen = new Map<string, number>()
  socket.on("new_message", (e: { message: string | null }) => {
    if (e.message !== null) socketSeen.set(e.message, Date.now())
  })
  const inbox: Array<number> = []
  const inboxFromSend: Array<number> = []
  const socketOnly: Array<number> = []
  for (let i = 0; i < messages; i++) {
    const contact = `bench-console-${i % 20}`
    const marker = `bench marker ${i} ${Math.random().toString(36).slice(2)}`
    await page.evaluate((m) => {
      ;(window as unknown as { seenAt?: number | undefined }).seenAt = undefined
      const observer = new MutationObserver(() => {
        if (document.querySelector("ul.rows")?.textContent?.includes(m)) {
          ;(window as unknown as { seenAt?: number | undefined }).seenAt = Date.now()
          observer.disconnect()
        }
      })
      observer.observe(document.body, { subtree: true, childList: true, characterData: true })
    }, marker)
    const sent = Date.now()
    const response = await post(`${server.receiver}/web-chat/message`, { contact_id: contact, message: marker })
    const answered = Date.now()
    if (response.status !== 200) throw new Error(`receiver answered ${response.status}`)
    const seenAt = await page.waitForFunction(
      () => (window as unknown as { seenAt?: number | undefined }).seenAt,
      undefined,
      { timeout: 10_000 }
    )
    const shown = (await seenAt.jsonValue()) as number
    inbox.push(shown - answered)
    inboxFromSend.push(shown - sent)
    const until = Date.now() + 10_000
    while (!socketSeen.has(marker) && Date.now() < until) await new Promise((r) => setTimeout(r, 2))
    socketOnly.push(socketSeen.get(marker)! - sent)
  }
  socket.disconnect()
  await context.close()

  const gz = Zlib.gzipSync(js).length
  const out = [
    "",
    `Operator console, ${conversations} conversations, node ${process.version}, ${Os.cpus().length} cores, load average ${
      Os.loadavg()[0]!.toFixed(2)
    }`,
    "",
    "| what | median | p95 | bare, same run | ratio (median) | budget |",
    "|---|---|---|---|---|---|",
    `| first load of /console to a drawn inbox and a live socket (${loads} loads) | ${ms(median(consoleLoads))} | ${
      ms(p95(consoleLoads))
    } | ${ms(median(bareLoads))} (same files from node:http, to \`load\`) | ${
      (median(consoleLoads) / median(bareLoads)).toFixed(1)
    } | 1000 ms |`,
    `| the same, as the page saw it (navigation start to both, by its own clock) | ${ms(median(inPage))} | ${
      ms(p95(inPage))
    } | | | |`,
    `| of which: rows drawn / socket live | ${ms(median(drawn))} / ${ms(median(live))} | ${ms(p95(drawn))} / ${
      ms(p95(live))
    } | | | |`,
    `| receiver's 200 to the message in the inbox (${messages} messages) | ${ms(median(inbox))} | ${
      ms(p95(inbox))
    } | | | 300 ms |`,
    `| the message sent to it shown in the inbox | ${ms(median(inboxFromSend))} | ${ms(p95(inboxFromSend))} | ${
      ms(median(socketOnly))
    } (sent to a bare socket.io client's \`new_message\`) | ${
      (median(inboxFromSend) / Math.max(1, median(socketOnly))).toFixed(1)
    } | |`,
    `| list endpoint, first page of 50 (order=queue, ${conversations} conversations) | ${
      ms(median(firstPages))
    } | | | | |`,
    ...(deepPages.length > 0 ? [`| list endpoint, the page 1,000 rows deep | ${ms(median(deepPages))} | | | | |`] : []),
    `| scrolling the inbox to row ${target} (pages load as it scrolls) | ${
      ms(scrollMs)
    } | | at most ${mostRows} rows in the page at once | | |`,
    `| console.js gzipped | ${(gz / 1024).toFixed(1)} KB | | ${(js.length / 1024).toFixed(1)} KB raw | | 200 KB |`,
    ""
  ]
  console.log(out.join("\n"))
  console.log(`The last first load's requests:\n  ${timings.join("\n  ")}\n`)
} finally {
  await browser.close()
  await server.stop()
}
