/**
 * The first run in a real browser: `parley serve` (what `pnpm start` runs) on a fresh data dir seeds the
 * demo, and its page at `/` embeds the widget. Headless Chromium sends a message, sees the local model's
 * reply arrive live, the opportunity's stage move and the signed reply webhook delivered to the demo's
 * own sink (with OUTBOUND_ALLOW_PRIVATE off, as by default); reloads and sees the history once; sends a
 * file; loses the network and sends once it is back, without duplicates; and a page on another origin is
 * refused. A screenshot of the demo page after the first exchange is kept in test-results/.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import type { Browser, Page } from "playwright-core"
import { launchBrowser } from "./support/Browser.js"
import { type Running, serve, stop, until } from "./support/ChildServer.js"

const root = Path.resolve(__dirname, "../../..")
const artifacts = Path.join(root, "test-results")
const WAIT = { timeout: 20_000 }

let server: Running | undefined
let browser: Browser | undefined
let dataDir: string

beforeAll(async () => {
  dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-demo-"))
  server = await serve(dataDir, { OUTBOUND_ALLOW_PRIVATE: "false" })
  browser = await launchBrowser()
})

afterAll(async () => {
  await browser?.close()
  await stop(server)
  Fs.rmSync(dataDir, { recursive: true, force: true })
})

const log = (page: Page) => page.getByRole("log", { name: "Messages" })
const messages = (page: Page) => log(page).locator("li")
const assistantTexts = (page: Page) => log(page).locator("li[data-role=assistant]").allInnerTexts()

/** Types into the widget and sends with Enter, as a visitor does. */
const say = async (page: Page, text: string) => {
  await page.getByRole("textbox", { name: "Message" }).fill(text)
  await page.getByRole("textbox", { name: "Message" }).press("Enter")
}

/** Waits until the conversation shows `n` assistant messages; their texts. */
const assistantCount = (page: Page, n: number) =>
  until(`${n} assistant messages`, async () => {
    const texts = await assistantTexts(page)
    return texts.length >= n ? texts : undefined
  }, WAIT.timeout)

describe("the demo page in a browser", () => {
  it("shows a message become a live reply, a stage move and a webhook delivery; reload keeps the history; files send", async () => {
    const context = await browser!.newContext({ viewport: { width: 1280, height: 800 } })
    const page = await context.newPage()
    const errors: Array<string> = []
    page.on("pageerror", (e) => errors.push(String(e)))
    // everything below runs under the page's CSP: its inline script and widget.js by nonce, nothing else
    page.on("console", (m) => m.text().includes("Content Security Policy") && errors.push(m.text()))
    const response = await page.goto(`${server!.api}/`)
    const csp = response!.headers()["content-security-policy"]!
    expect(csp).toMatch(/(^|; )script-src 'nonce-[A-Za-z0-9+/=]{24}'(;|$)/)
    expect(csp).toContain("frame-ancestors 'none'")
    expect(response!.headers()["x-frame-options"]).toBe("DENY")
    await page.waitForSelector("#parley-widget[data-state=ready]", WAIT)
    // the panel is open on the demo page; the pipeline's static opening message greets the visitor
    expect(await page.getByRole("dialog", { name: "Parley demo agent" }).isVisible()).toBe(true)
    expect((await assistantCount(page, 1))[0]).toContain("Parley's demo agent")
    await until(
      "the opportunity",
      async () => (await page.textContent("#opportunity-stage"))?.includes("New lead") || undefined,
      WAIT.timeout
    )

    // one exchange: the reply comes over the socket, from the pipeline's knowledge
    await say(page, "What does the Growth plan cost?")
    await page.locator("li[data-role=user]:not([data-pending])", { hasText: "Growth plan" }).waitFor(WAIT)
    const afterFirst = await assistantCount(page, 2)
    expect(afterFirst[1]).toContain("199 euros")
    // the signed reply webhook reached the demo's sink (verified there) and shows in the delivery log
    await page.locator("#deliveries tbody tr:not([data-empty])", { hasText: "200" }).first().waitFor(WAIT)
    Fs.mkdirSync(artifacts, { recursive: true })
    await page.screenshot({ path: Path.join(artifacts, "demo-page-after-one-exchange.png"), fullPage: true })

    // a stage move: asking for a demo call meets the won stage's entry condition
    await say(page, "I'd like to book a demo call")
    const afterMove = await assistantCount(page, 3)
    // README's demo script reads naturally: an answer from the knowledge, no word of what the agent is told
    // (its instructions, the handoff guidance, the tools, the stage names)
    expect(afterMove[2]).toContain("A demo call takes 30 minutes")
    for (
      const internal of [
        "request_human",
        "move_to_stage",
        "Call the",
        "tool",
        "Demo booked",
        "New lead",
        "Greet the contact",
        "answer from the",
        "[task:"
      ]
    ) {
      for (const said of afterMove) expect(said).not.toContain(internal)
    }
    await until(
      "the won stage",
      async () => (await page.textContent("#opportunity-stage"))?.includes("Demo booked") || undefined,
      WAIT.timeout
    )
    expect(await page.textContent("#opportunity-status")).toContain("won")
    await page.locator("#deliveries tbody tr:not([data-empty])").nth(2).waitFor(WAIT)

    // reload: the stored session resumes the same conversation, each message shown once
    const before = await messages(page).allInnerTexts()
    expect(before.length).toBe(5)
    await page.reload()
    await page.waitForSelector("#parley-widget[data-state=ready]", WAIT)
    await until("the history", async () => ((await messages(page).count()) >= 5 ? true : undefined), WAIT.timeout)
    expect(await messages(page).allInnerTexts()).toEqual(before)

    // a file, sent to the receiver from the page, is stored and listed with a signed URL
    await page.getByLabel("Attach files").setInputFiles({
      name: "brochure.txt",
      mimeType: "text/plain",
      buffer: Buffer.from("Parley brochure")
    })
    await page.getByRole("button", { name: "Send" }).click()
    await page.locator("li[data-role=user]:not([data-pending])", { hasText: "brochure.txt" }).waitFor(WAIT)
    // once stored, the link is the file's own signed URL (not the page's local preview), and after a reload too
    const link = page.locator("li[data-role=user] a", { hasText: "brochure.txt" })
    for (const reload of [false, true]) {
      if (reload) await page.reload()
      const href = await until("the stored file's link", async () => {
        const h = await link.getAttribute("href", { timeout: WAIT.timeout }).catch(() => null)
        return h?.startsWith(`${server!.api}/`) ? h : undefined
      }, WAIT.timeout)
      expect(await (await fetch(href)).text()).toBe("Parley brochure")
    }
    expect(await link.count()).toBe(1)
    expect(errors).toEqual([])
    await context.close()
  })

  it("'Talk to a person' asks for the team: the contact sees the bridge message, and the button says so", async () => {
    const context = await browser!.newContext()
    const page = await context.newPage()
    await page.goto(`${server!.api}/`)
    await page.waitForSelector("#parley-widget[data-state=ready]", WAIT)
    await assistantCount(page, 1)
    await page.getByRole("button", { name: "Talk to a person" }).click()
    await page.getByRole("button", { name: "A person has been asked for" }).waitFor(WAIT)
    expect(await page.getByRole("button", { name: "A person has been asked for" }).isDisabled()).toBe(true)
    const replies = await assistantCount(page, 2)
    expect(replies[1]).toContain("member of our team")
    await context.close()
  })

  it("loses the network, keeps a message queued, sends it once when back, and misses no reply", async () => {
    const context = await browser!.newContext()
    const page = await context.newPage()
    await page.goto(`${server!.api}/`)
    await page.waitForSelector("#parley-widget[data-state=ready]", WAIT)
    await assistantCount(page, 1)
    await context.setOffline(true)
    await say(page, "Can I host it myself?")
    await page.locator("li[data-role=user][data-pending]", { hasText: "host it myself" }).waitFor(WAIT)
    await page.waitForTimeout(1_500)
    await context.setOffline(false)
    await page.locator("li[data-role=user]:not([data-pending])", { hasText: "host it myself" }).waitFor(WAIT)
    const replies = await assistantCount(page, 2)
    expect(replies[1]).toContain("self-hosted")
    await page.waitForTimeout(1_000)
    const texts = await messages(page).allInnerTexts()
    expect(texts.filter((t) => t.includes("host it myself"))).toHaveLength(1)
    expect(texts.filter((t) => t.includes("self-hosted"))).toHaveLength(1)
    await context.close()
  })

  it("a long conversation: the newest 50 messages on open, the earlier ones on request, each once and in order", async () => {
    const credentials = JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8"))
    const context = await browser!.newContext()
    const page = await context.newPage()
    await page.goto(`${server!.api}/`)
    await page.waitForSelector("#parley-widget[data-state=ready]", WAIT)
    await assistantCount(page, 1)
    const { session, contact_id } = JSON.parse(
      (await page.evaluate((key) => localStorage.getItem(key), `parley:${credentials.widget.client_id}`))!
    )
    // 55 messages from this visitor, sent as the widget sends them
    const headers = { authorization: `Bearer ${session}`, origin: server!.api }
    for (let i = 1; i <= 55; i++) {
      const form = new FormData()
      form.set("contact_id", contact_id)
      form.set("message", `message ${i}`)
      const res = await fetch(`${server!.receiver}/web-chat/message`, { method: "POST", headers, body: form })
      expect(res.status).toBe(200)
    }
    // the agent's replies to them settle before the count is taken
    await assistantCount(page, 2)
    const total = await until("a settled conversation", async () => {
      const counts: Array<number> = []
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${server!.api}/api/widget/messages?per_page=1`, { headers })
        counts.push((await res.json()).data.total)
        await page.waitForTimeout(700)
      }
      return counts.every((c) => c === counts[0]) ? counts[0]! : undefined
    }, WAIT.timeout)
    expect(total).toBeGreaterThan(56)

    await page.reload()
    await page.waitForSelector("#parley-widget[data-state=ready]", WAIT)
    const earlier = page.getByRole("button", { name: "Earlier messages" })
    await earlier.waitFor(WAIT)
    expect(await messages(page).count()).toBe(50)
    await earlier.click()
    await until(
      "every message",
      async () => ((await messages(page).count()) === total ? true : undefined),
      WAIT.timeout
    )
    expect(await earlier.isHidden()).toBe(true)
    const texts = await messages(page).allInnerTexts()
    expect(texts[0]).toContain("Parley's demo agent")
    const mine = texts.filter((t) => /^message \d+$/.test(t))
    expect(mine).toEqual(Array.from({ length: 55 }, (_, i) => `message ${i + 1}`))
    await context.close()
  })

  it("refuses the widget on a page of an origin the channel does not allow", async () => {
    const credentials = JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8"))
    const site = Http.createServer((_, res) =>
      res.writeHead(200, { "content-type": "text/html" }).end(
        `<!doctype html><title>Another site</title><h1>Another site</h1>
         <script src="${
          server!.api
        }/widget.js" data-client-id="${credentials.widget.client_id}" data-open="true" async></script>`
      )
    )
    await new Promise<void>((r) => site.listen(0, "127.0.0.1", () => r()))
    try {
      const page = await browser!.newPage()
      const warnings: Array<string> = []
      page.on("console", (m) => m.type() === "warning" && warnings.push(m.text()))
      await page.goto(`http://127.0.0.1:${(site.address() as AddressInfo).port}/`)
      await page.waitForSelector("#parley-widget[data-state=refused]", WAIT)
      expect(await page.getByRole("alert").textContent()).toBe("This chat is not available on this website.")
      expect(await page.getByRole("textbox", { name: "Message" }).count()).toBe(0)
      expect(warnings.length).toBe(1)
      await page.close()
    } finally {
      await new Promise<void>((r) => site.close(() => r()))
    }
  })
})
