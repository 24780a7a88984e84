/**
 * The inbox's rows: pages of `GET /api/user/conversations?order=queue` (waiting for a person first,
 * longest waiting first; then the caller's; then the rest by activity), kept live from the socket: an
 * event re-reads its one conversation and puts it where the server's order would.
 */
import { batch, signal } from "@preact/signals"
import { api, type Conversation, type ConversationList } from "./api.js"
import { listen } from "./live.js"
import { fail, userId, workspaceId } from "./state.js"

export interface Filters {
  readonly pipeline_id?: number | undefined
  readonly stage_id?: number | undefined
  readonly channel_id?: number | undefined
  readonly channel_kind?: string | undefined
  readonly handoff?: "ai" | "waiting" | "human" | undefined
  readonly unread?: boolean | undefined
  readonly q?: string | undefined
}

export const PAGE = 50
export const filters = signal<Filters>({})
export const rows = signal<ReadonlyArray<Conversation>>([])
export const nextCursor = signal<string | null>(null)
export const loading = signal(false)
export const selected = signal(0)
/** Conversations whose agent is composing a reply right now. */
export const typing = signal<ReadonlySet<number>>(new Set())

const query = (cursor?: string) => ({
  ...filters.value,
  unread: filters.value.unread === true ? "true" : undefined,
  workspace_id: workspaceId.value,
  order: "queue",
  per_page: PAGE,
  cursor
})

let generation = 0

/** The first page for the current filters. */
export const reload = async () => {
  const mine = ++generation
  loading.value = true
  try {
    const page = await api<ConversationList>("GET", "conversations", { query: query() })
    if (mine !== generation) return
    batch(() => {
      rows.value = page.conversations
      nextCursor.value = page.next_cursor
      selected.value = Math.min(selected.value, Math.max(0, page.conversations.length - 1))
    })
  } catch (e) {
    fail(e)
  } finally {
    if (mine === generation) loading.value = false
  }
}

/** The next page, when the list is scrolled near its end. */
export const loadMore = async () => {
  const cursor = nextCursor.value
  if (cursor === null || loading.value) return
  const mine = generation
  loading.value = true
  try {
    const page = await api<ConversationList>("GET", "conversations", { query: query(cursor) })
    if (mine !== generation) return
    const seen = new Set(rows.value.map((r) => r.id))
    batch(() => {
      rows.value = [...rows.value, ...page.conversations.filter((c) => !seen.has(c.id))]
      nextCursor.value = page.next_cursor
    })
  } catch (e) {
    fail(e)
  } finally {
    if (mine === generation) loading.value = false
  }
}

/** The server's queue order, for placing a row that changed. */
const rank = (
  c: Conversation
) => (c.handoff.state === "waiting" ? 0 : c.handoff.state === "human" && c.handoff.assignee_id === userId.value ? 1 : 2)
const activity = (c: Conversation) => Date.parse(c.last_message_at ?? c.created_at)
export const queueOrder = (a: Conversation, b: Conversation) =>
  rank(a) - rank(b) ||
  (rank(a) === 0
    ? Date.parse(a.handoff.requested_at ?? a.created_at) - Date.parse(b.handoff.requested_at ?? b.created_at)
    : activity(b) - activity(a)) ||
  a.id - b.id

/** Whether a row belongs under the current filters (those a client can check; search is the server's). */
const matches = (c: Conversation) => {
  const f = filters.value
  if (f.q !== undefined && f.q !== "") return false
  if (f.pipeline_id !== undefined && c.opportunity?.pipeline_id !== f.pipeline_id) return false
  if (f.stage_id !== undefined && c.opportunity?.stage_id !== f.stage_id) return false
  if (f.channel_id !== undefined && c.channel_id !== f.channel_id) return false
  if (f.channel_kind !== undefined && c.channel_kind !== f.channel_kind) return false
  if (f.handoff !== undefined && c.handoff.state !== f.handoff) return false
  if (f.unread === true && c.unread_count === 0) return false
  return true
}

/** Puts a fresh copy of one conversation in its place (or takes it out when it no longer matches). */
export const upsert = (c: Conversation) => {
  const known = rows.value.some((r) => r.id === c.id)
  if (!known && !matches(c)) return
  const rest = rows.value.filter((r) => r.id !== c.id)
  const next = known && !matches(c) && filters.value.q === undefined ? rest : [...rest, c]
  // a row past the loaded pages stays for the page that brings it
  const last = rows.value[rows.value.length - 1]
  const sorted = next.slice().sort(queueOrder)
  rows.value = nextCursor.value !== null && last !== undefined && !known && queueOrder(c, last) > 0
    ? sorted.filter((r) => r.id !== c.id)
    : sorted
}

export const refreshOne = async (conversationId: number) => {
  try {
    upsert(await api<Conversation>("GET", `conversations/${conversationId}`))
  } catch (e) {
    // a conversation of another workspace or one just deleted: nothing to show
    if (!(e instanceof Error && "status" in e && (e as { status: number }).status === 404)) fail(e)
  }
}

listen({
  message: (e) => {
    // a reply ends the agent's typing (the socket says `typing: false` only when no reply came)
    if (e.sender === "ai" && typing.value.has(e.conversation_id)) {
      const next = new Set(typing.value)
      next.delete(e.conversation_id)
      typing.value = next
    }
    void refreshOne(e.conversation_id)
  },
  handoff: (e) => void refreshOne(e.conversation_id),
  typing: (e) => {
    const next = new Set(typing.value)
    if (e.typing) next.add(e.conversation_id)
    else next.delete(e.conversation_id)
    typing.value = next
  }
})
