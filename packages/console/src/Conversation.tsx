/**
 * One conversation: the handoff summary, the transcript (live), the operator's moves (take over, assign,
 * hand back with a note for the AI), the composer (text and files, drag and drop; approved templates once the
 * provider's window has closed) and internal notes.
 */
import { useSignal } from "@preact/signals"
import { useEffect, useRef } from "preact/hooks"
import { api, type ConversationFull, type Message, type MessagesPage } from "./api.js"
import { Composer } from "./Composer.js"
import { ContactPanel } from "./ContactPanel.js"
import { contactName, duration, kindLabel, now, since } from "./format.js"
import { refreshOne, typing } from "./inboxStore.js"
import { listen } from "./live.js"
import { OpportunityPanel } from "./OpportunityPanel.js"
import { fail, memberName, members, navigate, say, userId } from "./state.js"
import { TemplatePicker } from "./TemplatePicker.js"
import { Transcript } from "./Transcript.js"

/** The provider's window (WhatsApp: 24 hours after the contact's last message): time left, or closed. */
const ServiceWindow = ({ closesAt }: { closesAt: string }) => {
  // `now` re-renders this every 15 s, but may be up to 15 s behind: a window just opened would read "1 d left"
  const left = (Date.parse(closesAt) - Math.max(now.value, Date.now())) / 1000
  return left > 0
    ? (
      <span class="window" data-open="true" title={`Free-form messages until ${new Date(closesAt).toLocaleString()}`}>
        Window: {duration(left)} left
      </span>
    )
    : (
      <span class="window" data-open="false" title="Only an approved template may be sent until the contact writes">
        Window closed
      </span>
    )
}

const merge = (known: ReadonlyArray<Message>, fresh: ReadonlyArray<Message>) => {
  const byId = new Map(known.map((m) => [m.id, m]))
  for (const m of fresh) byId.set(m.id, m)
  return [...byId.values()].sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id))
}

const Notes = ({ c, onChange }: { c: ConversationFull; onChange: (c: ConversationFull) => void }) => {
  const draft = useSignal("")
  const add = async (e: Event) => {
    e.preventDefault()
    const text = draft.value.trim()
    if (text === "") return
    try {
      await api("PUT", `conversations/${c.id}`, { json: { notes: [...c.notes, text] } })
      onChange({ ...c, notes: [...c.notes, text] })
      draft.value = ""
      say("Note added")
    } catch (err) {
      fail(err)
    }
  }
  return (
    <details class="notes">
      <summary>Internal notes ({c.notes.length})</summary>
      <ul>{c.notes.map((n, i) => <li key={i}>{n}</li>)}</ul>
      <form onSubmit={add}>
        <label for="note">Add a note (only your team sees it)</label>
        <textarea id="note" rows={2} value={draft.value} onInput={(e) => (draft.value = e.currentTarget.value)} />
        <button type="submit">Add note</button>
      </form>
    </details>
  )
}

/** Take over, assign, hand back: each a handoff move of the public API. */
const Moves = ({ c, reload }: { c: ConversationFull; reload: () => Promise<void> }) => {
  const returning = useSignal(false)
  const note = useSignal("")
  const move = async (body: Record<string, unknown>, done: string) => {
    try {
      await api("POST", `conversations/${c.id}/handoff`, { json: body })
      say(done)
      returning.value = false
      note.value = ""
      await reload()
    } catch (e) {
      fail(e)
    }
  }
  const mine = c.handoff.state === "human" && c.handoff.assignee_id === userId.value
  return (
    <div class="moves">
      {c.handoff.state !== "human" || !mine
        ? (
          <button type="button" class="primary" onClick={() => move({ action: "take" }, "You have the conversation")}>
            Take over
          </button>
        )
        : null}
      <label>
        <span class="visually-hidden">Assign to</span>
        <select
          value=""
          onChange={(e) => {
            const id = Number(e.currentTarget.value)
            if (id > 0) void move({ action: "assign", assignee_id: id }, `Assigned to ${memberName(id)}`)
          }}
        >
          <option value="">Assign to…</option>
          {members.value.filter((m) => !(c.handoff.state === "human" && m.id === c.handoff.assignee_id)).map((m) => (
            <option key={m.id} value={m.id}>{m.name ?? m.email}</option>
          ))}
        </select>
      </label>
      {c.handoff.state === "ai" && (
        <button
          type="button"
          onClick={() => move({ action: "request", reason: "Asked from the console" }, "A person was asked for")}
        >
          Ask for a person
        </button>
      )}
      {c.handoff.state !== "ai" && (
        <button type="button" aria-expanded={returning.value} onClick={() => (returning.value = !returning.value)}>
          Hand back to AI
        </button>
      )}
      {returning.value && (
        <form
          class="return"
          onSubmit={(
            e
          ) => (e.preventDefault(),
            void move(
              { action: "return", ...(note.value.trim() === "" ? {} : { note: note.value.trim() }) },
              "Handed back to the AI"
            ))}
        >
          <label for="return-note">A note for the AI (optional)</label>
          <textarea
            id="return-note"
            rows={2}
            maxLength={4000}
            value={note.value}
            onInput={(e) => (note.value = e.currentTarget.value)}
          />
          <button type="submit" class="primary">Hand back</button>
        </form>
      )}
    </div>
  )
}

export const ConversationView = ({ id }: { id: number }) => {
  const detail = useSignal<ConversationFull | undefined>(undefined)
  const messages = useSignal<ReadonlyArray<Message>>([])
  const older = useSignal<string | null>(null)
  const bottom = useRef<HTMLDivElement>(null)

  const loadDetail = async () => {
    detail.value = await api<ConversationFull>("GET", `conversations/${id}`)
  }
  const loadNewest = async () => {
    const page = await api<MessagesPage>("GET", `conversations/${id}/messages`, { query: { per_page: 50 } })
    messages.value = merge(messages.value, page.messages)
    if (older.value === null && messages.value.length === page.messages.length) older.value = page.next_cursor
  }
  const reload = async () => {
    await Promise.all([loadDetail(), loadNewest()]).catch(fail)
    await refreshOne(id)
  }

  useEffect(() => {
    detail.value = undefined
    messages.value = []
    older.value = null
    void reload().then(() => api("POST", `conversations/${id}/read`).then(() => refreshOne(id)).catch(() => undefined))
    return listen({
      message: (e) => {
        if (e.conversation_id !== id) return
        void loadNewest().catch(fail)
        if (e.sender === "contact") {
          void api("POST", `conversations/${id}/read`).catch(() => undefined)
          // the contact's message opens the window again: free text instead of templates
          void loadDetail().catch(fail)
        }
      },
      handoff: (e) => void (e.conversation_id === id && loadDetail().catch(fail)),
      // a receipt: the newest page again, with the message's ticks
      status: (e) => void (e.conversation_id === id && loadNewest().catch(fail))
    })
  }, [id])

  useEffect(() => bottom.current?.scrollIntoView({ block: "end" }), [messages.value.length, typing.value.has(id)])

  const c = detail.value
  if (c === undefined) {
    return (
      <section class="conversation" aria-busy="true">
        <p class="boot">Loading the conversation…</p>
      </section>
    )
  }
  const loadOlder = async () => {
    if (older.value === null) return
    const page = await api<MessagesPage>("GET", `conversations/${id}/messages`, {
      query: { per_page: 50, cursor: older.value }
    })
    messages.value = merge(messages.value, page.messages)
    older.value = page.next_cursor
  }
  const windowClosed = c.service_window_closes_at !== null && Date.parse(c.service_window_closes_at) <= now.value
  return (
    <div class="conversation-layout">
      <section class="conversation" aria-labelledby="conversation-title">
        <header class="conv-head">
          <button type="button" class="back link" onClick={() => navigate({ page: "inbox" })}>← Inbox</button>
          <div>
            <h2 id="conversation-title">{contactName(c.contact)}</h2>
            <p class="sub">
              <span class={`badge state-${c.handoff.state}`} data-testid="handoff-state">
                {c.handoff.state === "waiting"
                  ? `Waiting for a person · ${since(c.handoff.requested_at)}`
                  : c.handoff.state === "human"
                  ? `With ${memberName(c.handoff.assignee_id)}`
                  : "The AI has it"}
              </span>
              {c.channel_kind !== null && (
                <span class="channel" data-kind={c.channel_kind}>{kindLabel(c.channel_kind)}</span>
              )}
              {c.service_window_closes_at !== null && <ServiceWindow closesAt={c.service_window_closes_at} />}
            </p>
          </div>
          <Moves c={c} reload={reload} />
        </header>
        {c.handoff.summary !== null && c.handoff.state !== "ai" && (
          <aside class="summary" aria-label="Handoff summary">
            <strong>Handoff summary</strong>
            {c.handoff.reason !== null && <p class="reason">Reason: {c.handoff.reason}</p>}
            <p>{c.handoff.summary}</p>
          </aside>
        )}
        <div class="scroll">
          {older.value !== null && (
            <button type="button" class="link" onClick={() => void loadOlder().catch(fail)}>Load older messages</button>
          )}
          <Transcript
            kind={c.channel_kind}
            messages={messages.value}
            moves={c.handoff_events}
            complete={older.value === null}
            typing={typing.value.has(id)}
          />
          <div ref={bottom} />
        </div>
        {windowClosed && c.channel_id !== null
          ? (
            <TemplatePicker
              key={id}
              channelId={c.channel_id}
              conversationId={id}
              onSent={() => void loadNewest().catch(fail)}
            />
          )
          : <Composer conversationId={id} onSent={() => void loadNewest().catch(fail)} />}
        <Notes c={c} onChange={(next) => (detail.value = next)} />
      </section>
      <div class="side">
        <ContactPanel conversation={c} />
        {c.opportunity !== null && <OpportunityPanel opportunityId={c.opportunity.id} onChange={reload} />}
      </div>
    </div>
  )
}
