/** A conversation's messages, oldest at the top: who wrote each, files, why no reply came, webhook delivery. */
import type { Message } from "./api.js"
import { bytes, clock } from "./format.js"
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
  no_agent: "No reply: no agent handles this channel"
}

const author = (m: Message) =>
  m.sender === "contact" ? "Contact" : m.sender === "ai" ? (m.call_type === "handoff_bridge" ? "AI (bridge)" : "AI") : `Operator (${memberName(m.sender_id)})`

const delivery = (m: Message) => {
  if (m.role !== "assistant" || m.deliveries.length === 0) return null
  const last = m.deliveries[m.deliveries.length - 1]!
  const ok = last.status_code !== null && last.status_code >= 200 && last.status_code < 300
  // the log records an attempt before it is sent (error "In progress" until the answer)
  const text = ok
    ? `Webhook delivered (${last.status_code})`
    : last.status_code === null && last.error === "In progress"
    ? "Webhook sending"
    : `Webhook ${last.status_code ?? "failed"}${last.error === null ? "" : `: ${last.error}`}`
  return <span class="delivery" data-ok={ok} title={`${m.deliveries.length} attempt(s), last to ${last.url}`}>{text}</span>
}

const Files = ({ files }: { files: Message["files"] }) => (
  <ul class="files">
    {files.map((f) => (
      <li key={f.path}>
        {f.type === "image"
          ? <a href={f.url} target="_blank" rel="noreferrer"><img src={f.url} alt={f.name} loading="lazy" /></a>
          : <a href={f.url} download={f.name}>{f.name}</a>}
        <span class="size">{bytes(f.size)}</span>
      </li>
    ))}
  </ul>
)

export const Transcript = ({ messages, typing }: { messages: ReadonlyArray<Message>; typing: boolean }) => (
  <div role="log" aria-label="Messages" aria-live="polite">
  <ol class="transcript">
    {messages.map((m) => (
      <li key={m.id} class={`msg from-${m.sender}`} data-sender={m.sender} data-id={m.id}>
        <div class="msg-head">
          <span class="author">{author(m)}</span>
          <time dateTime={m.created_at}>{clock(m.created_at)}</time>
        </div>
        {m.message !== null && m.message !== "" && <p class="text">{m.message}</p>}
        {m.files.length > 0 && <Files files={m.files} />}
        {m.status === "failed" && <p class="error">Not sent: {m.error ?? "the channel refused it"}</p>}
        {m.no_reply_reason !== null && <p class="no-reply">{NO_REPLY[m.no_reply_reason] ?? `No reply: ${m.no_reply_reason}`}</p>}
        {delivery(m)}
      </li>
    ))}
    {typing && <li class="typing">AI is typing…</li>}
  </ol>
  </div>
)
