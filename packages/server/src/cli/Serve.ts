import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Option } from "effect"
import * as Path from "node:path"
import { AdminServerLive } from "../admin/AdminServer.js"
import { ApiServerLive, DatabaseLive, ListenersLive, ReceiverServerLive, servicesFor } from "../App.js"
import { AppConfig, type Role } from "../config/AppConfig.js"
import { ApiListener, ReceiverListener } from "../http/Listener.js"
import { Readiness } from "../http/Readiness.js"
import { LoggingLive } from "../observability/Logging.js"
import { MetricsListener, MetricsServerLive } from "../observability/MetricsServer.js"
import { TelemetryLive } from "../observability/Telemetry.js"
import { type DemoCredentials, demoCredentialsPath, seedDemo } from "../seed/Demo.js"
import { PrintedProgress, printLine, progress } from "../StartupProgress.js"

const banner = (
  api: string | undefined,
  receiver: string | undefined,
  dataDir: string | undefined,
  demo: DemoCredentials | undefined,
  metrics: string | undefined,
  credentialsFile: string
) => {
  const lines = ["", "Parley is running."]
  if (api && demo?.widget) {
    lines.push(`  Demo      ${api}/   (the web-chat widget on a live demo page: open it in a browser)`)
  }
  if (api) lines.push(`  API       ${api}    docs ${api}/docs   OpenAPI ${api}/openapi.json`)
  if (api) {
    lines.push(
      `  Console   ${api}/console   (operators: inbox, takeover, board, analytics; sign in${
        demo ? " as the demo user below" : ""
      })`
    )
  }
  if (api) lines.push(`  Account   ${api}/account   (sign in: tokens, connected MCP clients)`)
  if (receiver) lines.push(`  Receiver  ${receiver}/web-chat/message`)
  if (metrics) lines.push(`  Metrics   ${metrics}/metrics`)
  if (dataDir) lines.push(`  Data      ${Path.resolve(dataDir)}`)
  if (demo && api) {
    lines.push(
      "",
      `Demo workspace (credentials kept in ${credentialsFile}):`,
      `  user            ${demo.email} / ${demo.password}`,
      `  web channel     client_id ${demo.channel.client_id}`,
      `                  client_secret ${demo.channel.client_secret}`,
      ...(demo.widget
        ? [
          `  widget channel  client_id ${demo.widget.client_id}   (public: <script src="${api}/widget.js" data-client-id="${demo.widget.client_id}">)`
        ]
        : []),
      "",
      "Try it:",
      `  export PARLEY_TOKEN=${demo.token}`,
      `  curl -s ${api}/api/user/me -H "Authorization: Bearer $PARLEY_TOKEN"`,
      `  curl -s ${api}/api/user/pipelines/${demo.pipeline_id} -H "Authorization: Bearer $PARLEY_TOKEN"`
    )
  }
  return lines.join("\n") + "\n"
}

/** Seeds the demo on first run and prints where everything is, once the listeners are bound. */
const AnnounceLive = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  const api = yield* Effect.serviceOption(ApiListener)
  const receiver = yield* Effect.serviceOption(ReceiverListener)
  const metrics = yield* Effect.serviceOption(MetricsListener)
  const embedded = Option.isNone(config.databaseUrl)
  const bound = [
    ...Option.toArray(Option.map(api, (l) => `api ${l.url}`)),
    ...Option.toArray(Option.map(receiver, (l) => `receiver ${l.url}`))
  ]
  if (bound.length > 0) yield* progress(`Listening: ${bound.join(", ")}`)
  const demo = config.seedDemo ? yield* seedDemo(Option.getOrUndefined(Option.map(api, (l) => l.url))) : undefined
  yield* printLine(
    config.logFormat,
    banner(
      Option.getOrUndefined(config.publicUrl) ?? Option.getOrUndefined(Option.map(api, (l) => l.url)),
      Option.getOrUndefined(config.receiverUrl) ?? Option.getOrUndefined(Option.map(receiver, (l) => l.url)),
      embedded ? config.dataDir : undefined,
      demo,
      Option.getOrUndefined(Option.map(metrics, (l) => l.url)),
      demoCredentialsPath(config.dataDir)
    )
  )
}))

/** Everything one `parley serve --role <role>` process runs. */
export const serveLayer = (role: Role) => {
  const announce = (() => {
    switch (role) {
      case "all":
        return AnnounceLive.pipe(Layer.provide(ListenersLive))
      case "api":
        return AnnounceLive.pipe(Layer.provide(ApiServerLive))
      case "receiver":
        return AnnounceLive.pipe(Layer.provide(ReceiverServerLive))
      case "worker":
        return AnnounceLive
    }
  })()
  const admin = Layer.unwrapEffect(
    Effect.map(AppConfig, (c) => Option.isNone(c.databaseUrl) ? AdminServerLive : Layer.empty)
  )
  const metrics = MetricsServerLive
  // built after everything else: from here on `/ready` answers 200
  const started = Layer.effectDiscard(Effect.flatMap(Readiness, (r) => r.markStarted))
  return started.pipe(
    Layer.provide(Layer.mergeAll(announce, admin).pipe(Layer.provideMerge(metrics))),
    Layer.provide(servicesFor(role)),
    Layer.provide(DatabaseLive),
    // the tracer and logger first: every layer above starts its fibers with them
    Layer.provide(Layer.merge(TelemetryLive(role), LoggingLive)),
    Layer.provide(PrintedProgress),
    Layer.provide(AppConfig.Default)
  )
}

/** `parley serve --role <role>`: runs until SIGTERM or SIGINT, then closes everything in order. */
export const launch = (role: Role) => Layer.launch(serveLayer(role)).pipe(NodeRuntime.runMain)
