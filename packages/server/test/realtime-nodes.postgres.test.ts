/**
 * socket.io across api nodes (docs/operations.md: "socket.io events reach sockets on every api process
 * through the Postgres LISTEN/NOTIFY adapter"): two api listeners, each with its own Realtime, on one
 * native database from the template (with DATABASE_URL, so through @socket.io/postgres-adapter). A client
 * joined on node A receives what node B publishes, payloads over NOTIFY's limit included. Native Postgres
 * only: PGlite behind pglite-socket is one session, so a NOTIFY never reaches another node's LISTEN
 * connection there (realtime.http.test.ts covers the adapter on one node on both databases).
 */
import { expect, it } from "@effect/vitest"
import { conversationChannel, signSocketToken } from "@parley/domain"
import { Context, Effect, Layer } from "effect"
import { io, type Socket } from "socket.io-client"
import { AppConfig } from "../src/config/AppConfig.js"
import { AppSecret } from "../src/config/AppSecret.js"
import { SqlLive } from "../src/db/Database.js"
import { NotFoundRoute } from "../src/http/ApiRoutes.js"
import { ApiPolicy } from "../src/http/BodyLimits.js"
import { ApiListener, listen } from "../src/http/Listener.js"
import { Identity } from "../src/identity/Identity.js"
import { Realtime, RealtimeLive } from "../src/realtime/Realtime.js"
import { createNativeDatabase, queryUrl } from "./support/NativeDatabase.js"
import { fieldOf } from "./support/SocketEvents.js"
import { seedUser, testConfig } from "./support/TestServer.js"

/** How long a probe may take before the next is sent; probes go on for at most LISTEN_WAIT_MS. */
const PROBE_EVERY_MS = 500
const LISTEN_WAIT_MS = 30_000
const WAIT_MS = 10_000

/** One api node: its listener with socket.io on it, and its Realtime (for the test scope). */
const node = (url: string) =>
  Effect.map(
    Layer.build(
      RealtimeLive.pipe(
        Layer.provideMerge(listen(ApiListener, NotFoundRoute, { host: "127.0.0.1", port: 0, policy: ApiPolicy })),
        Layer.provideMerge(AppSecret.Default),
        Layer.provideMerge(Identity.Default),
        Layer.provideMerge(SqlLive),
        Layer.provideMerge(AppConfig.Default),
        Layer.provide(testConfig({ DATABASE_URL: url }))
      )
    ),
    (context) => ({
      url: Context.get(context, ApiListener).url,
      realtime: Context.get(context, Realtime),
      secret: Context.get(context, AppSecret),
      identity: Context.get(context, Identity),
      services: Layer.succeed(Identity, Context.get(context, Identity))
    })
  )

/** A socket.io client recording its `new_message`s; `until` waits (up to `ms`) for `check` to hold on them. */
const client = (url: string) =>
  Effect.gen(function*() {
    const messages: Array<unknown> = []
    const socket = yield* Effect.acquireRelease(
      Effect.sync(() => io(url, { forceNew: true, reconnection: false, transports: ["websocket"] })),
      (socket) => Effect.sync(() => socket.close())
    )
    socket.on("new_message", (payload: unknown) => messages.push(payload))
    yield* Effect.promise(() =>
      new Promise<void>((resolve, reject) => {
        socket.once("connect", () => resolve())
        socket.once("connect_error", reject)
      })
    )
    const until = (check: (messages: ReadonlyArray<unknown>) => boolean, ms: number) =>
      Effect.promise(() =>
        new Promise<boolean>((resolve) => {
          const deadline = Date.now() + ms
          const look = () => {
            if (check(messages)) return resolve(true)
            if (Date.now() > deadline) return resolve(false)
            setTimeout(look, 10)
          }
          look()
        })
      )
    return { socket: socket as Socket, messages, until }
  })

const isProbe = (payload: unknown) => Array.isArray(payload) && typeof payload[0]?.probe === "number"

it.live(
  "a client joined on one api node receives what another node publishes, payloads over NOTIFY's limit included",
  () =>
    Effect.gen(function*() {
      const db = yield* Effect.acquireRelease(
        Effect.promise(() => createNativeDatabase()),
        (db) => Effect.promise(db.drop)
      )
      const a = yield* node(db.url)
      const b = yield* node(db.url)
      const conversationId = 4_242
      const viewer = yield* client(a.url)
      const ack = yield* Effect.promise(() =>
        viewer.socket.timeout(WAIT_MS).emitWithAck("join-channel", {
          channel: conversationChannel(conversationId),
          app_key: a.secret.socketAppKey,
          token: signSocketToken(a.secret.socketKey, conversationId, Math.floor(Date.now() / 1000))
        })
      )
      expect(ack).toEqual({ status: true, channel: conversationChannel(conversationId) })

      // node A's adapter LISTENs once it has a connection: until then B's NOTIFYs are lost, so B sends
      // probes until one comes through (a slow one may still arrive later: probes are told apart by content)
      const listening = Date.now()
      let probes = 0
      while (
        !(yield* viewer.until((ms) => ms.some(isProbe), PROBE_EVERY_MS))
      ) {
        expect(Date.now() - listening, "no probe from node B reached node A's client").toBeLessThan(LISTEN_WAIT_MS)
        yield* b.realtime.publish(conversationId, [{ probe: ++probes }])
      }

      const small = [{ message: "from node B", cost: 0.0042, message_id: "msg-b", role: "assistant" }]
      const large = [{ message: "x".repeat(20_000), cost: 0.5 }]
      const published = () => viewer.messages.filter((m) => !isProbe(m))
      yield* b.realtime.publish(conversationId, small)
      yield* b.realtime.publish(conversationId, large)
      expect(yield* viewer.until(() => published().length >= 2, WAIT_MS)).toBe(true)
      // in order, each once (node A published nothing of its own)
      expect(published()).toEqual([small, large])
      // the large one went through the adapter's attachments table
      const [attachments] = yield* Effect.promise(() =>
        queryUrl<{ n: number }>(db.url, "select count(*)::int as n from socket_io_attachments")
      )
      expect(attachments!.n).toBe(1)
    }).pipe(Effect.scoped),
  60_000
)

it.live("revoking a token on one api node ends the operator's room on the other at once", () =>
  Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(
      Effect.promise(() => createNativeDatabase()),
      (db) => Effect.promise(db.drop)
    )
    const a = yield* node(db.url)
    const b = yield* node(db.url)
    const owner = yield* seedUser().pipe(Effect.provide(b.services))
    const viewer = yield* client(a.url)
    const events: Array<{ name: string; payload: unknown }> = []
    viewer.socket.onAny((name: string, payload: unknown) => events.push({ name, payload }))
    const ack = yield* Effect.promise(() =>
      viewer.socket.timeout(WAIT_MS).emitWithAck("join-workspace", {
        workspace_id: owner.workspace_id,
        token: owner.token
      })
    )
    expect(ack).toMatchObject({ status: true })

    // node B revokes: its NOTIFY reaches node A, whose socket leaves the room. Node A LISTENs once its
    // connection is up, so until then a NOTIFY is lost: B says again that tokens changed until one comes through
    yield* Effect.orDie(b.identity.revokeToken(owner.tokenId as never))
    const ended = () =>
      events.some((e) => e.name === "access_ended" && fieldOf(e.payload, "workspace_id") === owner.workspace_id)
    const revoked = Date.now()
    while (!(yield* viewer.until(ended, PROBE_EVERY_MS))) {
      expect(Date.now() - revoked, "node B's revocation never reached node A").toBeLessThan(LISTEN_WAIT_MS)
      yield* b.identity.tokensChanged
    }
    // and what either node publishes to the workspace no longer reaches it (node A's own emit is local,
    // so it would arrive before the conversation probe that follows it)
    const conversationId = 4_343
    yield* Effect.promise(() =>
      viewer.socket.timeout(WAIT_MS).emitWithAck("join-channel", {
        channel: conversationChannel(conversationId),
        app_key: a.secret.socketAppKey,
        token: signSocketToken(a.secret.socketKey, conversationId, Math.floor(Date.now() / 1000))
      })
    )
    yield* a.realtime.toWorkspace(owner.workspace_id, "new_message", { after: "revocation" })
    yield* a.realtime.publish(conversationId, [{ probe: 1 }])
    expect(yield* viewer.until((ms) => ms.some(isProbe), WAIT_MS)).toBe(true)
    expect(events.some((e) => e.name === "new_message" && fieldOf(e.payload, "after") === "revocation")).toBe(false)
  }).pipe(Effect.scoped), 60_000)
