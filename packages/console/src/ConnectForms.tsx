/**
 * The connect forms of the channel page, one per provider: its credentials, or the simulator Parley ships
 * (docs/channels.md). Email's is in ConnectEmail.tsx.
 */
import { ConnectFrame, field, submit } from "./ChannelForm.js"

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

const connectMessenger = connectMeta("messenger")
const connectInstagram = connectMeta("instagram")

export const ConnectMeta = ({ kind }: { kind: "messenger" | "instagram" }) =>
  kind === "messenger"
    ? (
      <ConnectFrame
        kind={kind}
        title="Connect a Facebook page (Messenger)"
        hint="From Meta's developer dashboard (Messenger, Settings): the page's id, a page access token, and the app secret. Or try it first with the simulator: no Meta app needed."
        name="Messenger"
        instead="Meta"
        onSubmit={connectMessenger}
        fields={[
          { label: "Page id", name: "page_id", numeric: true },
          { label: "Page access token", name: "page_access_token", secret: true },
          { label: "App secret", name: "app_secret", secret: true }
        ]}
      />
    )
    : (
      <ConnectFrame
        kind={kind}
        title="Connect an Instagram account"
        hint="From Meta's developer dashboard (Instagram, API setup): the Instagram account's id, its access token, and the app secret. Or try it first with the simulator: no Meta app needed."
        name="Instagram"
        instead="Meta"
        onSubmit={connectInstagram}
        fields={[
          { label: "Instagram account id", name: "instagram_account_id", numeric: true },
          { label: "Access token", name: "access_token", secret: true },
          { label: "App secret", name: "app_secret", secret: true }
        ]}
      />
    )

export const ConnectTelegram = () => (
  <ConnectFrame
    kind="telegram"
    title="Connect a Telegram bot"
    hint={
      <>
        Create a bot with @BotFather on Telegram (<code>/newbot</code>) and paste the token it gives. Parley points the
        bot's webhook at itself. Or try it first with the simulator: no bot needed.
      </>
    }
    name="Telegram"
    instead="Telegram"
    onSubmit={connectTelegram}
    fields={[{ label: "Bot token", name: "bot_token", secret: true }]}
  />
)

export const ConnectSms = () => (
  <ConnectFrame
    kind="sms"
    title="Connect an SMS number (Twilio)"
    hint={
      <>
        From Twilio's console: the Account SID and Auth Token, and the number (<code>+14155550100</code>, or{" "}
        <code>whatsapp:+14155550100</code>{" "}
        for a WhatsApp sender). Then paste the webhook URL shown as the number's "A message comes in" webhook (HTTP
        POST). Or try it first with the simulator: no Twilio account needed.
      </>
    }
    name="SMS"
    instead="Twilio"
    onSubmit={connectSms}
    fields={[
      { label: "Account SID", name: "account_sid", type: "text", placeholder: "AC..." },
      { label: "Auth Token", name: "auth_token", secret: true },
      { label: "From number", name: "from_number", placeholder: "+14155550100" }
    ]}
  />
)

export const ConnectWhatsApp = () => (
  <ConnectFrame
    kind="whatsapp"
    title="Connect a WhatsApp number"
    hint="From Meta's developer dashboard (WhatsApp, API Setup): the phone number id, a system user's access token, and the app secret. Or try it first with the simulator: no Meta account needed."
    name="WhatsApp"
    instead="Meta"
    onSubmit={connect}
    fields={[
      { label: "Phone number id", name: "phone_number_id", numeric: true },
      { label: "Access token", name: "access_token", secret: true },
      { label: "App secret", name: "app_secret", secret: true },
      { label: "WhatsApp Business Account id (optional)", name: "business_account_id", numeric: true }
    ]}
  />
)
