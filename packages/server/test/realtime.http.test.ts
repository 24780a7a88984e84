import { describe, expect, layer } from "@effect/vitest"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { conversationChannel, signSocketToken, SOCKET_TOKEN_TTL_SECONDS } from "@parley/domain"
import { Context, Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Net from "node:net"
import { io, type ManagerOptions, type Socket, type SocketOptions } from "socket.io-client"
import { inject } from "vitest"
import { AppConfig } from "../src/config/AppConfig.js"
import { AppSecret } from "../src/config/AppSecret.js"
import { openPglite, SqlLive } from "../src/db/Database.js"
import { NotFoundRoute } from "../src/http/ApiRoutes.js"
import { ApiPolicy } from "../src/http/BodyLimits.js"
import { ApiListener, listen } from "../src/http/Listener.js"
import { Realtime, RealtimeLive } from "../src/realtime/Realtime.js"
import { ok } from "./support/Contract.js"
import { createNativeDatabase, databaseMode, queryUrl } from "./support/NativeDatabase.js"
import { call, seedUser, testConfig, TestServer, TestServerLive } from "./support/TestServer.js"

const WAIT_MS = 5_000

/** A socket.io client that records what reaches it, so a test can wait for it or assert it never came. */
class Client {
  readonly events: Array<{ readonly name: string; readonly args: ReadonlyArray<unknown> }> = []
  readonly messages: Array<unknown> = []
  disconnectReason: string | undefined
  readonly #waiters = new Set<() => void>()

  constructor(readonly socket: Socket) {
    socket.onAny((name: string, ...args: Array<unknown>) => {
      this.events.push({ name, args })
      if (name === "new_message") this.messages.push(args[0])
      this.#wake()
    })
    socket.on("connect", () => this.#wake())
    socket.on("connect_error", () => this.#wake())
    socket.on("disconnect", (reason) => {
      this.disconnectReason = reason
      this.#wake()
    })
  }

  #wake() {
    for (const waiter of this.#waiters) waiter()
  }

  /** Resolves with `check()` once it is defined; fails the test after WAIT_MS. */
  until<A>(what: string, check: () => A | undefined): Effect.Effect<A> {
    return Effect.promise(() =>
      new Promise<A>((resolve, reject) => {
        const now = check()
        if (now !== undefined) return resolve(now)
        const waiter = () => {
          const value = check()
          if (value === undefined) return
          this.#waiters.delete(waiter)
          clearTimeout(timer)
          resolve(value)
        }
        const timer = setTimeout(() => {
          this.#waiters.delete(waiter)
          reject(new Error(`timed out after ${WAIT_MS} ms waiting for ${what}`))
        }, WAIT_MS)
        this.#waiters.add(waiter)
      })
    )
  }

  nthMessage(n: number) {
    return this.until(`new_message #${n + 1}`, () => this.messages[n])
  }
}

/** A connected client (its own connection: forceNew), closed when the test's scope closes. */
const connect = (options: Partial<ManagerOptions & SocketOptions> = {}) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestServer
    const client = yield* Effect.acquireRelease(
      Effect.sync(() => new Client(io(baseUrl, { forceNew: true, reconnection: false, ...options }))),
      (client) => Effect.sync(() => client.socket.close())
    )
    yield* client.until("connect", () => client.socket.connected || undefined)
    return client
  })

const nowSeconds = () => Math.floor(Date.now() / 1000)

let lastConversation = 1_000
const newConversation = () => ++lastConversation

/** The `join-channel` body Initiate's data lets a client send (SPEC.md 2.8). */
const validJoin = (conversationId: number) =>
  Effect.map(AppSecret, (secret) => ({
    channel: conversationChannel(conversationId),
    app_key: secret.socketAppKey,
    token: signSocketToken(secret.socketKey, conversationId, nowSeconds())
  }))

const joinWithAck = (client: Client, body: unknown) =>
  Effect.promise(() => client.socket.timeout(WAIT_MS).emitWithAck("join-channel", body))

const joined = (client: Client, conversationId: number) =>
  Effect.gen(function*() {
    const ack = yield* joinWithAck(client, yield* validJoin(conversationId))
    expect(ack).toEqual({ status: true, channel: conversationChannel(conversationId) })
  })

const publish = (conversationId: number, messages: ReadonlyArray<unknown>) =>
  Effect.flatMap(Realtime, (realtime) => realtime.publish(conversationId, messages))

const reply = (text: string) => [
  { message: text, cost: 0.0042, message_id: `msg-${text}`, role: "assistant" },
  { message: "(follow-up)", cost: 0 }
]

layer(TestServerLive())("socket.io live stream", (it) => {
  describe("join-channel", () => {
    it.scoped("a client joined with a valid token gets an ack and receives new_message with the published array", () =>
      Effect.gen(function*() {
        const conversation = newConversation()
        const client = yield* connect()
        yield* joined(client, conversation)
        const messages = reply("Hello from the agent")
        yield* publish(conversation, messages)
        expect(yield* client.nthMessage(0)).toEqual(messages)
        expect(client.events.map((e) => e.name)).toEqual(["new_message"])
      }))

    it.scoped("a client joined to another conversation does not receive it", () =>
      Effect.gen(function*() {
        const [mine, theirs] = [newConversation(), newConversation()]
        const alice = yield* connect()
        const bob = yield* connect()
        yield* joined(alice, mine)
        yield* joined(bob, theirs)
        yield* publish(mine, reply("for alice"))
        // emits reach one connection in order: once bob has this marker, alice's message would have come first
        yield* publish(theirs, reply("for bob"))
        expect(yield* alice.nthMessage(0)).toEqual(reply("for alice"))
        expect(yield* bob.nthMessage(0)).toEqual(reply("for bob"))
        expect(bob.messages).toEqual([reply("for bob")])
        expect(alice.messages).toEqual([reply("for alice")])
      }))

    it.scoped("one socket may join several channels, with or without an ack callback", () =>
      Effect.gen(function*() {
        const [first, second] = [newConversation(), newConversation()]
        const client = yield* connect()
        client.socket.emit("join-channel", yield* validJoin(first))
        // handled in order: the second ack means the first join is done too
        yield* joined(client, second)
        yield* publish(first, reply("first"))
        yield* publish(second, reply("second"))
        expect(yield* client.nthMessage(1)).toEqual(reply("second"))
        expect(client.messages).toEqual([reply("first"), reply("second")])
      }))
  })

  describe("an invalid join disconnects the socket without an error response", () => {
    const cases: ReadonlyArray<
      readonly [string, (conversationId: number) => Effect.Effect<unknown, never, AppSecret>]
    > = [
      [
        "a token signed with another key",
        (id) =>
          Effect.map(
            validJoin(id),
            (body) => ({ ...body, token: signSocketToken(Buffer.from("not our key"), id, nowSeconds()) })
          )
      ],
      [
        "a token signed for another channel",
        (id) => Effect.map(validJoin(id), (body) => ({ ...body, channel: conversationChannel(id + 1) }))
      ],
      [
        "an expired token",
        (id) =>
          Effect.map(AppSecret, (secret) => ({
            channel: conversationChannel(id),
            app_key: secret.socketAppKey,
            token: signSocketToken(secret.socketKey, id, nowSeconds() - SOCKET_TOKEN_TTL_SECONDS - 60)
          }))
      ],
      ["a wrong app_key", (id) => Effect.map(validJoin(id), (body) => ({ ...body, app_key: "pk_not_this_app" }))],
      ["a body without a token", (id) => Effect.map(validJoin(id), ({ token: _, ...body }) => body)],
      ["a body that is not an object", () => Effect.succeed("conversation.1")]
    ]
    for (const [name, body] of cases) {
      it.scoped(name, () =>
        Effect.gen(function*() {
          const conversation = newConversation()
          const client = yield* connect()
          const acks: Array<unknown> = []
          client.socket.emit("join-channel", yield* body(conversation), (ack: unknown) => acks.push(ack))
          expect(yield* client.until("disconnect", () => client.disconnectReason)).toBe("io server disconnect")
          yield* publish(conversation, reply("secret"))
          yield* publish(conversation + 1, reply("secret"))
          expect(acks).toEqual([])
          expect(client.events).toEqual([])
        }))
    }
  })

  describe("transports", () => {
    it.scoped("websocket-only clients connect and receive: socket.io upgrades bypass the router", () =>
      Effect.gen(function*() {
        const conversation = newConversation()
        const client = yield* connect({ transports: ["websocket"] })
        expect(client.socket.io.engine.transport.name).toBe("websocket")
        yield* joined(client, conversation)
        yield* publish(conversation, reply("over websocket"))
        expect(yield* client.nthMessage(0)).toEqual(reply("over websocket"))
      }))

    it.scoped("polling clients upgrade to websocket and receive", () =>
      Effect.gen(function*() {
        const conversation = newConversation()
        const client = yield* connect({ transports: ["polling", "websocket"], upgrade: true })
        const engine = client.socket.io.engine
        yield* Effect.promise(() =>
          new Promise<void>((resolve, reject) => {
            if (engine.transport.name === "websocket") return resolve()
            const timer = setTimeout(() => reject(new Error("no upgrade to websocket")), WAIT_MS)
            engine.once("upgrade", () => {
              clearTimeout(timer)
              resolve()
            })
          })
        )
        expect(engine.transport.name).toBe("websocket")
        yield* joined(client, conversation)
        yield* publish(conversation, reply("after upgrade"))
        expect(yield* client.nthMessage(0)).toEqual(reply("after upgrade"))
      }))

    it.scoped("polling without upgrade also receives", () =>
      Effect.gen(function*() {
        const conversation = newConversation()
        const client = yield* connect({ transports: ["polling"] })
        yield* joined(client, conversation)
        yield* publish(conversation, reply("over polling"))
        expect(yield* client.nthMessage(0)).toEqual(reply("over polling"))
        expect(client.socket.io.engine.transport.name).toBe("polling")
      }))

    it.scoped("REST routes still answer while sockets are connected", () =>
      Effect.gen(function*() {
        const conversation = newConversation()
        const ws = yield* connect({ transports: ["websocket"] })
        const polling = yield* connect({ transports: ["polling"] })
        yield* joined(ws, conversation)
        yield* joined(polling, conversation)
        const alice = yield* seedUser()
        const me = yield* call("/api/user/me", { token: alice.token })
        expect(me.status).toBe(200)
        expect(ok(me, "account.me").user.email).toBe(alice.email)
        const health = yield* call("/health")
        expect(health).toMatchObject({ status: 200, body: { status: "ok" } })
        const missing = yield* call("/api/user/nothing-here", { token: alice.token })
        expect(missing.status).toBe(404)
        yield* publish(conversation, reply("both"))
        expect(yield* ws.nthMessage(0)).toEqual(reply("both"))
        expect(yield* polling.nthMessage(0)).toEqual(reply("both"))
      }))

    it.scoped("upgrade requests outside /socket.io/ still reach the router", () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestServer
        const { hostname, port } = new URL(baseUrl)
        const statusLine = yield* Effect.promise(() =>
          new Promise<string>((resolve, reject) => {
            const socket = Net.connect({ host: hostname, port: Number(port) })
            const timer = setTimeout(() => {
              socket.destroy()
              reject(new Error("no answer to the upgrade request"))
            }, WAIT_MS)
            let received = ""
            socket.on("data", (chunk) => {
              received += chunk.toString("latin1")
              const end = received.indexOf("\r\n")
              if (end < 0) return
              clearTimeout(timer)
              socket.destroy()
              resolve(received.slice(0, end))
            })
            socket.on("error", reject)
            socket.write(
              "GET /nothing-here HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
                "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
            )
          })
        )
        expect(statusLine).toBe("HTTP/1.1 404 Not Found")
      }))
  })
})

class AdapterDatabase extends Context.Tag("test/AdapterDatabase")<AdapterDatabase, {
  readonly attachments: Effect.Effect<number>
}>() {}

/**
 * A migrated Postgres for DATABASE_URL, for the layer's scope, and a count of the adapter's attachments
 * in it. Embedded run: PGlite behind pglite-socket. PGlite is one Postgres session, so a NOTIFY comes
 * back on the connection that sent it, never on another node's LISTEN connection: there this proves the
 * adapter path on one node, not delivery across nodes. Postgres project: a native database from the
 * template (realtime-nodes.postgres.test.ts has two nodes on one).
 */
const adapterPostgres = databaseMode === "postgres"
  ? Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(
      Effect.promise(() => createNativeDatabase()),
      (db) => Effect.promise(db.drop)
    )
    const attachments = Effect.promise(() =>
      queryUrl<{ n: number }>(db.url, "select count(*)::int as n from socket_io_attachments")
    )
      .pipe(Effect.map((rows) => rows[0]!.n))
    return { url: db.url, attachments }
  })
  : Effect.gen(function*() {
    const db = yield* openPglite({ loadDataDir: new Blob([Fs.readFileSync(inject("pgDumpPath"))]) })
    const pgServer = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: 4 })
    yield* Effect.acquireRelease(Effect.promise(() => pgServer.start()), () => Effect.promise(() => pgServer.stop()))
    const attachments = Effect.promise(() =>
      db.query<{ n: number }>("select count(*)::int as n from socket_io_attachments")
    )
      .pipe(Effect.map((r) => r.rows[0]!.n))
    return { url: `postgres://postgres@${pgServer.getServerConn()}/postgres`, attachments }
  })

/** An api listener whose Realtime runs with DATABASE_URL, so through @socket.io/postgres-adapter. */
const PostgresAdapterServer = Layer.unwrapScoped(Effect.gen(function*() {
  const { attachments, url } = yield* adapterPostgres
  const server = Layer.effect(
    TestServer,
    Effect.map(ApiListener, (api) => ({ baseUrl: api.url, receiverUrl: api.url }))
  )
  return server.pipe(
    Layer.provideMerge(
      RealtimeLive.pipe(
        Layer.provideMerge(listen(ApiListener, NotFoundRoute, { host: "127.0.0.1", port: 0, policy: ApiPolicy }))
      )
    ),
    Layer.provideMerge(AppSecret.Default),
    // operators' tokens are checked against the database (join-workspace)
    Layer.provideMerge(SqlLive),
    Layer.provideMerge(AppConfig.Default),
    Layer.provideMerge(Layer.succeed(AdapterDatabase, { attachments })),
    Layer.provide(testConfig({ DATABASE_URL: url }))
  )
}))

layer(PostgresAdapterServer)("socket.io with DATABASE_URL (Postgres adapter)", (it) => {
  it.scoped("joined clients receive new_message through the adapter, payloads over NOTIFY's limit included", () =>
    Effect.gen(function*() {
      const conversation = newConversation()
      const client = yield* connect({ transports: ["websocket"] })
      yield* joined(client, conversation)
      yield* publish(conversation, reply("small"))
      expect(yield* client.nthMessage(0)).toEqual(reply("small"))
      expect(yield* Effect.flatMap(AdapterDatabase, (d) => d.attachments)).toBe(0)
      const large = [{ message: "x".repeat(20_000), cost: 0.5 }]
      yield* publish(conversation, large)
      expect(yield* client.nthMessage(1)).toEqual(large)
      // the adapter stored the broadcast in its attachments table before delivering it locally
      expect(yield* Effect.flatMap(AdapterDatabase, (d) => d.attachments)).toBe(1)
    }))

  it.scoped("an invalid join is still disconnected", () =>
    Effect.gen(function*() {
      const conversation = newConversation()
      const client = yield* connect()
      const body = { ...(yield* validJoin(conversation)), app_key: "pk_wrong" }
      client.socket.emit("join-channel", body)
      expect(yield* client.until("disconnect", () => client.disconnectReason)).toBe("io server disconnect")
    }))
})
