import { expect, it } from "@effect/vitest"
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { conversationChannel, signSocketToken } from "@parley/domain"
import { ConfigProvider, Context, Effect, Layer } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { io } from "socket.io-client"
import { AppConfig } from "../src/config/AppConfig.js"
import { AppSecret } from "../src/config/AppSecret.js"
import { ApiListener } from "../src/http/Listener.js"
import { Realtime, RealtimeLive } from "../src/realtime/Realtime.js"

const node = (databaseUrl: string) => Effect.gen(function*() {
  const server = Http.createServer((_req, res) => { res.writeHead(404); res.end() })
  yield* Effect.acquireRelease(Effect.promise(() => new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()))), () => Effect.promise(() => new Promise<void>((r) => server.close(() => r()))))
  const port = (server.address() as AddressInfo).port
  const listener = Layer.succeed(ApiListener, { server, host: "127.0.0.1", port, url: `http://127.0.0.1:${port}` })
  const ctx = yield* Layer.build(RealtimeLive.pipe(Layer.provideMerge(AppSecret.Default), Layer.provideMerge(AppConfig.Default), Layer.provide(listener),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", databaseUrl], ["APP_SECRET", "x"]]))))))
  return { realtime: Context.get(ctx, Realtime), secret: Context.get(ctx, AppSecret), url: `http://127.0.0.1:${port}` }
})

const crossNode = (databaseUrl: string) => Effect.gen(function*() {
  const a = yield* node(databaseUrl)
  const b = yield* node(databaseUrl)
  yield* Effect.sleep("500 millis")
  const client = io(a.url, { forceNew: true, reconnection: false, transports: ["websocket"] })
  yield* Effect.addFinalizer(() => Effect.sync(() => client.close()))
  const got: Array<unknown> = []
  client.on("new_message", (m) => got.push(m))
  yield* Effect.promise(() => new Promise((r) => client.on("connect", () => r(undefined))))
  const ack = yield* Effect.promise(() => client.timeout(3000).emitWithAck("join-channel", { channel: conversationChannel(7), app_key: a.secret.socketAppKey, token: signSocketToken(a.secret.socketKey, 7, Math.floor(Date.now() / 1000)) }))
  console.log("ack", ack)
  yield* b.realtime.publish(7, [{ message: "from b", cost: 1 }])
  yield* a.realtime.publish(7, [{ message: "from a", cost: 1 }])
  const big = "x".repeat(20000)
  yield* b.realtime.publish(7, [{ message: big, cost: 2 }])
  yield* Effect.sleep("1500 millis")
  console.log("received", JSON.stringify(got).slice(0, 200), got.length)
  return got
})

it.scopedLive("pglite-socket cross node", () => Effect.gen(function*() {
  const db = yield* Effect.acquireRelease(Effect.promise(() => PGlite.create()), (db) => Effect.promise(() => db.close()))
  const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: 10 })
  yield* Effect.acquireRelease(Effect.promise(() => server.start()), () => Effect.promise(() => server.stop()))
  const got = yield* crossNode(`postgres://postgres@${server.getServerConn()}/postgres`)
  console.log("PGLITE got", got.length)
}), 30000)

it.scopedLive("real pg cross node", () => Effect.gen(function*() {
  if (!process.env.REAL_PG) return; const got = yield* crossNode(process.env.REAL_PG!)
  expect(got.length).toBe(3)
}), 30000)
