/**
 * The operator console in real Chromium, beside a visitor in the demo page's widget, on a first-run
 * server (`parley serve`, demo seeded). The visitor asks for a person; the conversation comes to the top
 * of the inbox marked waiting, with the bridge message and the summary; the operator takes over and
 * replies with a file, which the visitor sees live; hands back with a note that the agent's next reply
 * follows; drags the opportunity's card on the board to the won stage (checked over REST, and the
 * stage's opening message reaches the visitor); the analytics page draws charts. At 390 px the inbox and
 * the conversation fit the screen. Signing out ends the console's token. Once a WhatsApp contact's window has
 * closed (her message aged by 25 hours while the server is stopped), the composer offers the approved templates
 * instead of free text, and the one sent reaches the simulated phone. A contact who wrote on the web chat and then on
 * WhatsApp has both conversations listed beside either; the operator opens the other and writes there, and the
 * simulated phone gets it. On the models page the operator adds a local OpenAI-compatible server (a wrong key is
 * refused at the key field), checks it, and adds a model from the list it gave. Screenshots of each screen are kept
 * in test-results/console-*.png.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Zlib from "node:zlib"
import type { Browser, BrowserContext, Page } from "playwright-core"
import { launchBrowser } from "./support/Browser.js"
import { call, childDatabase, type Running, serve, stop, until } from "./support/ChildServer.js"
import { ok } from "./support/Contract.js"
import { startFakeModelServer } from "./support/FakeModelServer.js"

const root = Path.resolve(__dirname, "../../..")
const artifacts = Path.join(root, "test-results")
const WAIT = { timeout: 30_000 }
/** A plain PNG of one colour (the operator's attachment), big enough to see in the screenshots. */
const png = (width: number, height: number, rgb: readonly [number, number, number]) => {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "ascii"), data])
    const out = Buffer.alloc(body.length + 8)
    out.writeUInt32BE(data.length, 0)
    body.copy(out, 4)
    out.writeUInt32BE(Zlib.crc32(body), body.length + 4)
    return out
  }
  const header = Buffer.alloc(13)
  header.writeUInt32BE(width, 0)
  header.writeUInt32BE(height, 4)
  header.set([8, 2, 0, 0, 0], 8)
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: width }, () => rgb).flat())])
  const pixels = Zlib.deflateSync(Buffer.concat(Array.from({ length: height }, () => row)))
  return Buffer.concat([
    Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]),
    chunk("IHDR", header),
    chunk("IDAT", pixels),
    chunk("IEND", Buffer.alloc(0))
  ])
}
const PNG = png(120, 80, [37, 99, 235])

interface Demo {
  readonly email: string
  readonly password: string
  readonly token: string
  readonly pipeline_id: number
}

let server: Running | undefined
let browser: Browser | undefined
let dataDir: string
let demo: Demo

beforeAll(async () => {
  dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-console-"))
  server = await serve(dataDir, {})
  browser = await launchBrowser()
  demo = JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8")) as Demo
  Fs.mkdirSync(artifacts, { recursive: true })
})

afterAll(async () => {
  await browser?.close()
  await stop(server)
  Fs.rmSync(dataDir, { recursive: true, force: true })
})

const rest = (path: string, init: RequestInit & { token?: string } = {}) =>
  call(`${server!.api}/api/user/${path}`, { token: demo.token, ...init })

const shot = (page: Page, name: string) => page.screenshot({ path: Path.join(artifacts, `console-${name}.png`) })

/** A page that fails the test on a script error or a CSP violation. */
const watched = async (context: BrowserContext, errors: Array<string>) => {
  const page = await context.newPage()
  page.on("pageerror", (e) => errors.push(String(e)))
  page.on("console", (m) => m.text().includes("Content Security Policy") && errors.push(m.text()))
  return page
}

/** Form controls and buttons on screen without an accessible name (a label, aria-label or text). */
const unlabelled = (page: Page) =>
  page.evaluate(() =>
    Array.from(document.querySelectorAll<HTMLElement>("input:not([type=hidden]), select, textarea, button, a[href]"))
      .filter((el) => el.getClientRects().length > 0 || el.classList.contains("visually-hidden"))
      .filter((el) => {
        const labels = (el as HTMLInputElement).labels
        const named = (labels !== undefined && labels !== null && Array.from(labels).some((l) =>
          l.textContent!.trim() !== ""
        )) ||
          (el.getAttribute("aria-label") ?? "").trim() !== "" || (el.textContent ?? "").trim() !== "" ||
          el.querySelector("img[alt]:not([alt=''])") !== null
        return !named
      })
      .map((el) => el.outerHTML.slice(0, 120))
  )

const signIn = async (page: Page, path: string) => {
  await page.goto(`${server!.api}${path}`)
  expect(page.url()).toContain("/account/sign-in?return_to=")
  await page.getByLabel("Email").fill(demo.email)
  await page.getByLabel("Password").fill(demo.password)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.waitForURL(`**${path}`)
  await page.locator(".conn[data-state=live]").waitFor(WAIT)
}

const widgetSay = async (page: Page, text: string) => {
  await page.getByRole("textbox", { name: "Message" }).fill(text)
  await page.getByRole("textbox", { name: "Message" }).press("Enter")
}

const widgetReply = (page: Page, text: string) =>
  page.getByRole("log", { name: "Messages" }).locator("li[data-role=assistant]", { hasText: text }).first()

// a restart of the server (to age a message in its embedded database) on top of the console's tour
describe("the operator console in a browser", { timeout: 240_000 }, () => {
  it("takes a handoff from the inbox to a reply with a file and back to the agent; moves a card on the board; draws analytics; offers templates once a WhatsApp window has closed", async () => {
    const errors: Array<string> = []
    const operatorContext = await browser!.newContext({ viewport: { width: 1280, height: 800 } })
    const visitorContext = await browser!.newContext({ viewport: { width: 1100, height: 800 } })
    const operator = await watched(operatorContext, errors)
    const visitor = await watched(visitorContext, errors)

    // the console's page: signed in by the account session, scripts only from itself
    const first = await operator.request.get(`${server!.api}/console`, { maxRedirects: 0 })
    expect(first.status()).toBe(303)
    await signIn(operator, "/console")
    const response = await operator.goto(`${server!.api}/console`)
    const csp = response!.headers()["content-security-policy"]!
    expect(csp).toMatch(/(^|; )script-src 'self'(;|$)/)
    expect(csp).not.toContain("unsafe-inline'; script")
    expect(response!.headers()["x-frame-options"]).toBe("DENY")
    await operator.locator(".conn[data-state=live]").waitFor(WAIT)

    // the visitor opens the demo page (its conversation starts with the opening message) and asks for a person
    await visitor.goto(`${server!.api}/`)
    await visitor.waitForSelector("#parley-widget[data-state=ready]", WAIT)
    // the demo page and the start banner lead operators to the console
    expect(await visitor.getByRole("link", { name: "Operator console" }).getAttribute("href")).toBe("/console")
    expect(server!.output()).toContain(`Console   ${server!.api}/console`)
    await widgetReply(visitor, "Parley's demo agent").waitFor(WAIT)
    // the person button follows the handoff state (docs/web-chat.md): offered while the AI has the conversation
    const personButton = visitor.locator("#parley-widget button.human")
    await until(
      "the person button offered",
      async () => (await personButton.getAttribute("data-handoff")) === "ai" || undefined,
      WAIT.timeout
    )
    expect(await personButton.innerText()).toBe("Talk to a person")
    await widgetSay(visitor, "My order arrived broken. Can I talk to a person please?")
    await until(
      "the person button: asked for",
      async () => (await personButton.getAttribute("data-handoff")) === "waiting" || undefined,
      WAIT.timeout
    )
    expect(await personButton.innerText()).toBe("A person has been asked for")
    expect(await personButton.isDisabled()).toBe(true)
    // the contact can tell the AI from a person: the AI's messages say so
    expect(await widgetReply(visitor, "member of our team").locator(".who").innerText()).toBe("AI assistant")

    // it comes to the top of the inbox, live, marked waiting
    const top = operator.locator("ul.rows li.row").first()
    await until(
      "the waiting conversation on top",
      async () => (await top.getAttribute("data-state")) === "waiting" || undefined,
      WAIT.timeout
    )
    expect(await top.locator(".badge").innerText()).toMatch(/^Waiting \d+ s$/)
    const conversationId = Number(await top.getAttribute("data-id"))
    await top.click()
    await operator.waitForURL(`**/console/c/${conversationId}`)
    const transcript = operator.getByRole("log", { name: "Messages" })
    await transcript.locator(".msg.from-ai", { hasText: "member of our team" }).waitFor(WAIT)
    // the handoff's moves are activity lines of the transcript, not messages
    await transcript.locator("li.activity[data-action=request]", {
      hasText: "The AI asked for a person: The contact asked to talk to a person"
    }).waitFor(WAIT)
    const summary = operator.getByRole("complementary", { name: "Handoff summary" })
    await summary.waitFor(WAIT)
    expect(await summary.innerText()).toContain("Wants:")
    expect(await operator.getByTestId("handoff-state").innerText()).toContain("Waiting for a person")
    await shot(operator, "inbox-waiting")
    expect(await unlabelled(operator)).toEqual([])

    // take over; reply with a file; the visitor sees it live
    await operator.getByRole("button", { name: "Take over" }).click()
    await until(
      "taken",
      async () => (await operator.getByTestId("handoff-state").innerText()) === "With you" || undefined,
      WAIT.timeout
    )
    await transcript.locator("li.activity[data-action=take]", { hasText: "You took over" }).waitFor(WAIT)
    await until(
      "the person button: with a person",
      async () => (await personButton.getAttribute("data-handoff")) === "human" || undefined,
      WAIT.timeout
    )
    expect(await personButton.innerText()).toBe("You are chatting with our team")
    await operator.locator("#composer-files").setInputFiles({
      name: "replacement-label.png",
      mimeType: "image/png",
      buffer: PNG
    })
    await operator.getByRole("list", { name: "Files to send" }).getByText("replacement-label.png").waitFor(WAIT)
    await operator.getByRole("textbox", { name: "Message to the contact" }).fill(
      "Sorry about that! Here is the label for the replacement."
    )
    await operator.getByRole("button", { name: "Send" }).click()
    const sent = transcript.locator(".msg.from-operator", { hasText: "label for the replacement" })
    await sent.waitFor(WAIT)
    await sent.locator("img[alt='replacement-label.png']").waitFor(WAIT)
    const seen = widgetReply(visitor, "label for the replacement")
    await seen.waitFor(WAIT)
    await seen.locator(".files a", { hasText: "replacement-label.png" }).waitFor(WAIT)
    // an operator is named to the contact, as a person of the team
    expect(await seen.locator(".who").innerText()).toBe("Demo User · Team")
    expect(await seen.getAttribute("data-sender")).toBe("operator")
    await shot(operator, "conversation-operator")
    await visitor.screenshot({ path: Path.join(artifacts, "console-visitor-widget.png") })

    // hand back with a note: it steers the agent, and is never said to the visitor
    await operator.getByRole("button", { name: "Hand back to AI" }).click()
    await operator.getByLabel("A note for the AI (optional)").fill(
      "Replacement approved. Offer the voucher code BIKE10 for the trouble."
    )
    await operator.getByRole("button", { name: "Hand back", exact: true }).click()
    await until(
      "handed back",
      async () => (await operator.getByTestId("handoff-state").innerText()) === "The AI has it" || undefined,
      WAIT.timeout
    )
    const returned = transcript.locator("li.activity[data-action=return]", { hasText: "You handed it back to the AI" })
    await returned.waitFor(WAIT)
    expect(await returned.locator(".activity-note").innerText()).toBe(
      "Note for the AI: Replacement approved. Offer the voucher code BIKE10 for the trouble."
    )
    expect(await transcript.locator(".msg", { hasText: "Replacement approved" }).count()).toBe(0)
    await until(
      "the person button offered again",
      async () => (await personButton.getAttribute("data-handoff")) === "ai" || undefined,
      WAIT.timeout
    )
    expect(await personButton.isDisabled()).toBe(false)
    await widgetSay(visitor, "Is there a voucher for the trouble? And how long is a demo call?")
    await widgetReply(visitor, "30 minutes").waitFor(WAIT)
    await transcript.locator(".msg.from-ai", { hasText: "30 minutes" }).waitFor(WAIT)
    expect(await transcript.locator(".msg.from-ai", { hasText: "BIKE10" }).count()).toBe(0)
    const conversation = ok(await rest(`conversations/${conversationId}`), "conversations.get")
    expect(conversation.handoff).toMatchObject({
      state: "ai",
      return_note: "Replacement approved. Offer the voucher code BIKE10 for the trouble."
    })
    expect(conversation.opportunity).not.toBeNull()
    const opportunityId = conversation.opportunity!.id

    // the board: drag the card to the won stage, which now has an opening message
    const stages = ok(await rest(`pipelines/${demo.pipeline_id}/stages`), "pipelines.listStages")
    const won = stages.find((s) => s.nature === "won")!
    expect(
      (await rest(`stages/${won.id}`, {
        method: "PUT",
        body: JSON.stringify({
          is_opening_message: true,
          opening_message_type: "static",
          static_opening_message: "Your demo is booked. See you on the call!"
        })
      })).status
    ).toBe(200)
    await operator.getByRole("link", { name: "Board" }).click()
    await operator.waitForURL("**/console/board")
    const card = operator.locator(`li.card[data-id="${opportunityId}"]`)
    await card.waitFor(WAIT)
    const wonColumn = operator.locator(`section.column[data-stage="${won.id}"]`)
    await card.dragTo(wonColumn)
    await wonColumn.locator(`li.card[data-id="${opportunityId}"]`).waitFor(WAIT)
    expect(await wonColumn.locator(".total").innerText()).toBe("1")
    expect(ok(await rest(`opportunities/${opportunityId}`), "opportunities.get")).toMatchObject({
      stage_id: won.id,
      stage_nature: "won"
    })
    await widgetReply(visitor, "Your demo is booked").waitFor(WAIT)
    await shot(operator, "board")
    expect(await unlabelled(operator)).toEqual([])

    // analytics: charts of the day's messages, handoffs and the won opportunity
    await operator.getByRole("link", { name: "Analytics" }).click()
    await operator.waitForURL("**/console/analytics")
    await until(
      "charts with data",
      async () => (await operator.locator("figure.chart[data-empty=false]").count()) >= 4 || undefined,
      WAIT.timeout
    )
    expect(await operator.locator("figure.chart svg rect").count()).toBeGreaterThan(0)
    // by stage: the card moved to the won stage that day
    expect(
      await operator.getByRole("img", {
        name: new RegExp(`^Opportunities won and lost by stage per day: ${won.name} \\(won\\) 1 in total`)
      }).count()
    ).toBe(1)
    await shot(operator, "analytics")
    expect(await unlabelled(operator)).toEqual([])

    // channels: the demo's simulated WhatsApp number, its check, and connecting another
    await operator.getByRole("link", { name: "Channels" }).click()
    await operator.waitForURL("**/console/channels")
    const simulated = operator.locator("li.channel-row", { hasText: "Demo WhatsApp (simulator)" })
    await simulated.waitFor(WAIT)
    await simulated.getByRole("button", { name: "Check connection" }).click()
    await simulated.locator("p.check[data-ok=true]").waitFor(WAIT)
    const simulatorUrl = await simulated.getByRole("link", { name: "Open the simulated phone" }).getAttribute("href")
    const whatsappForm = operator.getByRole("form", { name: "Connect a WhatsApp number" })
    await whatsappForm.getByLabel("Name", { exact: true }).fill("Second number")
    await whatsappForm.getByLabel("Use the simulator instead of Meta").check()
    await whatsappForm.getByRole("button", { name: "Connect", exact: true }).click()
    // the Telegram form is there too, with its token field
    await operator.getByRole("form", { name: "Connect a Telegram bot" }).getByLabel("Bot token").waitFor(WAIT)
    await operator.locator("aside.created").getByLabel("Verify token").waitFor(WAIT)
    expect(await operator.locator("aside.created").getByLabel("Callback URL").inputValue()).toMatch(
      /\/channels\/wh_\w+\/webhook$/
    )
    await operator.locator("li.channel-row", { hasText: "Second number" }).waitFor(WAIT)
    // a Facebook page with the simulator: the notice names Messenger's webhook settings
    const messengerForm = operator.getByRole("form", { name: "Connect a Facebook page (Messenger)" })
    await messengerForm.getByLabel("Name", { exact: true }).fill("Shop page")
    await messengerForm.getByLabel("Use the simulator instead of Meta").check()
    await messengerForm.getByRole("button", { name: "Connect", exact: true }).click()
    await operator.locator("aside.created", { hasText: "Messenger, Webhooks, object Page" }).waitFor(WAIT)
    await operator.locator("li.channel-row[data-kind=messenger]", { hasText: "Shop page" }).waitFor(WAIT)
    await operator.getByRole("form", { name: "Connect an Instagram account" }).getByLabel("Access token").waitFor(WAIT)
    await shot(operator, "channels")
    expect(await unlabelled(operator)).toEqual([])

    // a contact writes on the simulated WhatsApp: the inbox shows the kind, the reply its receipts and the window
    const said = await fetch(`${simulatorUrl}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ wa_id: "4915100000042", name: "Wanda WhatsApp", text: "What does the Growth plan cost?" })
    })
    expect(said.status).toBe(200)
    await operator.getByRole("link", { name: "Inbox" }).click()
    const whatsappRow = operator.locator("ul.rows li.row", { hasText: "Wanda WhatsApp" })
    await whatsappRow.waitFor(WAIT)
    expect(await whatsappRow.locator(".kind").innerText()).toBe("WhatsApp")
    await whatsappRow.click()
    await operator.waitForURL(/\/console\/c\/\d+$/)
    const wandaId = Number(/\/c\/(\d+)$/.exec(operator.url())![1])
    await operator.locator(".receipt[data-status=read]").first().waitFor(WAIT)
    expect(await operator.locator(".conv-head .window[data-open=true]").innerText()).toMatch(
      /^Window: 23 h \d+ min left$/
    )
    await shot(operator, "whatsapp-conversation")

    // the keys: k/j move through the inbox, Enter opens, e hands back
    await operator.getByRole("link", { name: "Inbox" }).click()
    await operator.waitForURL(/\/console$/)
    await operator.locator("ul.rows li.row").first().waitFor(WAIT)
    await operator.locator("body").click({ position: { x: 5, y: 790 } })
    await operator.keyboard.press("k")
    await operator.keyboard.press("Enter")
    await operator.waitForURL(/\/console\/c\/\d+$/)
    const opened = Number(/\/c\/(\d+)$/.exec(operator.url())![1])
    expect(
      (await rest(`conversations/${opened}/handoff`, { method: "POST", body: JSON.stringify({ action: "take" }) }))
        .status
    ).toBe(200)
    await until(
      "the operator's take shows",
      async () => (await operator.getByTestId("handoff-state").innerText()).startsWith("With ") || undefined,
      WAIT.timeout
    )
    await operator.locator("body").click({ position: { x: 5, y: 790 } })
    await operator.keyboard.press("e")
    await until(
      "e handed back",
      async () => ok(await rest(`conversations/${opened}`), "conversations.get").handoff.state === "ai" || undefined,
      WAIT.timeout
    )

    // a phone: the inbox, then the conversation alone, without sideways scrolling
    const phone = await watched(operatorContext, errors)
    await phone.setViewportSize({ width: 390, height: 844 })
    await phone.goto(`${server!.api}/console`)
    await phone.locator("ul.rows li.row").first().waitFor(WAIT)
    expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await shot(phone, "phone-inbox")
    await phone.locator("ul.rows li.row").first().click()
    await phone.getByRole("log", { name: "Messages" }).locator("li").first().waitFor(WAIT)
    expect(await phone.locator("section.inbox").isVisible()).toBe(false)
    expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await shot(phone, "phone-conversation")

    // the token lives in memory only, and signing out ends it
    const token = await operator.evaluate(async () => {
      const csrf = document.querySelector<HTMLMetaElement>("meta[name=parley-csrf]")!.content
      const r = await fetch("/console/token", { method: "POST", headers: { "x-csrf-token": csrf } })
      return ((await r.json()) as { access_token: string }).access_token
    })
    const stored = await operator.evaluate(() =>
      JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage }, cookie: document.cookie })
    )
    expect(stored).not.toContain(token)
    expect(stored).not.toContain("cst_")
    expect((await rest("me", { token })).status).toBe(200)
    const forged = await operator.evaluate(async () => (await fetch("/console/token", { method: "POST" })).status)
    expect(forged).toBe(403)
    await operator.getByRole("button", { name: /^Sign out/ }).click()
    await operator.waitForURL("**/account/sign-in")
    expect((await rest("me", { token })).status).toBe(401)

    // Wanda's window closes: Meta's clock says she wrote 25 hours ago (set while the server is stopped, as the
    // embedded database is the server's alone while it runs)
    await phone.close()
    await visitorContext.close()
    await stop(server)
    const aged = await (await childDatabase(dataDir)).query(
      `update messages set provider_sent_at = now() - interval '25 hours'
       where conversation_id = $1 and role = 'user' returning id`,
      [wandaId]
    )
    expect(aged.length).toBeGreaterThan(0)
    server = await serve(dataDir, {})
    await signIn(operator, `/console/c/${wandaId}`)

    // no free text now: the composer offers the channel's approved templates, filled in and previewed
    const picker = operator.getByRole("form", { name: "Send a template" })
    await picker.waitFor(WAIT)
    expect(await operator.locator(".conv-head .window[data-open=false]").innerText()).toBe("Window closed")
    expect(await operator.getByRole("textbox", { name: "Message to the contact" }).count()).toBe(0)
    const checkingIn = picker.getByRole("radio", { name: "checking_in (en)", exact: true })
    await checkingIn.waitFor(WAIT)
    expect(await picker.getByRole("radio", { name: "hello_world (en_US)", exact: true }).count()).toBe(1)
    // still under Meta's review: not offered
    expect(await picker.getByRole("radio", { name: /^summer_sale/ }).count()).toBe(0)
    expect(
      await picker.locator(".template-option", { hasText: "checking_in (en)" }).locator(".template-body").innerText()
    ).toBe(
      "Hi {{1}}, just checking in: is there anything else I can help you with?"
    )
    await checkingIn.check()
    await picker.getByLabel("Parameter 1", { exact: true }).fill("Wanda")
    expect(await picker.getByLabel("Parameter 2", { exact: true }).count()).toBe(0)
    expect(await picker.locator(".template-parameters .hint").innerText()).toContain("{{variable}}")
    const checkIn = "Hi Wanda, just checking in: is there anything else I can help you with?"
    expect(await picker.locator(".template-preview p").innerText()).toBe(checkIn)
    expect(await unlabelled(operator)).toEqual([])
    await shot(operator, "whatsapp-template")
    await picker.getByRole("button", { name: "Send template", exact: true }).click()
    await operator.getByRole("log", { name: "Messages" }).locator(".msg.from-operator", { hasText: checkIn })
      .waitFor(WAIT)
    // and the simulated phone got it
    const thread = await (await fetch(`${server.api}${new URL(simulatorUrl!).pathname}/thread?wa_id=4915100000042`))
      .json() as { messages: ReadonlyArray<{ direction: string; text: string }> }
    expect(thread.messages.filter((m) => m.direction === "out").map((m) => m.text)).toContain(checkIn)

    expect(errors).toEqual([])
    await operatorContext.close()
  })

  it("lists a contact's conversations on every channel beside a conversation and continues the contact on another", async () => {
    const errors: Array<string> = []
    const context = await browser!.newContext({ viewport: { width: 1280, height: 800 } })
    const page = await watched(context, errors)
    const { channel, whatsapp } = JSON.parse(Fs.readFileSync(Path.join(dataDir, "demo-credentials.json"), "utf8")) as {
      channel: { id: number; client_id: string; client_secret: string }
      whatsapp: { id: number; simulator_path: string }
    }
    // Carla gives her phone in the web chat, then writes from that phone on WhatsApp: one contact, two conversations
    const session = ok(
      await call(`${server!.api}/api/user/web-chat/initiate`, {
        method: "POST",
        basic: [channel.client_id, channel.client_secret],
        json: { contact_id: "carla-cross", name: "Carla Cross", phone: "+49 151 0000 0077" }
      }),
      "webChat.initiate"
    )
    const webId = session.conversation_id
    const simulator = `${server!.api}${whatsapp.simulator_path}`
    expect(
      (await fetch(`${simulator}/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ wa_id: "4915100000077", name: "Carla Cross", text: "Carla again, now on WhatsApp" })
      })).status
    ).toBe(200)
    const contactId = ok(await rest(`conversations/${webId}`), "conversations.get").contact.id
    const both = await until("two conversations of the contact", async () => {
      const list = ok(await rest(`conversations?contact_id=${contactId}`), "conversations.list").conversations
      return list.length === 2 ? list : undefined
    }, WAIT.timeout)
    const whatsappId = both.find((c) => c.channel_id === whatsapp.id)!.id
    const names = new Map<number, string>(ok(await rest("channels"), "channels.list").map((c) => [c.id, c.name]))
    const webLink = `Web chat: ${names.get(channel.id)}`
    const whatsappLink = `WhatsApp: ${names.get(whatsapp.id)}`

    // beside the web conversation: the contact and both conversations, this one marked
    await signIn(page, `/console/c/${webId}`)
    const panel = page.getByRole("complementary", { name: "Contact", exact: true })
    await panel.getByRole("link", { name: whatsappLink, exact: true }).waitFor(WAIT)
    expect(await panel.locator("dd").allInnerTexts()).toEqual(["Carla Cross", "4915100000077", "—"])
    expect(await panel.getByRole("list", { name: "Conversations (2)", exact: true }).getByRole("listitem").count())
      .toBe(2)
    expect(await panel.getByRole("link", { name: webLink, exact: true }).getAttribute("aria-current")).toBe("page")
    expect(await unlabelled(page)).toEqual([])
    await shot(page, "contact-channels")

    // the WhatsApp one opens in the inbox, and the operator's message there reaches the simulated phone
    await panel.getByRole("link", { name: whatsappLink, exact: true }).click()
    await page.waitForURL(`**/console/c/${whatsappId}`)
    await panel.getByRole("link", { name: whatsappLink, exact: true }).and(panel.locator("[aria-current=page]"))
      .waitFor(WAIT)
    const text = "Carla, a colleague here: shall we go on on WhatsApp?"
    await page.getByRole("textbox", { name: "Message to the contact" }).fill(text)
    await page.getByRole("button", { name: "Send", exact: true }).click()
    await page.getByRole("log", { name: "Messages" }).locator(".msg.from-operator", { hasText: text }).waitFor(WAIT)
    await until("the simulated phone got it", async () => {
      const thread = await (await fetch(`${simulator}/thread?wa_id=4915100000077`)).json() as {
        messages: ReadonlyArray<{ direction: string; text: string }>
      }
      return thread.messages.some((m) => m.direction === "out" && m.text === text) || undefined
    }, WAIT.timeout)
    expect(errors).toEqual([])
    await context.close()
  })

  it("adds a model provider (a wrong key refused at its field), checks it and adds a model from the list it gave", async () => {
    const fake = await startFakeModelServer({ apiKey: "sk-console-key", models: ["llama3.1:8b", "qwen2.5:7b"] })
    const errors: Array<string> = []
    const context = await browser!.newContext({ viewport: { width: 1280, height: 800 } })
    const page = await watched(context, errors)
    try {
      await signIn(page, "/console/models")
      const add = page.getByRole("form", { name: "Add a model provider", exact: true })
      expect(await add.getByLabel("Kind", { exact: true }).inputValue()).toBe("openai_compatible")
      const baseUrl = add.getByLabel("Base URL", { exact: true })
      expect(await baseUrl.getAttribute("placeholder")).toBe("http://127.0.0.1:11434/v1")
      await add.getByLabel("Name", { exact: true }).fill("GPU box")
      await baseUrl.fill(fake.openAiUrl)
      const key = add.getByLabel("API key (optional)", { exact: true })
      expect(await key.getAttribute("type")).toBe("password")
      await key.fill("sk-wrong-key")
      await add.getByRole("button", { name: "Add provider", exact: true }).click()
      // the server asked the fake for its models with that key: refused, said at the key field
      await add.locator("#provider-api_key-problem").waitFor(WAIT)
      expect(await key.getAttribute("aria-invalid")).toBe("true")
      expect(await key.getAttribute("aria-describedby")).toBe("provider-api_key-problem")
      expect(await add.locator("#provider-api_key-problem").innerText()).not.toBe("")
      expect(await baseUrl.getAttribute("aria-invalid")).toBeNull()
      await shot(page, "models-wrong-key")

      await key.fill("sk-console-key")
      await add.getByRole("button", { name: "Add provider", exact: true }).click()
      const row = page.locator(".provider-row", { has: page.getByText("GPU box", { exact: true }) })
      await row.waitFor(WAIT)
      expect(await row.locator(".provider-facts dd").allInnerTexts()).toEqual([fake.openAiUrl, "yes"])
      expect(await row.locator(".scope").innerText()).toBe("This workspace")

      await row.getByRole("button", { name: "Check", exact: true }).click()
      const check = row.locator(".check[data-ok]")
      await check.waitFor(WAIT)
      expect(await check.locator("p").first().innerText()).toBe("Reachable: 2 models listed (llama3.1:8b, qwen2.5:7b).")

      // the models the check listed are the model field's suggestions
      const model = row.getByRole("form", { name: "Add a model to GPU box", exact: true })
      await model.waitFor(WAIT)
      expect(await model.locator("datalist option").evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value)))
        .toEqual(["llama3.1:8b", "qwen2.5:7b"])
      await model.getByLabel("Model", { exact: true }).fill("llama3.1:8b")
      await model.getByLabel("Display name (optional)", { exact: true }).fill("Llama 3.1")
      await model.getByLabel("Input price, USD per million tokens", { exact: true }).fill("0.1")
      await model.getByLabel("Output price, USD per million tokens", { exact: true }).fill("0.2")
      await model.getByLabel("Context window in tokens (optional)", { exact: true }).fill("131072")
      await model.getByLabel("Tools (function calling)", { exact: true }).check()
      expect(await unlabelled(page)).toEqual([])
      await model.getByRole("button", { name: "Add model", exact: true }).click()
      const listed = row.locator("table.models tbody tr")
      await listed.first().waitFor(WAIT)
      expect(await listed.first().locator("td").allInnerTexts()).toEqual([
        "Llama 3.1",
        "llama3.1:8b",
        "$0.10 / $0.20",
        "131,072",
        "tools",
        "Delete"
      ])
      await listed.first().scrollIntoViewIfNeeded()
      await shot(page, "models")

      // a pipeline on that model: the provider cannot go, and the server's 409 says why
      const created = ok(await rest("ai-models"), "aiModels.listModels").find((m) => m.model === "llama3.1:8b")!
      ok(
        await rest("pipelines", {
          method: "POST",
          body: JSON.stringify({ name: "On the GPU box", agent_type_id: 1, ai_model_id: created.id, language_id: 1 })
        }),
        "pipelines.create"
      )
      await row.getByRole("button", { name: "Delete provider GPU box", exact: true }).click()
      await page.locator(".notice[data-error=true]", { hasText: "On the GPU box" }).waitFor(WAIT)
      expect(await row.isVisible()).toBe(true)
      expect(errors).toEqual([])
    } finally {
      await context.close()
      await fake.close()
    }
  })
})
