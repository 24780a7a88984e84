/**
 * The contact beside a conversation, across its channels: one contact may write on the web chat, WhatsApp,
 * Telegram... (docs/channels.md, "One contact on every channel"), so the operator sees every conversation of it
 * (`GET /api/user/conversations?contact_id=`) and opens another one to continue the contact there: writing in
 * that conversation is how a contact is continued on another channel, under that channel's rules (its window).
 */
import { useSignal } from "@preact/signals"
import { useEffect } from "preact/hooks"
import { api, type Conversation, type ConversationFull, type ConversationList } from "./api.js"
import { clock, contactName, kindLabel } from "./format.js"
import { rows } from "./inboxStore.js"
import { listen } from "./live.js"
import { channels, fail, navigate } from "./state.js"

/** The newest first; more than this many conversations of one contact is past what a side panel can show. */
const PER_PAGE = 50

/** How the conversation's channel is named: its kind as operators say it, then the channel's own name. */
const channelTitle = (c: Conversation) => {
  const kind = c.channel_kind === null ? "No channel" : kindLabel(c.channel_kind)
  if (c.channel_id === null) return kind
  const name = channels.value.find((ch) => ch.id === c.channel_id)?.name ?? `Channel ${c.channel_id}`
  return `${kind}: ${name}`
}

const Item = ({ c, current }: { c: Conversation; current: boolean }) => (
  <li class="contact-conversation" data-id={c.id} data-current={current}>
    <div class="row-top">
      <a
        href={`/console/c/${c.id}`}
        aria-current={current ? "page" : undefined}
        onClick={(e) => {
          // a plain click opens it in the inbox as a row does; a modified one is the browser's (a new tab)
          if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) {
            return
          }
          e.preventDefault()
          if (!current) {
            navigate({ page: "inbox", conversationId: c.id })
          }
        }}
      >
        {channelTitle(c)}
      </a>
      {current && <span class="badge">This one</span>}
    </div>
    <div class="row-bottom">
      <span class="preview">{c.last_message_preview ?? "No messages yet"}</span>
      <span class="meta">
        {c.unread_count > 0 && <span class="unread" aria-label={`${c.unread_count} unread`}>{c.unread_count}</span>}
        <time dateTime={c.last_message_at ?? c.created_at}>{clock(c.last_message_at ?? c.created_at)}</time>
      </span>
    </div>
  </li>
)

export const ContactPanel = ({ conversation }: { conversation: ConversationFull }) => {
  const contact = conversation.contact
  const list = useSignal<ReadonlyArray<Conversation> | undefined>(undefined)
  const more = useSignal(false)

  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined
    let stopped = false
    const load = async () => {
      const page = await api<ConversationList>("GET", "conversations", {
        query: { contact_id: contact.id, order: "activity", per_page: PER_PAGE }
      })
      if (stopped) return
      list.value = page.conversations
      more.value = page.next_cursor !== null
    }
    // a burst of messages is one reload
    const soon = () => {
      clearTimeout(timer)
      timer = setTimeout(() => void load().catch(fail), 300)
    }
    void load().catch(fail)
    /** Whether an event's conversation may be one of this contact's: one listed, or one not known to be another's. */
    const concerns = (id: number) => {
      if (list.value?.some((c) => c.id === id) === true) return true
      const row = rows.value.find((r) => r.id === id)
      return row === undefined || row.contact.id === contact.id
    }
    // a new message moves a row's preview and time, or brings a conversation of the contact on a new channel
    const stop = listen({ message: (e) => void (concerns(e.conversation_id) && soon()) })
    return () => {
      stopped = true
      clearTimeout(timer)
      stop()
    }
  }, [contact.id])

  const all = list.value
  return (
    <aside class="panel contact-panel" aria-labelledby="contact-title" aria-busy={all === undefined}>
      <h2 id="contact-title">Contact</h2>
      <dl>
        <dt>Name</dt>
        <dd>{contactName(contact)}</dd>
        <dt>Phone</dt>
        <dd>{contact.phone ?? "—"}</dd>
        <dt>Email</dt>
        <dd>{contact.email ?? "—"}</dd>
      </dl>
      <h3 id="contact-conversations">
        Conversations{all === undefined ? "" : ` (${all.length}${more.value ? "+" : ""})`}
      </h3>
      {all === undefined
        ? <p class="hint">Loading…</p>
        : (
          <ul class="contact-conversations" aria-labelledby="contact-conversations">
            {all.map((c) => <Item key={c.id} c={c} current={c.id === conversation.id} />)}
          </ul>
        )}
    </aside>
  )
}
