/** What differs between the simulators' phones: the app's name and colour, and how the contact is addressed. */
export interface PhoneOptions {
  readonly app: string
  readonly colour: string
  /** The contact's id field, in the thread's query and the message's body (`wa_id`, `chat_id`). */
  readonly field: string
  readonly idLabel: string
  /** A JavaScript expression making a new contact id. */
  readonly newId: string
  readonly intro: string
}

export const whatsappPhone: PhoneOptions = {
  app: "WhatsApp",
  colour: "#075e54",
  field: "wa_id",
  idLabel: "Your WhatsApp number",
  newId: `"49151" + String(Math.floor(Math.random() * 1e7)).padStart(7, "0")`,
  intro: "Write to the business: your message goes to Parley as a signed WhatsApp webhook."
}

export const telegramPhone: PhoneOptions = {
  app: "Telegram",
  colour: "#229ed9",
  field: "chat_id",
  idLabel: "Your Telegram user id",
  newId: `String(100000000 + Math.floor(Math.random() * 9e8))`,
  intro: "Write to the bot: your message goes to Parley as a Telegram update with the bot's secret token."
}

/**
 * The simulated contact's phone (WhatsAppSimulator.ts, TelegramSimulator.ts): type as the contact, see Parley's
 * answers with ticks (one grey: sent, two grey: delivered, two blue: read). The contact's id and name are kept in
 * the browser; the thread is read every second.
 */
export const phonePage = (nonce: string, o: PhoneOptions) =>
  `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.app} simulator · Parley</title>
<style>
  body { margin: 0; font: 15px/1.45 system-ui, sans-serif; background: #e5ddd5; display: flex; justify-content: center; }
  .phone { width: min(420px, 100vw); min-height: 100vh; display: flex; flex-direction: column; background: #efeae2; }
  header { background: ${o.colour}; color: #fff; padding: 12px 16px; }
  header h1 { margin: 0; font-size: 1.05rem; }
  header p { margin: 4px 0 0; font-size: .85rem; opacity: .85; }
  header input { width: 9.5rem; font: inherit; font-size: .85rem; border: 0; border-radius: 4px; padding: 2px 6px; }
  ol { list-style: none; margin: 0; padding: 12px; flex: 1; display: flex; flex-direction: column; gap: 6px; overflow-y: auto; }
  li { max-width: 80%; padding: 6px 10px 4px; border-radius: 8px; box-shadow: 0 1px 1px rgba(0,0,0,.1); white-space: pre-wrap; }
  li.in { align-self: flex-end; background: #d9fdd3; }
  li.out { align-self: flex-start; background: #fff; }
  li small { display: block; text-align: right; color: #667781; font-size: .72rem; }
  li small b { font-weight: 400; color: #8696a0; }
  li small b.read { color: #53bdeb; }
  form { display: flex; gap: 8px; padding: 8px; background: #f0f2f5; }
  form input { flex: 1; font: inherit; padding: 10px 12px; border: 0; border-radius: 20px; }
  form button { font: inherit; border: 0; border-radius: 20px; padding: 0 16px; background: #00a884; color: #fff; }
  .empty { color: #667781; text-align: center; align-self: center; max-width: none; background: none; box-shadow: none; }
</style></head>
<body><div class="phone">
<header><h1>${o.app} simulator</h1>
<p>You are the contact <input id="name" aria-label="Your name"> on <input id="wa" aria-label="${o.idLabel}"></p></header>
<ol id="thread" aria-live="polite"><li class="empty">${o.intro}</li></ol>
<form id="form"><input id="text" autocomplete="off" placeholder="Message" aria-label="Message" required><button>Send</button></form>
</div>
<script nonce="${nonce}">
const base = location.pathname.replace(/\\/$/, "")
const stored = (k, make) => localStorage.getItem(k) || (localStorage.setItem(k, make()), localStorage.getItem(k))
const wa = document.getElementById("wa"), name = document.getElementById("name")
wa.value = stored("sim-${o.field}", () => ${o.newId})
name.value = stored("sim-name", () => "Jane Doe")
wa.onchange = () => localStorage.setItem("sim-${o.field}", wa.value)
name.onchange = () => localStorage.setItem("sim-name", name.value)
const ticks = (m) => m.direction === "in" ? "" : m.status === "sent" ? "<b>✓</b>" : "<b class='" + (m.status === "read" ? "read" : "") + "'>✓✓</b>"
const esc = (s) => s.replace(/[&<>]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c])
async function refresh() {
  const r = await fetch(base + "/thread?${o.field}=" + encodeURIComponent(wa.value))
  if (!r.ok) return
  const { messages } = await r.json()
  if (messages.length === 0) return
  document.getElementById("thread").innerHTML = messages.map((m) =>
    "<li class='" + m.direction + "'>" + esc(m.text) + "<small>" + m.at.slice(11, 16) + " " + ticks(m) + "</small></li>").join("")
}
document.getElementById("form").onsubmit = async (e) => {
  e.preventDefault()
  const text = document.getElementById("text")
  await fetch(base + "/messages", { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ ${o.field}: ${
    o.field === "wa_id" ? "wa.value" : "Number(wa.value)"
  }, name: name.value, text: text.value }) })
  text.value = ""
  refresh()
}
setInterval(refresh, 1000)
refresh()
</script></body></html>`
