/**
 * The web-chat live stream (SPEC.md 6.1): socket.io on the api listener. A client connects, emits
 * `join-channel` with `{channel, app_key, token}` from Initiate (SPEC.md 2.8) and then receives
 * `new_message` for that conversation.
 *
 * Operators (docs/handoff.md) emit `join-workspace` with `{workspace_id, token}` (a personal access or
 * OAuth token with `conversations:read` of a user of that workspace) and receive, on `workspace.<id>`,
 * `new_message` for every message of the workspace, `handoff` for every handoff transition and
 * `agent_typing` (with its conversation) while the agent writes a reply.
 */
import { conversationChannel, verifySocketToken } from "@parley/domain"
import { createAdapter } from "@socket.io/postgres-adapter"
import { Effect, Layer, Option, Redacted, Runtime, Schema, Stream } from "effect"
import type * as Http from "node:http"
import type { Duplex } from "node:stream"
import pg from "pg"
import { Server, type Socket } from "socket.io"
import { AppConfig } from "../config/AppConfig.js"
import { AppSecret } from "../config/AppSecret.js"
import { ApiListener } from "../http/Listener.js"
import { Identity } from "../identity/Identity.js"
import type { Grant } from "../identity/TokenAuth.js"

export const NEW_MESSAGE_EVENT = "new_message"
/** A provider's receipt moved a sent message's `delivery_status` (to the workspace's operators). */
export const MESSAGE_STATUS_EVENT = "message_status"
/** A provider channel was disconnected (its token revoked) or reconnected (to the workspace's operators). */
export const CHANNEL_STATUS_EVENT = "channel_status"
export const JOIN_CHANNEL_EVENT = "join-channel"
export const JOIN_WORKSPACE_EVENT = "join-workspace"
export const HANDOFF_EVENT = "handoff"
/** To a conversation's channel: who has it now, `{ state }` (the widget's person button follows it). */
export const HANDOFF_STATE_EVENT = "handoff_state"
/**
 * To an operator's socket whose access to a workspace ended (token revoked or expired, signed out, membership lost).
 */
export const ACCESS_ENDED_EVENT = "access_ended"
export const workspaceChannel = (workspaceId: number) => `workspace.${workspaceId}`
/**
 * `{typing: true}` when the agent starts on a reply, `{typing: false}` when it stops without one; the
 * operators' room gets `{conversation_id, typing}`.
 */
export const AGENT_TYPING_EVENT = "agent_typing"
/** engine.io's own path check: `path === req.url.slice(0, path.length)`. */
const SOCKET_IO_PATH = "/socket.io/"

const JoinChannel = Schema.Struct({ channel: Schema.String, app_key: Schema.String, token: Schema.String })
const decodeJoinChannel = Schema.decodeUnknownOption(JoinChannel)
const JoinWorkspace = Schema.Struct({ workspace_id: Schema.Number, token: Schema.String })
const decodeJoinWorkspace = Schema.decodeUnknownOption(JoinWorkspace)

/** The token an operator's socket joined a workspace with (its latest join), and the timer of its expiry. */
interface WorkspaceAccess {
  readonly token: string
  timer: ReturnType<typeof setTimeout> | undefined
}

export class Realtime extends Effect.Service<Realtime>()("@parley/server/Realtime", {
  dependencies: [AppConfig.Default, AppSecret.Default, Identity.Default],
  scoped: Effect.gen(function*() {
    const config = yield* AppConfig
    const secret = yield* AppSecret
    const identity = yield* Identity
    const runtime = yield* Effect.runtime<never>()
    const logWarning = (message: string, cause: unknown) =>
      Runtime.runFork(runtime)(Effect.logWarning(message, cause).pipe(Effect.annotateLogs("component", "Realtime")))

    const io = new Server({
      serveClient: false,
      cors: { origin: true, credentials: false },
      perMessageDeflate: false,
      // clients only ever send join-channel
      maxHttpBufferSize: 16 * 1024
    })

    // Several api nodes behind a load balancer each hold their own sockets, so with DATABASE_URL every
    // `new_message` goes through Postgres LISTEN/NOTIFY (@socket.io/postgres-adapter, maintained by the
    // socket.io team, for socket.io-adapter ^2.5: the ClusterAdapter of socket.io 4.8) and reaches the
    // room on every node. It needs no broker beyond the database we already require, and holds one
    // connection of its own small pool for LISTEN. The embedded database is one process by construction
    // (the data dir is locked), so the default in-memory adapter is exact there.
    if (Option.isSome(config.databaseUrl)) {
      const url = config.databaseUrl.value
      // Every broadcast is one `select pg_notify(...)` on this pool (several per reply: the message, typing
      // on and off, to the conversation and to the workspace). Committed durably each cost a WAL flush, and
      // at a few hundred a second the two free connections fell behind: the pool's queue of waiting
      // NOTIFYs grew without bound (30,000 after 8,000 replies, the soak's heap rising 14 KB a reply, and
      // other nodes hearing of messages minutes late). A notification needs no durability, so its commit
      // does not wait for the flush; and a broadcast that cannot get a connection within 10 s fails (the
      // error handler logs it) instead of waiting for ever, which bounds the queue.
      const pool = yield* Effect.acquireRelease(
        Effect.sync(() =>
          new pg.Pool({
            connectionString: Redacted.value(url),
            max: 4,
            options: "-c synchronous_commit=off",
            connectionTimeoutMillis: 10_000
          })
        ),
        (pool) => Effect.promise(() => pool.end())
      )
      pool.on("error", (error) => logWarning("socket.io adapter: idle Postgres connection failed", error))
      // the adapter keeps one client checked out for LISTEN and listens for its "end" only: without an
      // error listener a Postgres restart would crash the process, and the ended client would hold a pool
      // slot for good (the adapter takes a new one and LISTENs again by itself)
      pool.on("connect", (client) => {
        client.on("error", (error) => logWarning("socket.io adapter: Postgres connection failed", error))
        client.once("end", () => {
          const checkedOut = client as pg.PoolClient
          try {
            checkedOut.release?.(new Error("connection ended"))
          } catch {
            // it was idle in the pool, which removes it itself
          }
        })
      })
      // payloads over NOTIFY's 8000 bytes travel through `socket_io_attachments` (migration 0006)
      io.adapter(
        createAdapter(pool, { errorHandler: (error) => logWarning("socket.io adapter: Postgres error", error) })
      )
    }
    yield* Effect.addFinalizer(() => Effect.promise(async () => io.of("/").adapter.close()))

    const socketKey = secret.socketKey
    const socketAppKey = secret.socketAppKey
    // One handler for every socket (socket.io calls it with the socket as `this`): per-socket memory
    // stays what socket.io itself keeps.
    function onJoinChannel(this: Socket, payload: unknown, ack?: unknown) {
      const conversationId = Option.flatMap(
        decodeJoinChannel(payload),
        (join) =>
          join.app_key === socketAppKey
            ? Option.fromNullable(verifySocketToken(socketKey, join.token, join.channel, Math.floor(Date.now() / 1000)))
            : Option.none()
      )
      // SPEC.md 5 point 5: an invalid join disconnects without an error response
      if (Option.isNone(conversationId)) {
        this.disconnect(true)
        return
      }
      const channel = conversationChannel(conversationId.value)
      void this.join(channel)
      if (typeof ack === "function") ack({ status: true, channel })
    }
    /**
     * An operator's socket stays in `workspace.<id>` only while the token it joined with (its latest join)
     * still reads that workspace's conversations: every change to tokens, sessions or memberships, here or
     * in another api process (TokenAuth's NOTIFY), checks each such socket again, and the token's expiry
     * ends it on time. An ended access leaves the room and tells the socket `access_ended`.
     */
    const operators = new Map<Socket, Map<number, WorkspaceAccess>>()
    let generation = 0
    const mayRead = (token: string, workspaceId: number) =>
      identity.authenticateGrant(Redacted.make(token), undefined).pipe(
        Effect.flatMap((grant) => Effect.as(identity.requireScope(grant.actor, "conversations:read"), grant)),
        Effect.map((grant) =>
          grant.actor.workspaceIds.includes(workspaceId as never) ? Option.some(grant) : Option.none()
        ),
        Effect.orElseSucceed(() => Option.none<Grant>())
      )
    const endAccess = (socket: Socket, workspaceId: number, access: WorkspaceAccess) => {
      const held = operators.get(socket)
      if (held?.get(workspaceId) !== access) return // joined again meanwhile: the newer join decides
      clearTimeout(access.timer)
      held.delete(workspaceId)
      void socket.leave(workspaceChannel(workspaceId))
      socket.emit(ACCESS_ENDED_EVENT, { workspace_id: workspaceId })
    }
    /** Checks one held access again; ends it unless its token still reads the workspace. */
    const recheck = (socket: Socket, workspaceId: number, access: WorkspaceAccess) =>
      Effect.map(mayRead(access.token, workspaceId), (grant) => {
        if (Option.isNone(grant)) endAccess(socket, workspaceId, access)
      })
    const hold = (socket: Socket, workspaceId: number, token: string, expiresAt: number | null) => {
      const held = operators.get(socket) ?? new Map<number, WorkspaceAccess>()
      operators.set(socket, held)
      const previous = held.get(workspaceId)
      if (previous !== undefined) clearTimeout(previous.timer)
      const access: WorkspaceAccess = { token, timer: undefined }
      if (expiresAt !== null) {
        // a timer holds at most 2^31-1 ms: a later expiry is checked again then
        const delay = Math.min(Math.max(0, expiresAt - Date.now()), 2_147_483_647)
        access.timer = setTimeout(() => Runtime.runFork(runtime)(recheck(socket, workspaceId, access)), delay)
      }
      held.set(workspaceId, access)
      void socket.join(workspaceChannel(workspaceId))
    }
    const forgetSocket = (socket: Socket) => {
      for (const access of operators.get(socket)?.values() ?? []) clearTimeout(access.timer)
      operators.delete(socket)
    }
    yield* Stream.fromPubSub(identity.identityChanges).pipe(
      Stream.runForEach(() => {
        generation++
        const held = Array.from(
          operators,
          ([socket, accesses]) => Array.from(accesses, ([id, access]) => recheck(socket, id, access))
        )
        return Effect.all(held.flat(), { concurrency: 8, discard: true })
      }),
      Effect.catchAllCause((cause) => Effect.logError("operators' socket access check failed", cause)),
      Effect.forever,
      Effect.forkScoped
    )

    /** An operator's socket: the token must read conversations of that workspace; otherwise an error ack. */
    const joinWorkspace = (socket: Socket, payload: unknown, ack: unknown) => {
      const answer = (body: unknown) => (typeof ack === "function" ? ack(body) : undefined)
      const join = decodeJoinWorkspace(payload)
      if (Option.isNone(join)) return answer({ status: false, message: "Send {workspace_id, token}" })
      const { token, workspace_id } = join.value
      // a change seen while the check ran may have ended this token: check until none came in between
      const check: Effect.Effect<Option.Option<Grant>> = Effect.suspend(() => {
        const seen = generation
        return Effect.flatMap(
          mayRead(token, workspace_id),
          (grant) => (generation === seen ? Effect.succeed(grant) : check)
        )
      })
      Runtime.runFork(runtime)(Effect.map(check, (grant) => {
        if (Option.isNone(grant)) {
          return answer({ status: false, message: "This token cannot read that workspace's conversations" })
        }
        if (!socket.connected) return
        hold(socket, workspace_id, token, grant.value.tokenExpiresAt)
        return answer({ status: true, channel: workspaceChannel(workspace_id) })
      }))
    }
    io.on("connection", (socket) => {
      socket.on(JOIN_CHANNEL_EVENT, onJoinChannel)
      socket.on(JOIN_WORKSPACE_EVENT, (payload: unknown, ack?: unknown) => joinWorkspace(socket, payload, ack))
      socket.on("disconnect", () => forgetSocket(socket))
    })

    /**
     * Serves socket.io on `server` (`/socket.io/`) until the scope closes. Call it once the Effect
     * listener serves: engine.io wraps the "request" listeners present at attach time.
     */
    const attach = (server: Http.Server) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          // NodeHttpServer answers every "upgrade" with the router (a 404 for /socket.io/), so the
          // websocket transport never connected: its listeners now skip socket.io's path
          // (stack-findings Q5(b)).
          type UpgradeListener = (req: Http.IncomingMessage, socket: Duplex, head: Buffer) => void
          const effectUpgrades = server.listeners("upgrade") as Array<UpgradeListener>
          server.removeAllListeners("upgrade")
          for (const listener of effectUpgrades) {
            server.on("upgrade", (req: Http.IncomingMessage, socket: Duplex, head: Buffer) => {
              if (!req.url?.startsWith(SOCKET_IO_PATH)) listener.call(server, req, socket, head)
            })
          }
          io.attach(server)
        }),
        // local only: with the Postgres adapter, `io.disconnectSockets` would reach every node
        () =>
          Effect.sync(() => {
            io.local.disconnectSockets(true)
            io.engine.close()
          })
      )

    const publish = Effect.fn("Realtime.publish")(function*(conversationId: number, messages: ReadonlyArray<unknown>) {
      yield* Effect.annotateCurrentSpan("conversation.id", conversationId)
      io.to(conversationChannel(conversationId)).emit(NEW_MESSAGE_EVENT, messages)
    })

    /** `new_message` (with its conversation) and `handoff` to the operators of a workspace. */
    const toWorkspace = (workspaceId: number, event: string, payload: unknown) =>
      Effect.sync(() => void io.to(workspaceChannel(workspaceId)).emit(event, payload))

    /** Who has the conversation now (`ai`, `waiting`, `human`), for the contact's chat (the widget's person button). */
    const handoffState = (conversationId: number, state: string) =>
      Effect.sync(() => void io.to(conversationChannel(conversationId)).emit(HANDOFF_STATE_EVENT, { state }))

    const typing = (conversationId: number, workspaceId: number, typing: boolean) =>
      Effect.sync(() => {
        io.to(conversationChannel(conversationId)).emit(AGENT_TYPING_EVENT, { typing })
        io.to(workspaceChannel(workspaceId)).emit(AGENT_TYPING_EVENT, { conversation_id: conversationId, typing })
      })

    return { publish, typing, attach, toWorkspace, handoffState } as const
  })
}) {}

/**
 * socket.io on the api listener. `Realtime` itself needs no listener, so services (and a worker
 * without one) can publish; this layer only serves it on the api port.
 */
export const RealtimeLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const { server } = yield* ApiListener
    const realtime = yield* Realtime
    yield* realtime.attach(server)
  })
).pipe(Layer.provideMerge(Realtime.Default))
