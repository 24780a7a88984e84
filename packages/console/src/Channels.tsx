/**
 * The workspace's channels (docs/console.md): each with its kind, state and webhook URL to copy; check a provider
 * channel's connection, activate or deactivate; connect a WhatsApp number (its Cloud API credentials, or the
 * simulator Parley ships), whose webhook URL and verify token are shown once to paste into Meta's dashboard; connect a
 * Telegram bot by its token (Parley sets its webhook).
 */
import { signal } from "@preact/signals"
import { api, ApiError, type ChannelCheckResult, type ChannelCreated, type ChannelRecord } from "./api.js"
import { kindLabel } from "./format.js"
import { channels, fail, say, workspaceChannels, workspaceId, workspacePipelines } from "./state.js"

const created = signal<ChannelCreated | undefined>(undefined)
const checks = signal<Readonly<Record<number, ChannelCheckResult>>>({})
/** What the last connect form's submission got wrong, shown under that form. */
const problems = signal<{ readonly kind: string; readonly list: ReadonlyArray<{ field: string; message: string }> }>({
  kind: "",
  list: []
})

const Problems = ({ kind }: { kind: string }) =>
  problems.value.kind === kind && problems.value.list.length > 0
    ? (
      <ul class="problems" role="alert">
        {problems.value.list.map((p) => <li key={p.field}>{p.field}: {p.message}</li>)}
      </ul>
    )
    : null

const reload = () => api<ReadonlyArray<ChannelRecord>>("GET", "channels").then((c) => (channels.value = c), fail)

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
      {c.webhook_url !== null && <Copyable label="Webhook URL" value={c.webhook_url} />}
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

const field = (form: FormData, name: string) => {
  const value = String(form.get(name) ?? "").trim()
  return value === "" ? undefined : value
}

/** Connects a channel of `kind` from its form; `credentials` reads the form's provider fields. */
const submit =
  (kind: string, fallbackName: string, credentials: (form: FormData) => Record<string, unknown>) => (e: Event) => {
    e.preventDefault()
    const form = new FormData(e.currentTarget as HTMLFormElement)
    const pipeline = field(form, "pipeline_id")
    problems.value = { kind: "", list: [] }
    api<ChannelCreated>("POST", "channels", {
      json: {
        workspace_id: workspaceId.value,
        kind,
        name: field(form, "name") ?? fallbackName,
        pipeline_id: pipeline === undefined ? null : Number(pipeline),
        credentials: credentials(form)
      }
    }).then(
      (channel) => {
        created.value = channel
        ;(e.target as HTMLFormElement).reset()
        void reload()
      },
      (error) => {
        if (error instanceof ApiError) problems.value = { kind, list: error.validation }
        fail(error)
      }
    )
  }

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

const PipelineSelect = () => (
  <label>
    Pipeline
    <select name="pipeline_id">
      <option value="">None</option>
      {workspacePipelines.value.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
    </select>
  </label>
)

const ConnectTelegram = () => (
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

const Connect = () => (
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
      {shown !== undefined && shown.kind !== "telegram" && (
        <aside class="created" aria-live="polite">
          <p>
            <strong>{shown.name}</strong>{" "}
            is connected. Paste these into Meta's dashboard (WhatsApp, Configuration, Webhook), and subscribe to{" "}
            <code>messages</code>. The verify token is not shown again.
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
      <Connect />
      <ConnectTelegram />
    </section>
  )
}
