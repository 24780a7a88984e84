/**
 * The connect forms of the channel page, one per provider: its credentials, or the simulator Parley ships
 * (docs/channels.md). Email's is in ConnectEmail.tsx.
 */
import { field, PipelineSelect, Problems, submit } from "./ChannelForm.js"

/** A WhatsApp number: its Cloud API credentials, or the simulator. */
const connect = submit(
  "whatsapp",
  "WhatsApp",
  (form) =>
    form.get("simulator") === "on" ? { simulator: true } : Object.fromEntries(
      ["phone_number_id", "access_token", "app_secret", "business_account_id"].flatMap((name) => {
        const value = field(form, name)
        return value === undefined ? [] : [[name, value]]
      })
    )
)

/** A Telegram bot: its token from @BotFather (Parley sets the bot's webhook itself), or the simulator. */
const connectTelegram = submit(
  "telegram",
  "Telegram",
  (form) => form.get("simulator") === "on" ? { simulator: true } : { bot_token: field(form, "bot_token") ?? "" }
)

/** An SMS number at Twilio: the account's SID and auth token and the number (or WhatsApp sender), or the simulator. */
const connectSms = submit(
  "sms",
  "SMS",
  (form) =>
    form.get("simulator") === "on" ? { simulator: true } : {
      account_sid: field(form, "account_sid") ?? "",
      auth_token: field(form, "auth_token") ?? "",
      from_number: field(form, "from_number") ?? ""
    }
)

/** A Facebook page or an Instagram account on Meta's Messenger Platform, or the simulator. */
const connectMeta = (kind: "messenger" | "instagram") =>
  submit(kind, kind === "messenger" ? "Messenger" : "Instagram", (form) => {
    if (form.get("simulator") === "on") return { simulator: true }
    const [id, token] = kind === "messenger"
      ? ["page_id", "page_access_token"]
      : ["instagram_account_id", "access_token"]
    return {
      [id]: field(form, id) ?? "",
      [token]: field(form, token) ?? "",
      app_secret: field(form, "app_secret") ?? ""
    }
  })

export const ConnectMeta = ({ kind }: { kind: "messenger" | "instagram" }) => {
  const messenger = kind === "messenger"
  return (
    <form class="connect" onSubmit={connectMeta(kind)} aria-labelledby={`connect-${kind}-title`}>
      <h3 id={`connect-${kind}-title`}>
        {messenger ? "Connect a Facebook page (Messenger)" : "Connect an Instagram account"}
      </h3>
      <p class="hint">
        {messenger
          ? "From Meta's developer dashboard (Messenger, Settings): the page's id, a page access token, and the app secret."
          : "From Meta's developer dashboard (Instagram, API setup): the Instagram account's id, its access token, and the app secret."}
        {" "}
        Or try it first with the simulator: no Meta app needed.
      </p>
      <label>
        Name <input name="name" placeholder={messenger ? "Messenger" : "Instagram"} />
      </label>
      <PipelineSelect />
      <label class="inline">
        <input type="checkbox" name="simulator" /> Use the simulator instead of Meta
      </label>
      <label>
        {messenger ? "Page id" : "Instagram account id"}{" "}
        <input name={messenger ? "page_id" : "instagram_account_id"} inputMode="numeric" />
      </label>
      <label>
        {messenger ? "Page access token" : "Access token"}{" "}
        <input name={messenger ? "page_access_token" : "access_token"} type="password" autoComplete="off" />
      </label>
      <label>
        App secret <input name="app_secret" type="password" autoComplete="off" />
      </label>
      <Problems kind={kind} />
      <button type="submit">Connect</button>
    </form>
  )
}

export const ConnectTelegram = () => (
  <form class="connect" onSubmit={connectTelegram} aria-labelledby="connect-telegram-title">
    <h3 id="connect-telegram-title">Connect a Telegram bot</h3>
    <p class="hint">
      Create a bot with @BotFather on Telegram (<code>/newbot</code>) and paste the token it gives. Parley points the
      bot's webhook at itself. Or try it first with the simulator: no bot needed.
    </p>
    <label>
      Name <input name="name" placeholder="Telegram" />
    </label>
    <PipelineSelect />
    <label class="inline">
      <input type="checkbox" name="simulator" /> Use the simulator instead of Telegram
    </label>
    <label>
      Bot token <input name="bot_token" type="password" autoComplete="off" />
    </label>
    <Problems kind="telegram" />
    <button type="submit">Connect</button>
  </form>
)

export const ConnectSms = () => (
  <form class="connect" onSubmit={connectSms} aria-labelledby="connect-sms-title">
    <h3 id="connect-sms-title">Connect an SMS number (Twilio)</h3>
    <p class="hint">
      From Twilio's console: the Account SID and Auth Token, and the number (<code>+14155550100</code>, or{" "}
      <code>whatsapp:+14155550100</code>{" "}
      for a WhatsApp sender). Then paste the webhook URL shown as the number's "A message comes in" webhook (HTTP POST).
      Or try it first with the simulator: no Twilio account needed.
    </p>
    <label>
      Name <input name="name" placeholder="SMS" />
    </label>
    <PipelineSelect />
    <label class="inline">
      <input type="checkbox" name="simulator" /> Use the simulator instead of Twilio
    </label>
    <label>
      Account SID <input name="account_sid" autoComplete="off" placeholder="AC..." />
    </label>
    <label>
      Auth Token <input name="auth_token" type="password" autoComplete="off" />
    </label>
    <label>
      From number <input name="from_number" inputMode="tel" placeholder="+14155550100" />
    </label>
    <Problems kind="sms" />
    <button type="submit">Connect</button>
  </form>
)

export const ConnectWhatsApp = () => (
  <form class="connect" onSubmit={connect} aria-labelledby="connect-title">
    <h3 id="connect-title">Connect a WhatsApp number</h3>
    <p class="hint">
      From Meta's developer dashboard (WhatsApp, API Setup): the phone number id, a system user's access token, and the
      app secret. Or try it first with the simulator: no Meta account needed.
    </p>
    <label>
      Name <input name="name" placeholder="WhatsApp" />
    </label>
    <PipelineSelect />
    <label class="inline">
      <input type="checkbox" name="simulator" /> Use the simulator instead of Meta
    </label>
    <label>
      Phone number id <input name="phone_number_id" inputMode="numeric" />
    </label>
    <label>
      Access token <input name="access_token" type="password" autoComplete="off" />
    </label>
    <label>
      App secret <input name="app_secret" type="password" autoComplete="off" />
    </label>
    <label>
      WhatsApp Business Account id (optional) <input name="business_account_id" inputMode="numeric" />
    </label>
    <Problems kind="whatsapp" />
    <button type="submit">Connect</button>
  </form>
)
