/**
 * A conversation's messages, oldest at the top: who wrote each, files, why no reply came, webhook delivery;
 * between them, the handoff's moves as activity lines (who asked for a person and why, took over,
 * assigned, handed back with what note), which the contact never sees.
 */
import type { ConversationFull, Message } from "./api.js"
import { bytes, clock, kindLabel } from "./format.js"
import { memberName } from "./state.js"

const NO_REPLY: Record<string, string> = {
  no_credits: "No reply: the workspace has no credits left",
  no_subscription: "No reply: the subscription is not active",
  paused: "No reply: an operator has this conversation",
  waiting_for_person: "No reply: waiting for a person",
  message_limit: "No reply: the conversation reached its message limit",
  cost_limit: "No reply: the conversation reached its cost limit",
  model_not_configured: "No reply: the pipeline's model is not configured",
  provider_error: "No reply: the model provider failed",
  reply_withheld: "No reply: the output guard withheld it (it repeated the agent's instructions)",
  no_agent: "No reply: no agent handles this channel",
  outside_service_window:
    "No reply: the channel's service window has closed (24 hours after the contact's last message)"
}

/** A provider's receipts as WhatsApp shows them: one tick sent, two delivered, two blue read. */
const RECEIPT: Record<string, string> = { sent: "✓ Sent", delivered: "✓✓ Delivered", read: "✓✓ Read", failed: "Failed" }
const Receipt = ({ m }: { m: Message }) =>
  m.delivery_status === null ? null : (
    <span
      class="receipt"
      data-status={m.delivery_status}
      title={m.read_at ?? m.delivered_at ?? undefined}
    >
      {RECEIPT[m.delivery_status] ?? m.delivery_status}
    </span>
  )

const author = (m: Message) =>
  m.sender === "contact"
    ? "Contact"
    : m.sender === "ai"
    ? (m.call_type === "handoff_bridge" ? "AI (bridge)" : "AI")
    : `Operator (${memberName(m.sender_id)})`

/** The reply webhook's attempts (web and widget), or a provider channel's sends ("WhatsApp"). */
const delivery = (m: Message, via: string) => {
  if (m.role !== "assistant" || m.deliveries.length === 0) return null
  const last = m.deliveries[m.deliveries.length - 1]!
  const ok = last.status_code !== null && last.status_code >= 200 && last.status_code < 300
  // the log records an attempt before it is sent (error "In progress" until the answer)
  const text = ok
    ? `${via === "Webhook" ? "Webhook delivered" : `Sent to ${via}`} (${last.status_code})`
    : last.status_code === null && last.error === "In progress"
    ? `${via} sending`
    : `${via} ${last.status_code ?? "failed"}${last.error === null ? "" : `: ${last.error}`}`
  return (
    <span class="delivery" data-ok={ok} title={`${m.deliveries.length} attempt(s), last to ${last.url}`}>{text}</span>
  )
}

/** What the server wrote once about a file for the model (an audio's `transcript`, an image's `description`). */
const noted = (f: Message["files"][number], key: "transcript" | "description") => {
  const value: unknown = (f as Readonly<Record<string, unknown>>)[key]
  return typeof value === "string" && value !== "" ? value : undefined
}

const Files = ({ files }: { files: Message["files"] }) => (
  <ul class="files">
    {files.map((f) => (
      <li key={f.path}>
        {f.type === "image"
          ? (
            <a href={f.url} target="_blank" rel="noreferrer">
              <img
                src={f.url}
                alt={noted(f, "description") ?? f.name}
                title={noted(f, "description")}
                loading="lazy"
              />
            </a>
          )
          : <a href={f.url} download={f.name}>{f.name}</a>}
        <span class="size">{bytes(f.size)}</span>
        {f.type === "audio" && <audio controls preload="none" src={f.url} aria-label={f.name} />}
        {f.type === "audio" && noted(f, "transcript") !== undefined && (
          <p class="file-transcript">Transcript: {noted(f, "transcript")}</p>
        )}
      </li>
    ))}
  </ul>
)

type Citation = NonNullable<Message["citations"]>[number]

/** The sources a reply's knowledge points came from, once each (its pages together); hand-written points have none. */
const sourcesOf = (citations: ReadonlyArray<Citation>) => {
  const by = new Map<string, { title: string | null; pages: Array<number> }>()
  for (const c of citations) {
    if (c.source === null) continue
    const s = by.get(c.source) ?? { title: c.title, pages: [] }
    if (c.page !== null && !s.pages.includes(c.page)) s.pages.push(c.page)
    by.set(c.source, s)
  }
  return [...by.entries()].map(([source, s]) => ({ source, ...s, pages: s.pages.sort((a, b) => a - b) }))
}

/** "Sources" under an AI reply: a page as a link, a file by its name and pages. */
const Sources = ({ citations }: { citations: ReadonlyArray<Citation> }) => {
  const sources = sourcesOf(citations)
  if (sources.length === 0) return null
  return (
    <p class="sources">
      Sources: {sources.map((s, i) => (
        <span key={s.source}>
          {i > 0 && " · "}
          {/^https?:\/\//i.test(s.source)
            ? <a href={s.source} target="_blank" rel="noreferrer" title={s.source}>{s.title ?? s.source}</a>
            : (
              <span title={s.title ?? undefined}>
                {s.source}
                {s.pages.length > 0 && `, ${s.pages.length === 1 ? "page" : "pages"} ${s.pages.join(", ")}`}
              </span>
            )}
        </span>
      ))}
    </p>
  )
}

type Move = ConversationFull["handoff_events"][number]

const capitalised = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)

/** One handoff move as a line of the transcript. */
const moveText = (e: Move) => {
  const who = capitalised(memberName(e.user_id))
  switch (e.action) {
    case "request":
      return e.actor === "contact"
        ? "The contact asked for a person"
        : `${e.actor === "ai" ? "The AI" : e.actor === "rule" ? "A rule" : who} asked for a person${
          e.reason === null ? "" : `: ${e.reason}`
        }`
    case "take":
      return `${who} took over`
    case "assign":
      return `${who} assigned it to ${memberName(e.assignee_id)}`
    case "return":
      return e.actor === "operator" ? `${who} handed it back to the AI` : "Handed back to the AI"
    case "timeout":
      return e.to_state === "ai"
        ? "The wait for a person ran out: handed back to the AI"
        : "The wait for a person ran out: the contact was told again"
    case "resolve":
      return "Resolved by the stage: the AI has it again"
  }
}

const Activity = ({ e }: { e: Move }) => (
  <li class="activity" data-action={e.action}>
    <span class="activity-text">{moveText(e)}</span>
    {e.note !== null && e.note !== "" && <span class="activity-note">Note for the AI: {e.note}</span>}
    <time dateTime={e.created_at}>{clock(e.created_at)}</time>
  </li>
)

type Line = { readonly at: string; readonly message: Message } | { readonly at: string; readonly move: Move }

/** Messages and moves by time; moves before the oldest message loaded wait until it is. */
const lines = (
  messages: ReadonlyArray<Message>,
  moves: ReadonlyArray<Move>,
  complete: boolean
): ReadonlyArray<Line> => {
  const oldest = messages.reduce<string | null>(
    (min, m) => (min === null || m.created_at < min ? m.created_at : min),
    null
  )
  const shown = moves.filter((e) => complete || (oldest !== null && e.created_at >= oldest))
  return [
    ...messages.map((m) => ({ at: m.created_at, message: m })),
    ...shown.map((e) => ({ at: e.created_at, move: e }))
  ]
    .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : "move" in a ? 1 : -1))
}

const MessageLine = ({ m, via }: { m: Message; via: string }) => (
  <li class={`msg from-${m.sender}`} data-sender={m.sender} data-id={m.id}>
    <div class="msg-head">
      <span class="author">{author(m)}</span>
      <time dateTime={m.created_at}>{clock(m.created_at)}</time>
      <Receipt m={m} />
    </div>
    {m.message !== null && m.message !== "" && <p class="text">{m.message}</p>}
    {m.files.length > 0 && <Files files={m.files} />}
    {m.citations !== undefined && <Sources citations={m.citations} />}
    {m.status === "failed" && <p class="error">Not sent: {m.error ?? "the channel refused it"}</p>}
    {m.no_reply_reason !== null && (
      <p class="no-reply">{NO_REPLY[m.no_reply_reason] ?? `No reply: ${m.no_reply_reason}`}</p>
    )}
    {delivery(m, via)}
  </li>
)

export const Transcript = ({ messages, moves = [], complete = true, typing, kind = null }: {
  messages: ReadonlyArray<Message>
  /** the conversation's channel kind: a provider's sends are named after it */
  kind?: string | null
  moves?: ReadonlyArray<Move>
  /** every earlier message is loaded: moves before the oldest one show too */
  complete?: boolean
  typing: boolean
}) => (
  <div role="log" aria-label="Messages" aria-live="polite">
    <ol class="transcript">
      {lines(messages, moves, complete).map((line) =>
        "move" in line
          ? <Activity key={`move-${line.move.id}`} e={line.move} />
          : (
            <MessageLine
              key={line.message.id}
              m={line.message}
              via={kind === null || kind === "web" || kind === "widget" ? "Webhook" : kindLabel(kind)}
            />
          )
      )}
      {typing && <li class="typing">AI is typing…</li>}
    </ol>
  </div>
)
