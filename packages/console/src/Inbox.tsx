/**
 * The inbox: filters, then a virtualised list of conversations (only the rows in view are in the
 * document; pages load as it scrolls), waiting ones first with how long they have waited. Keys: j/k move,
 * Enter opens, e hands the open conversation back to the agent.
 */
import { useSignal } from "@preact/signals"
import { useEffect, useRef } from "preact/hooks"
import type { Conversation, StageRecord } from "./api.js"
import { api } from "./api.js"
import { clock, contactName, kindLabel, since } from "./format.js"
import { filters, loading, loadMore, nextCursor, reload, rows, selected, typing } from "./inboxStore.js"
import { fail, memberName, navigate, route, workspaceChannels, workspaceId, workspacePipelines } from "./state.js"

const ROW = 78
const OVERSCAN = 6

const stateLabel = (c: Conversation) => {
  switch (c.handoff.state) {
    case "waiting":
      return `Waiting ${since(c.handoff.requested_at)}`
    case "human":
      return `With ${memberName(c.handoff.assignee_id)}`
    default:
      return "AI"
  }
}

const Row = ({ c, index, active, open }: { c: Conversation; index: number; active: boolean; open: boolean }) => (
  <li
    id={`conversation-${c.id}`}
    role="option"
    aria-selected={active}
    aria-current={open ? "true" : undefined}
    data-state={c.handoff.state}
    data-id={c.id}
    class="row"
    style={{ top: `${index * ROW}px` }}
    onClick={() => {
      selected.value = index
      navigate({ page: "inbox", conversationId: c.id })
    }}
  >
    <div class="row-top">
      <strong class="name">{contactName(c.contact)}</strong>
      {c.channel_kind !== null && (
        <span class="kind" data-kind={c.channel_kind} title={kindLabel(c.channel_kind)}>
          {kindLabel(c.channel_kind)}
        </span>
      )}
      <span class={`badge state-${c.handoff.state}`}>{stateLabel(c)}</span>
    </div>
    <div class="row-bottom">
      <span class="preview">
        {typing.value.has(c.id) ? <em>AI is typing…</em> : (c.last_message_preview ?? "No messages yet")}
      </span>
      <span class="meta">
        {c.reply_failed && (
          <span class="reply-failed" title="The agent could not answer the last message">Reply failed</span>
        )}
        {c.unread_count > 0 && <span class="unread" aria-label={`${c.unread_count} unread`}>{c.unread_count}</span>}
        <time dateTime={c.last_message_at ?? c.created_at}>{clock(c.last_message_at ?? c.created_at)}</time>
      </span>
    </div>
  </li>
)

const FilterBar = () => {
  const stages = useSignal<ReadonlyArray<StageRecord>>([])
  const search = useSignal(filters.value.q ?? "")
  const pipelineId = filters.value.pipeline_id
  useEffect(() => {
    if (pipelineId === undefined) {
      stages.value = []
      return
    }
    api<ReadonlyArray<StageRecord>>("GET", `pipelines/${pipelineId}/stages`).then((s) => (stages.value = s), fail)
  }, [pipelineId])
  useEffect(() => {
    const t = setTimeout(() => {
      const q = search.value.trim()
      if ((filters.value.q ?? "") !== q) filters.value = { ...filters.value, q: q === "" ? undefined : q }
    }, 250)
    return () => clearTimeout(t)
  }, [search.value])
  const set = (patch: Partial<typeof filters.value>) => (filters.value = { ...filters.value, ...patch })
  const num = (v: string) => (v === "" ? undefined : Number(v))
  return (
    <form class="filters" role="search" aria-label="Filter conversations" onSubmit={(e) => e.preventDefault()}>
      <label class="grow">
        <span class="visually-hidden">Search contacts and messages</span>
        <input
          type="search"
          placeholder="Search contacts and messages"
          value={search.value}
          onInput={(e) => (search.value = e.currentTarget.value)}
        />
      </label>
      <label>
        <span class="visually-hidden">Pipeline</span>
        <select
          value={pipelineId ?? ""}
          onChange={(e) => set({ pipeline_id: num(e.currentTarget.value), stage_id: undefined })}
        >
          <option value="">All pipelines</option>
          {workspacePipelines.value.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
        </select>
      </label>
      <label>
        <span class="visually-hidden">Stage</span>
        <select
          value={filters.value.stage_id ?? ""}
          disabled={pipelineId === undefined}
          onChange={(e) => set({ stage_id: num(e.currentTarget.value) })}
        >
          <option value="">All stages</option>
          {stages.value.map((s) => <option key={s.id} value={s.id}>{s.name}</option>)}
        </select>
      </label>
      <label>
        <span class="visually-hidden">Channel</span>
        <select
          value={filters.value.channel_id ?? ""}
          onChange={(e) => set({ channel_id: num(e.currentTarget.value) })}
        >
          <option value="">All channels</option>
          {workspaceChannels.value.map((c) => <option key={c.id} value={c.id}>{c.name} ({c.kind})</option>)}
        </select>
      </label>
      <label>
        <span class="visually-hidden">Channel kind</span>
        <select
          value={filters.value.channel_kind ?? ""}
          onChange={(e) => set({ channel_kind: e.currentTarget.value === "" ? undefined : e.currentTarget.value })}
        >
          <option value="">All kinds</option>
          {[...new Set(workspaceChannels.value.map((c) => c.kind))].map((kind) => (
            <option key={kind} value={kind}>{kindLabel(kind)}</option>
          ))}
        </select>
      </label>
      <label>
        <span class="visually-hidden">Handoff state</span>
        <select
          value={filters.value.handoff ?? ""}
          onChange={(e) => set({ handoff: (e.currentTarget.value || undefined) as never })}
        >
          <option value="">Everyone</option>
          <option value="waiting">Waiting for a person</option>
          <option value="human">With an operator</option>
          <option value="ai">With the AI</option>
        </select>
      </label>
      <label class="check">
        <input
          type="checkbox"
          checked={filters.value.unread === true}
          onChange={(e) => set({ unread: e.currentTarget.checked || undefined })}
        />
        Unread
      </label>
    </form>
  )
}

export const Inbox = () => {
  const list = useRef<HTMLUListElement>(null)
  const scrollTop = useSignal(0)
  const height = useSignal(600)
  const openId = route.value.page === "inbox" ? route.value.conversationId : undefined

  useEffect(() => {
    void reload()
  }, [filters.value, workspaceId.value])

  useEffect(() => {
    const el = list.current
    if (el === null) return
    const observer = new ResizeObserver(() => (height.value = el.clientHeight))
    observer.observe(el)
    return () => observer.disconnect()
  }, [])

  // keep the selected row in view when keys move it
  useEffect(() => {
    const el = list.current
    if (el === null) return
    const top = selected.value * ROW
    if (top < el.scrollTop) el.scrollTop = top
    else if (top + ROW > el.scrollTop + el.clientHeight) el.scrollTop = top + ROW - el.clientHeight
  }, [selected.value])

  const all = rows.value
  const first = Math.max(0, Math.floor(scrollTop.value / ROW) - OVERSCAN)
  const last = Math.min(all.length, Math.ceil((scrollTop.value + height.value) / ROW) + OVERSCAN)
  const active = all[selected.value]

  return (
    <section class="inbox" aria-label="Inbox">
      <FilterBar />
      <p class="count" aria-live="polite">
        {loading.value && all.length === 0
          ? "Loading…"
          : `${all.length}${nextCursor.value !== null ? "+" : ""} ${
            all.length === 1 && nextCursor.value === null ? "conversation" : "conversations"
          }`}
      </p>
      <ul
        ref={list}
        class="rows"
        role="listbox"
        tabIndex={0}
        aria-label="Conversations"
        aria-activedescendant={active === undefined ? undefined : `conversation-${active.id}`}
        onScroll={(e) => {
          const el = e.currentTarget
          scrollTop.value = el.scrollTop
          if (el.scrollTop + el.clientHeight > el.scrollHeight - ROW * 10) void loadMore()
        }}
      >
        <li class="spacer" role="presentation" aria-hidden="true" style={{ height: `${all.length * ROW}px` }} />
        {all.slice(first, last).map((c, i) => (
          <Row key={c.id} c={c} index={first + i} active={first + i === selected.value} open={c.id === openId} />
        ))}
        {all.length === 0 && !loading.value && <li class="empty">No conversations match.</li>}
      </ul>
    </section>
  )
}
