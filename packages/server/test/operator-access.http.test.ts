/**
 * Issue 35: an operator's socket keeps `workspace.<id>` only while its access lasts. Revoking the token it
 * joined with, signing out of the console session whose token it used, and the token's expiry each make it
 * leave the room at once (`access_ended`), so no workspace event reaches it afterwards; a socket that joined
 * again with a fresh token keeps its room when the old token goes. Two api processes on one database:
 * realtime-nodes.postgres.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { conversationChannel, signSocketToken } from "@parley/domain"
import { Effect } from "effect"
import { io, type Socket } from "socket.io-client"
import { Sessions } from "../src/account/Sessions.js"
import { AppSecret } from "../src/config/AppSecret.js"
import { CONSOLE_SCOPES } from "../src/console/ConsoleScopes.js"
import { Identity } from "../src/identity/Identity.js"
import { Realtime } from "../src/realtime/Realtime.js"
import { sqlRows } from "./support/Opportunities.js"
import { fieldOf } from "./support/SocketEvents.js"
import { seedUser, TestServer, TestServerLive } from "./support/TestServer.js"

const WAIT_MS = 10_000

/** An operator's socket recording every event, with a wait for the first event that `check` picks. */
const operator = Effect.gen(function*() {
  const { baseUrl } = yield* TestServer
  const events: Array<{ name: string; payload: unknown }> = []
  const socket = yield* Effect.acquireRelease(
    Effect.sync(() => io(baseUrl, { transports: ["websocket"], forceNew: true, reconnection: false })),
    (socket) => Effect.sync(() => socket.close())
  )
  socket.onAny((name: string, payload: unknown) => events.push({ name, payload }))
  yield* Effect.promise(() => new Promise<void>((resolve) => socket.once("connect", () => resolve())))
  const until = <A>(what: string, check: () => A | undefined) =>
    Effect.promise(() =>
      new Promise<A>((resolve, reject) => {
        const deadline = Date.now() + WAIT_MS
        const look = () => {
          const value = check()
          if (value !== undefined) return resolve(value)
          if (Date.now() > deadline) return reject(new Error(`timed out waiting for ${what}`))
          setTimeout(look, 10)
        }
        look()
      })
    )
  const join = (workspaceId: number, token: string) =>
    Effect.promise(() => socket.timeout(WAIT_MS).emitWithAck("join-workspace", { workspace_id: workspaceId, token }))
  return { socket: socket as Socket, events, until, join }
})

type Operator = Effect.Effect.Success<typeof operator>

/**
 * What the socket hears of the workspace after a probe: the workspace event is published, then a marker on a
 * conversation channel it joined; emits reach one connection in order, so once the marker is in, the
 * workspace event would have come first.
 */
const hearsWorkspace = (client: Operator, workspaceId: number, probe: string) =>
  Effect.gen(function*() {
    const secret = yield* AppSecret
    const realtime = yield* Realtime
    const conversation = 900_000 + Math.floor(Math.random() * 99_999)
    yield* Effect.promise(() =>
      client.socket.timeout(WAIT_MS).emitWithAck("join-channel", {
        channel: conversationChannel(conversation),
        app_key: secret.socketAppKey,
        token: signSocketToken(secret.socketKey, conversation, Math.floor(Date.now() / 1000))
      })
    )
    yield* realtime.toWorkspace(workspaceId, "new_message", { probe })
    yield* realtime.publish(conversation, [{ marker: probe }])
    yield* client.until(`marker ${probe}`, () =>
      client.events.find((e) => e.name === "new_message" && fieldOf(fieldOf(e.payload, "0"), "marker") === probe))
    return client.events.some((e) =>
      e.name === "new_message" && fieldOf(e.payload, "probe") === probe
    )
  })

const accessEnded = (client: Operator, workspaceId: number) =>
  client.until(
    "access_ended",
    () => client.events.find((e) => e.name === "access_ended" && fieldOf(e.payload, "workspace_id") === workspaceId)
  )

layer(TestServerLive(), { excludeTestServices: true })("an operator's socket after its access ends", (it) => {
  it.scoped("revoking the token it joined with leaves the workspace room at once", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const client = yield* operator
      expect(yield* client.join(owner.workspace_id, owner.token)).toMatchObject({ status: true })
      expect(yield* hearsWorkspace(client, owner.workspace_id, "before")).toBe(true)

      yield* Effect.orDie(Effect.flatMap(Identity, (identity) => identity.revokeToken(owner.tokenId as never)))
      yield* accessEnded(client, owner.workspace_id)
      expect(yield* hearsWorkspace(client, owner.workspace_id, "after")).toBe(false)
      // and it cannot come back with the revoked token
      expect(yield* client.join(owner.workspace_id, owner.token)).toMatchObject({ status: false })
    }))

  it.scoped("signing out of the console session ends the access its console token gave", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const sessions = yield* Sessions
      const cookie = yield* Effect.flatMap(
        sessions.signIn(owner.email, "correct horse battery", "127.0.0.7"),
        Effect.orDie
      )
      const session = yield* Effect.flatMap(sessions.current(cookie), Effect.orDie)
      const issued = yield* Effect.flatMap(Identity, (identity) =>
        identity.issueSessionToken({
          userId: owner.user_id as never,
          sessionId: session.id,
          scopes: CONSOLE_SCOPES,
          ttlMs: 900_000
        }))
      const client = yield* operator
      expect(yield* client.join(owner.workspace_id, issued.token)).toMatchObject({ status: true })

      yield* sessions.signOut(cookie)
      yield* accessEnded(client, owner.workspace_id)
      expect(yield* hearsWorkspace(client, owner.workspace_id, "signed-out")).toBe(false)
    }))

  it.scoped("the token's expiry ends it when the token expires, not before", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const [expiry] = yield* sqlRows<{ expires_at: string }>`
        update access_tokens set expires_at = now() + interval '1500 milliseconds' where id = ${owner.tokenId} returning expires_at`
      const client = yield* operator
      expect(yield* client.join(owner.workspace_id, owner.token)).toMatchObject({ status: true })
      yield* accessEnded(client, owner.workspace_id)
      expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(expiry!.expires_at))
      expect(yield* hearsWorkspace(client, owner.workspace_id, "expired")).toBe(false)
    }))

  it.scoped("a socket that joined again with a fresh token keeps its room when the old token is revoked", () =>
    Effect.gen(function*() {
      const owner = yield* seedUser()
      const identity = yield* Identity
      const fresh = yield* Effect.orDie(identity.createToken({ email: owner.email, scopes: CONSOLE_SCOPES }))
      const client = yield* operator
      const witness = yield* operator
      expect(yield* client.join(owner.workspace_id, owner.token)).toMatchObject({ status: true })
      expect(yield* witness.join(owner.workspace_id, owner.token)).toMatchObject({ status: true })
      expect(yield* client.join(owner.workspace_id, fresh.token)).toMatchObject({ status: true })
      yield* Effect.orDie(identity.revokeToken(owner.tokenId as never))
      // the revocation was checked: the witness, still on the old token, lost its room
      yield* accessEnded(witness, owner.workspace_id)
      expect(yield* hearsWorkspace(client, owner.workspace_id, "still")).toBe(true)
      expect(client.events.some((e) => e.name === "access_ended")).toBe(false)
      // and revoking the fresh one ends it
      yield* Effect.orDie(identity.revokeToken(fresh.id))
      yield* accessEnded(client, owner.workspace_id)
    }))
})
