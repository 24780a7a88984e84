import { parseTrustedProxies } from "@parley/domain/Network"
import { Config, ConfigError, Effect, Either, Option, type Redacted } from "effect"

export type Role = "all" | "api" | "receiver" | "worker"

/** Every setting, read once from the environment (the README's configuration table mirrors this). */
export class AppConfig extends Effect.Service<AppConfig>()("@parley/server/AppConfig", {
  effect: Effect.gen(function*() {
    const host = yield* Config.string("HOST").pipe(Config.withDefault("127.0.0.1"))
    // 0 picks a free port (tests, and several local instances side by side)
    const port = yield* listenPort("PORT", 3000)
    const receiverPort = yield* listenPort("RECEIVER_PORT", 3001)
    const publicUrl = yield* Config.string("PUBLIC_URL").pipe(Config.option)
    const receiverUrl = yield* Config.string("RECEIVER_URL").pipe(Config.option)
    const databaseUrl = yield* Config.redacted("DATABASE_URL").pipe(Config.option)
    const dataDir = yield* Config.string("PARLEY_DATA_DIR").pipe(Config.withDefault(".parley"))
    const appSecret = yield* Config.redacted("APP_SECRET").pipe(Config.option)
    const seedDemo = yield* Config.boolean("PARLEY_SEED_DEMO").pipe(Config.withDefault(Option.isNone(databaseUrl)))
    const databasePoolSize = yield* Config.integer("DATABASE_POOL_SIZE").pipe(Config.withDefault(10))
    // off behind a pooler that hands one server session to several clients (PgBouncer in transaction mode
    // before 1.21), where a statement name prepared by one client is not another's
    const databasePreparedStatements = yield* Config.boolean("DATABASE_PREPARED_STATEMENTS").pipe(
      Config.withDefault(true)
    )
    const outboundAllowPrivate = yield* Config.boolean("OUTBOUND_ALLOW_PRIVATE").pipe(Config.withDefault(false))
    const webhookTimeoutMs = yield* Config.integer("WEBHOOK_TIMEOUT_MS").pipe(Config.withDefault(10_000))
    const webhookRetryDelayMs = yield* Config.integer("WEBHOOK_RETRY_DELAY_MS").pipe(Config.withDefault(5_000))
    const cluster = yield* Config.literal("single", "socket")("PARLEY_CLUSTER").pipe(
      Config.withDefault(Option.isNone(databaseUrl) ? "single" as const : "socket" as const)
    )
    const runnerHost = yield* Config.string("RUNNER_HOST").pipe(Config.withDefault(host))
    const runnerPort = yield* listenPort("RUNNER_PORT", 3002)
    const engineSweepMs = yield* Config.integer("ENGINE_SWEEP_INTERVAL_MS").pipe(Config.withDefault(30_000))
    const clusterRetentionMs = yield* Config.integer("CLUSTER_RETENTION_MS").pipe(
      Config.withDefault(7 * 24 * 3_600_000)
    )
    const evalSandboxRetentionMs = yield* Config.integer("EVAL_SANDBOX_RETENTION_MS").pipe(
      Config.validate({ message: "Expected a positive number of milliseconds", validation: (n) => n > 0 }),
      Config.withDefault(30 * 24 * 3_600_000)
    )
    const embeddedVacuumMs = yield* Config.integer("EMBEDDED_VACUUM_INTERVAL_MS").pipe(Config.withDefault(60_000))
    const actionRetryBaseMs = yield* Config.integer("ACTION_RETRY_BASE_MS").pipe(Config.withDefault(5_000))
    const mcpAllowedOrigins = yield* Config.string("MCP_ALLOWED_ORIGINS").pipe(Config.option)
    const oauthRegistrationsPerHour = yield* Config.integer("OAUTH_REGISTRATIONS_PER_HOUR").pipe(Config.withDefault(20))
    const widgetSessionsPerHour = yield* Config.integer("WIDGET_SESSIONS_PER_HOUR").pipe(Config.withDefault(60))
    const trustProxy = yield* Config.string("TRUST_PROXY").pipe(
      Config.withDefault(""),
      Config.mapOrFail((value) => {
        const parsed = parseTrustedProxies(value)
        return "invalid" in parsed
          ? Either.left(
            ConfigError.InvalidData(
              ["TRUST_PROXY"],
              `Expected addresses, CIDR ranges or loopback, got ${parsed.invalid}`
            )
          )
          : Either.right(parsed.entries)
      })
    )
    const oauthAccessTokenTtlSeconds = yield* Config.integer("OAUTH_ACCESS_TOKEN_TTL_SECONDS").pipe(
      Config.validate({ message: "Expected a positive number of seconds", validation: (n) => n > 0 }),
      Config.withDefault(3600)
    )
    const oauthRefreshTokenTtlDays = yield* Config.integer("OAUTH_REFRESH_TOKEN_TTL_DAYS").pipe(
      Config.validate({ message: "Expected a positive number of days", validation: (n) => n > 0 }),
      Config.withDefault(30)
    )
    const otlpEndpoint = yield* Config.string("OTEL_EXPORTER_OTLP_ENDPOINT").pipe(Config.option)
    const otelServiceName = yield* Config.string("OTEL_SERVICE_NAME").pipe(Config.withDefault("parley"))
    const otelExportDelayMs = yield* Config.integer("OTEL_BSP_SCHEDULE_DELAY").pipe(Config.withDefault(5_000))
    const metricsPort = yield* Config.integer("METRICS_PORT").pipe(
      Config.validate({ message: "Expected a port between 0 and 65535", validation: (n) => n >= 0 && n <= 65535 }),
      Config.option
    )
    const metaGraphApiUrl = yield* Config.string("META_GRAPH_API_URL").pipe(
      Config.withDefault("https://graph.facebook.com")
    )
    const telegramApiUrl = yield* Config.string("TELEGRAM_API_URL").pipe(Config.withDefault("https://api.telegram.org"))
    const twilioApiUrl = yield* Config.string("TWILIO_API_URL").pipe(Config.withDefault("https://api.twilio.com"))
    const emailPollIntervalMs = yield* Config.integer("EMAIL_POLL_INTERVAL_MS").pipe(
      Config.validate({ message: "Expected a positive number of milliseconds", validation: (n) => n > 0 }),
      Config.withDefault(60_000)
    )
    const logFormat = yield* Config.literal("text", "json")("LOG_FORMAT").pipe(Config.withDefault("text" as const))
    return {
      host,
      port,
      receiverPort,
      /** Explicit public base URLs; when unset they follow the bound address (see `Listeners`). */
      publicUrl: Option.map(publicUrl, trimSlash),
      receiverUrl: Option.map(receiverUrl, trimSlash),
      databaseUrl: databaseUrl as Option.Option<Redacted.Redacted<string>>,
      dataDir,
      appSecret: appSecret as Option.Option<Redacted.Redacted<string>>,
      seedDemo,
      databasePoolSize,
      databasePreparedStatements,
      /** Outbound webhooks may reach loopback and private networks (tests, a local demo). */
      outboundAllowPrivate,
      webhookTimeoutMs,
      webhookRetryDelayMs,
      /** Meta's Graph API (WhatsApp): operator configuration, so not subject to OUTBOUND_ALLOW_PRIVATE. */
      metaGraphApiUrl: trimSlash(metaGraphApiUrl),
      /** Telegram's Bot API: operator configuration, like META_GRAPH_API_URL. */
      telegramApiUrl: trimSlash(telegramApiUrl),
      /** How often an email channel's mailbox is read when IDLE tells nothing (channels/email/MailboxSync.ts). */
      emailPollIntervalMs,
      /** Twilio's REST API (SMS): operator configuration, like TELEGRAM_API_URL. */
      twilioApiUrl: trimSlash(twilioApiUrl),
      /**
       * `single`: one process runs every entity and workflow (the embedded database allows no other).
       * `socket`: runners (roles all and worker) share shards through SQL runner storage and reach each
       * other at RUNNER_HOST:RUNNER_PORT; api and receiver processes are clients of the cluster.
       */
      cluster,
      runnerHost,
      runnerPort,
      /** How often runners look for work a crash left behind (hand-overs, overdue retries), and how old it must be. */
      engineSweepMs,
      /** How long processed cluster messages and their replies are kept (ClusterRetention.ts). */
      clusterRetentionMs,
      /** How long a finished eval case's sandbox is kept (evals/SandboxRetention.ts). */
      evalSandboxRetentionMs,
      embeddedVacuumMs,
      /** Action retries wait this long before the second attempt, doubling each time (with jitter). */
      actionRetryBaseMs,
      /**
       * Browser origins allowed to call `/mcp` (DNS-rebinding protection); `*` allows any. Unset: loopback
       * origins and PUBLIC_URL's. Requests without an Origin header (non-browser clients) are always allowed.
       */
      mcpAllowedOrigins: Option.map(
        mcpAllowedOrigins,
        (list) => list.split(",").map((o) => trimSlash(o.trim())).filter((o) => o.length > 0)
      ),
      /** Dynamic client registrations (`POST /register`) one IP address may make per hour. */
      oauthRegistrationsPerHour,
      widgetSessionsPerHour,
      /**
       * Proxies whose `X-Forwarded-For` names the client (addresses, CIDR ranges, `loopback`). Empty: the
       * client is the connection's peer, and the header is ignored.
       */
      trustProxy,
      /** Lifetime of access tokens issued to OAuth clients; refresh tokens rotate on every use. */
      oauthAccessTokenTtlSeconds,
      oauthRefreshTokenTtlDays,
      /** OTLP over HTTP (JSON) to `<endpoint>/v1/traces` and `/v1/metrics`; unset, no spans leave the process. */
      otlpEndpoint: Option.map(otlpEndpoint, trimSlash),
      otelServiceName,
      /** How often batches of finished spans are sent (the OpenTelemetry BatchSpanProcessor's delay). */
      otelExportDelayMs,
      /** Prometheus `/metrics` on its own listener at HOST:METRICS_PORT; unset, none. */
      metricsPort,
      /** `json`: one JSON object a line, with trace and span ids. */
      logFormat
    } as const
  })
}) {}

const listenPort = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: "Expected a port between 0 and 65535", validation: (n) => n >= 0 && n <= 65535 }),
    Config.withDefault(fallback)
  )

const trimSlash = (s: string) => s.replace(/\/+$/, "")

/** The API's public base URL for links in answers: PUBLIC_URL, else the host the request came to. */
export const publicBaseUrl = (
  config: { readonly publicUrl: Option.Option<string>; readonly host: string; readonly port: number },
  headers: Readonly<Record<string, string | undefined>>
) => Option.getOrElse(config.publicUrl, () => `http://${headers["host"] ?? `${config.host}:${config.port}`}`)

/**
 * The receiver's base URL for clients: RECEIVER_URL, else where this process's receiver bound, else HOST:RECEIVER_PORT.
 */
export const receiverBaseUrl = (
  config: { readonly receiverUrl: Option.Option<string>; readonly host: string; readonly receiverPort: number },
  bound: string | undefined
) => Option.getOrElse(config.receiverUrl, () => bound ?? `http://${config.host}:${config.receiverPort}`)
