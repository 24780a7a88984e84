/**
 * The operators' socket (docs/handoff.md, "The operators' socket"): joins `workspace.<id>` with the
 * console's token and hands `new_message`, `handoff`, `agent_typing` and `message_status` to whoever listens. Re-joins
 * after a reconnect, with each renewed token, and when the server ends the access of the token it used.
 */
import { io, type Socket } from "socket.io-client"
import { currentToken, onToken } from "./api.js"
import { connection } from "./state.js"

export interface NewMessageEvent {
  readonly conversation_id: number
  readonly message_id: string
  readonly role: "user" | "assistant"
  readonly sender: "contact" | "ai" | "operator"
  readonly sender_id: number | null
  readonly message: string | null
}
export interface HandoffEvent {
  readonly conversation_id: number
  readonly event: { readonly action: string; readonly to_state: string; readonly assignee_id: number | null }
}
/** A provider's receipt moved a sent message's `delivery_status`. */
export interface StatusEvent {
  readonly conversation_id: number
  readonly message_id: string
  readonly delivery_status: string
}
export interface TypingEvent {
  readonly conversation_id: number
  readonly typing: boolean
}

type Listener = {
  readonly message?: (e: NewMessageEvent) => void
  readonly handoff?: (e: HandoffEvent) => void
  readonly typing?: (e: TypingEvent) => void
  readonly status?: (e: StatusEvent) => void
}
const listeners = new Set<Listener>()
export const listen = (listener: Listener) => {
  listeners.add(listener)
  return () => void listeners.delete(listener)
}

let socket: Socket | undefined
let joined: number | undefined

const join = async (workspace: number) => {
  const token = await currentToken()
  socket?.emit("join-workspace", { workspace_id: workspace, token }, (ack: { status: boolean }) => {
    connection.value = ack.status ? "live" : "offline"
  })
}

/** Opens the socket at once (before the workspace is known), so joining waits for nothing but the token. */
export const connect = () => {
  if (socket !== undefined) return
  socket = io({ transports: ["websocket"] })
  socket.on("connect", () => void (joined !== undefined && join(joined)))
  socket.on("disconnect", () => (connection.value = "offline"))
  socket.on("new_message", (e: NewMessageEvent) => listeners.forEach((l) => l.message?.(e)))
  socket.on("handoff", (e: HandoffEvent) => listeners.forEach((l) => l.handoff?.(e)))
  socket.on("agent_typing", (e: TypingEvent) => listeners.forEach((l) => l.typing?.(e)))
  socket.on("message_status", (e: StatusEvent) => listeners.forEach((l) => l.status?.(e)))
  // the token it joined with was revoked or expired: join again with the current one (signed out: offline)
  socket.on("access_ended", () => {
    connection.value = "connecting"
    if (joined !== undefined) void join(joined)
  })
}

/** Follows one workspace; another one reconnects the socket first (rooms are per connection, and there is no leave). */
export const follow = (workspace: number) => {
  connect()
  if (joined === workspace) return
  const switching = joined !== undefined
  joined = workspace
  connection.value = "connecting"
  if (switching) {
    socket!.disconnect()
    socket!.connect()
  } else if (socket!.connected) void join(workspace)
}

onToken(() => {
  if (socket?.connected === true && joined !== undefined) void join(joined)
})
