/**
 * The workspace's channels (docs/console.md): each with its kind, state and webhook URL to copy; check a provider
 * channel's connection, activate or deactivate; connect a channel of any kind (ConnectForms.tsx): what the provider
 * needs pasted on its side (a webhook URL, Meta's verify token) is shown once.
 */
import { signal } from "@preact/signals"
import { api, type ChannelCheckResult, type ChannelRecord } from "./api.js"
import { created, reload } from "./ChannelForm.js"
import { ConnectEmail } from "./ConnectEmail.js"
import { ConnectMeta, ConnectSms, ConnectTelegram, ConnectWhatsApp } from "./ConnectForms.js"
import { kindLabel } from "./format.js"
import { fail, say, workspaceChannels } from "./state.js"

/** Where Meta's dashboard takes a webhook, and the fields to subscribe to, by kind. */
const META_WEBHOOK: Readonly<Record<string, string>> = {
  whatsapp: "WhatsApp, Configuration, Webhook; subscribe to messages",
  messenger:
    "Messenger, Webhooks, object Page; subscribe to messages, message_echoes, message_deliveries, message_reads, messaging_postbacks and message_reactions",
  instagram: "Instagram, Webhooks; subscribe to messages, messaging_postbacks, messaging_seen and message_reactions"
}

const checks = signal<Readonly<Record<number, ChannelCheckResult>>>({})
const copy = (text: string) =>
  navigator.clipboard.writeText(text).then(() => say("Copied."), () => say("Copy it from the field.", true))

const Copyable = ({ label, value }: { label: string; value: string }) => (
  <div class="copyable">
    <label>
      {label}
      <input readOnly value={value} onFocus={(e) => e.currentTarget.select()} />
    </label>
    <button type="button" onClick={() => void copy(value)}>Copy</button>
  </div>
)

const check = (c: ChannelRecord) =>
  api<ChannelCheckResult>("POST", `channels/${c.id}/check`, { json: {} }).then(
    (result) => (checks.value = { ...checks.value, [c.id]: result }),
    fail
  )

const setActive = (c: ChannelRecord, active: boolean) =>
  api("PUT", `channels/${c.id}`, { json: { is_active: active } }).then(
    () => (say(`${c.name} ${active ? "activated" : "deactivated"}.`), reload()),
    fail
  )

const Row = ({ c }: { c: ChannelRecord }) => {
  const result = checks.value[c.id]
  return (
    <li class="channel-row" data-kind={c.kind} data-id={c.id}>
      <div class="channel-head">
        <strong>{c.name}</strong>
        <span class="kind" data-kind={c.kind}>{kindLabel(c.kind)}</span>
        <span class="state" data-active={c.is_active}>{c.is_active ? "Active" : "Inactive"}</span>
        {c.status === "disconnected" && (
          <span class="disconnected" role="status">Disconnected: {c.status_reason ?? "replace its credentials"}</span>
        )}
      </div>
      {c.webhook_url !== null && c.kind !== "email" && <Copyable label="Webhook URL" value={c.webhook_url} />}
      {c.simulator_url !== null && (
        <p>
          <a href={c.simulator_url} target="_blank" rel="noopener">Open the simulated phone</a>
        </p>
      )}
      <div class="channel-actions">
        {c.webhook_url !== null && <button type="button" onClick={() => void check(c)}>Check connection</button>}
        <button type="button" onClick={() => void setActive(c, !c.is_active)}>
          {c.is_active ? "Deactivate" : "Activate"}
        </button>
      </div>
      {result !== undefined && (
        <p class="check" data-ok={result.ok} role="status">
          {result.message}
          {result.account !== null && typeof result.account.display_phone_number === "string" &&
            ` (${String(result.account.verified_name ?? "")} ${result.account.display_phone_number})`}
        </p>
      )}
    </li>
  )
}

export const Channels = () => {
  const shown = created.value
  return (
    <section class="channels-page" aria-labelledby="channels-title">
      <h2 id="channels-title">Channels</h2>
      {shown !== undefined && shown.kind === "telegram" && (
        <aside class="created" aria-live="polite">
          <p>
            <strong>{shown.name}</strong>{" "}
            is connected: Telegram sends the bot's messages to Parley now. Write to the bot on Telegram to try it.
          </p>
          <button type="button" class="link" onClick={() => (created.value = undefined)}>Done</button>
        </aside>
      )}
      {shown !== undefined && shown.kind === "sms" && (
        <aside class="created" aria-live="polite">
          <p>
            <strong>{shown.name}</strong>{" "}
            is connected. In Twilio's console, paste this as the number's "A message comes in" webhook (HTTP POST).
          </p>
          {shown.webhook_url !== null && <Copyable label="Webhook URL" value={shown.webhook_url} />}
          <button type="button" class="link" onClick={() => (created.value = undefined)}>Done</button>
        </aside>
      )}
      {shown !== undefined && shown.kind === "email" && (
        <aside class="created" aria-live="polite">
          <p>
            <strong>{shown.name}</strong>{" "}
            is connected: Parley reads its INBOX and answers new mail from its address. Use "Check connection" to try
            both logins.
          </p>
          <button type="button" class="link" onClick={() => (created.value = undefined)}>Done</button>
        </aside>
      )}
      {shown !== undefined && shown.kind !== "telegram" && shown.kind !== "sms" && shown.kind !== "email" && (
        <aside class="created" aria-live="polite">
          <p>
            <strong>{shown.name}</strong>{" "}
            is connected. Paste these into Meta's dashboard ({META_WEBHOOK[shown.kind] ?? META_WEBHOOK.whatsapp}). The
            verify token is not shown again.
          </p>
          {shown.webhook_url !== null && <Copyable label="Callback URL" value={shown.webhook_url} />}
          {shown.verify_token !== undefined && shown.verify_token !== null && (
            <Copyable label="Verify token" value={shown.verify_token} />
          )}
          <button type="button" class="link" onClick={() => (created.value = undefined)}>Done</button>
        </aside>
      )}
      <ul class="channel-list">
        {workspaceChannels.value.map((c) => <Row key={c.id} c={c} />)}
        {workspaceChannels.value.length === 0 && <li class="empty">No channels yet.</li>}
      </ul>
      <ConnectWhatsApp />
      <ConnectMeta kind="messenger" />
      <ConnectMeta kind="instagram" />
      <ConnectTelegram />
      <ConnectSms />
      <ConnectEmail />
    </section>
  )
}
