/** The console's shared state: the user, the chosen workspace, the route, notices. Signals, read anywhere. */
import { computed, signal } from "@preact/signals"
import type { ChannelRecord, MeInfo, Member, PipelineRecord } from "./api.js"

export const me = signal<MeInfo | undefined>(undefined)
export const workspaceId = signal<number | undefined>(undefined)
export const pipelines = signal<ReadonlyArray<PipelineRecord>>([])
export const members = signal<ReadonlyArray<Member>>([])
export const channels = signal<ReadonlyArray<ChannelRecord>>([])
/** The socket's state, shown in the header: live updates need it. */
export const connection = signal<"connecting" | "live" | "offline">("connecting")

export const workspacePipelines = computed(() =>
  pipelines.value.filter((p) => p.workspace_id === workspaceId.value && !p.is_archived)
)

export const workspaceChannels = computed(() => channels.value.filter((c) => c.workspace_id === workspaceId.value))

export const userId = computed(() => me.value?.user.id)

export const memberName = (id: number | null | undefined) => {
  if (id === null || id === undefined) return "nobody"
  if (id === userId.value) return "you"
  const m = members.value.find((x) => x.id === id)
  return m === undefined ? `user ${id}` : (m.name ?? m.email)
}

/**
 * Routes: `/console` (inbox), `/console/c/<id>` (a conversation), `/console/board`, `/console/analytics`,
 * `/console/channels`, `/console/models`, `/console/knowledge` and a table's `/console/knowledge/<id>`.
 */
export type Route =
  | { readonly page: "inbox"; readonly conversationId?: number }
  | { readonly page: "board" }
  | { readonly page: "analytics" }
  | { readonly page: "channels" }
  | { readonly page: "models" }
  | { readonly page: "knowledge"; readonly tableId?: number }

export const parseRoute = (pathname: string): Route => {
  const conversation = /^\/console\/c\/(\d+)$/.exec(pathname)
  if (conversation !== null) return { page: "inbox", conversationId: Number(conversation[1]) }
  if (pathname === "/console/board") return { page: "board" }
  if (pathname === "/console/analytics") return { page: "analytics" }
  if (pathname === "/console/channels") return { page: "channels" }
  if (pathname === "/console/models") return { page: "models" }
  if (pathname === "/console/knowledge") return { page: "knowledge" }
  const table = /^\/console\/knowledge\/(\d+)$/.exec(pathname)
  if (table !== null) return { page: "knowledge", tableId: Number(table[1]) }
  return { page: "inbox" }
}

export const routePath = (route: Route) =>
  route.page === "inbox"
    ? (route.conversationId === undefined ? "/console" : `/console/c/${route.conversationId}`)
    : route.page === "knowledge" && route.tableId !== undefined
    ? `/console/knowledge/${route.tableId}`
    : `/console/${route.page}`

export const route = signal<Route>(parseRoute(location.pathname))

export const navigate = (next: Route) => {
  const path = routePath(next)
  if (path !== location.pathname) history.pushState(null, "", path)
  route.value = next
}

addEventListener("popstate", () => {
  route.value = parseRoute(location.pathname)
})

/** A short notice for the screen reader and the eye: errors of calls, confirmations of moves. */
export const notice = signal<{ readonly text: string; readonly error: boolean } | undefined>(undefined)
let noticeTimer: ReturnType<typeof setTimeout> | undefined
export const say = (text: string, error = false) => {
  notice.value = { text, error }
  clearTimeout(noticeTimer)
  noticeTimer = setTimeout(() => (notice.value = undefined), error ? 8000 : 4000)
}
export const fail = (e: unknown) => say(e instanceof Error ? e.message : String(e), true)
