/**
 * While a server holds the embedded database, the CLI cannot open it: its commands come here instead.
 * The endpoint listens on 127.0.0.1 only, on a free port, and takes a secret that is written to the
 * data dir (mode 0600) together with the port in `server.json`; both are removed on shutdown.
 */
import { HttpLayerRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Option, Schema } from "effect"
import * as Fs from "node:fs"
import { AppConfig } from "../config/AppConfig.js"
import { AdminPolicy } from "../http/BodyLimits.js"
import { AdminListener, listen } from "../http/Listener.js"
import { equalSecrets, randomBase62 } from "../identity/Secrets.js"
import { AdminCommand } from "./AdminCommand.js"
import { AdminRepo } from "./AdminRepo.js"
import { runCommand } from "./Commands.js"
import { type ServerInfo, serverInfoPath } from "./ServerInfo.js"

const json = (status: number, body: unknown) => HttpServerResponse.unsafeJson(body, { status })

const commandRoute = (secret: string) =>
  HttpLayerRouter.add(
    "POST",
    "/admin/commands",
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const given = (request.headers["authorization"] ?? "").replace(/^Bearer /, "")
      if (!equalSecrets(given, secret)) return json(401, { ok: false, error: "Invalid admin secret" })
      const body = yield* request.json.pipe(Effect.option)
      const command = Option.flatMap(body, Schema.decodeUnknownOption(AdminCommand))
      if (Option.isNone(command)) return json(400, { ok: false, error: "Not a known command" })
      return yield* runCommand(command.value).pipe(
        Effect.map((result) => json(200, { ok: true, result })),
        Effect.catchTag("CommandFailed", (e) => Effect.succeed(json(422, { ok: false, error: e.message })))
      )
    }).pipe(Effect.annotateLogs("admin", "command"))
  )

export const AdminServerLive = Layer.unwrapEffect(Effect.gen(function*() {
  const config = yield* AppConfig
  const secret = randomBase62(43)
  const info = Layer.scopedDiscard(Effect.gen(function*() {
    const listener = yield* AdminListener
    const file = serverInfoPath(config.dataDir)
    const content: ServerInfo = { pid: process.pid, admin_url: listener.url, admin_secret: secret }
    yield* Effect.acquireRelease(
      Effect.sync(() => Fs.writeFileSync(file, JSON.stringify(content, null, 2), { mode: 0o600 })),
      () => Effect.sync(() => Fs.rmSync(file, { force: true }))
    )
  }))
  const server = listen(AdminListener, commandRoute(secret), { host: "127.0.0.1", port: 0, policy: AdminPolicy })
  return info.pipe(Layer.provide(server), Layer.provide(AdminRepo.Default))
}))
