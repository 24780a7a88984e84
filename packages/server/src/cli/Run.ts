/**
 * The CLI's commands other than `serve`: each one through the server holding the embedded data dir (its
 * loopback admin endpoint), or on a database opened here (Direct.ts, loaded only then). What this module
 * loads itself is kept small (the command schema, config, no services), so a command beside a running
 * server answers in about a second.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect, Logger, LogLevel, Option, Schema } from "effect"
import * as Fs from "node:fs"
import { AdminCommand } from "../admin/AdminCommand.js"
import { type ServerInfo, serverInfoPath } from "../admin/ServerInfo.js"
import { AppConfig } from "../config/AppConfig.js"
import { DataDirBusy, lockHolder } from "../db/DataDirLock.js"
import { CommandFailed } from "../identity/CommandFailed.js"
import { render } from "./Format.js"
import {
  type Column,
  type Execute,
  ImportUsageError,
  progressReporter,
  readRows,
  runImport,
  summary
} from "./Import.js"
import { USAGE } from "./Usage.js"

class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { message: Schema.String }) {}

export const options = {
  json: { type: "boolean" },
  simulator: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  role: { type: "string" },
  email: { type: "string" },
  password: { type: "string" },
  name: { type: "string" },
  "workspace-name": { type: "string" },
  "workspace-id": { type: "string" },
  credits: { type: "string" },
  "training-credits": { type: "string" },
  subscription: { type: "string" },
  drafts: { type: "string" },
  scopes: { type: "string" },
  "expires-in-days": { type: "string" },
  id: { type: "string" },
  kind: { type: "string" },
  "pipeline-id": { type: "string" },
  "callback-url": { type: "string" },
  "allowed-origins": { type: "string" },
  "allowed-ips": { type: "string" },
  "phone-number-id": { type: "string" },
  "access-token": { type: "string" },
  "app-secret": { type: "string" },
  "business-account-id": { type: "string" },
  "verify-token": { type: "string" },
  "api-version": { type: "string" },
  "page-id": { type: "string" },
  "page-access-token": { type: "string" },
  "instagram-account-id": { type: "string" },
  "bot-token": { type: "string" },
  "account-sid": { type: "string" },
  "auth-token": { type: "string" },
  "from-number": { type: "string" },
  address: { type: "string" },
  "imap-host": { type: "string" },
  "imap-port": { type: "string" },
  "imap-user": { type: "string" },
  "imap-password": { type: "string" },
  "smtp-host": { type: "string" },
  "smtp-port": { type: "string" },
  "smtp-user": { type: "string" },
  "smtp-password": { type: "string" },
  "table-id": { type: "string" },
  file: { type: "string" },
  "batch-size": { type: "string" }
} as const

export type Flags = {
  readonly [K in keyof typeof options]?: (typeof options)[K]["type"] extends "boolean" ? boolean : string
}

const list = (value: string | undefined) => value?.split(",").map((s) => s.trim()).filter((s) => s.length > 0)
const drop = <A extends Record<string, unknown>>(record: A) =>
  Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as A

/** A provider channel's credential flags (`--phone-number-id`, `--bot-token` and the rest), as `credentials` names them. */
const CREDENTIAL_FLAGS = [
  "phone-number-id",
  "access-token",
  "app-secret",
  "business-account-id",
  "verify-token",
  "api-version",
  "page-id",
  "page-access-token",
  "instagram-account-id",
  "bot-token",
  "account-sid",
  "auth-token",
  "from-number"
] as const
/**
 * An email channel's mailbox (`--address`, `--imap-host` and the rest) as `credentials` nests it: TLS from the start
 * on the TLS ports (993, 465), STARTTLS otherwise; the login is the address unless given.
 */
const mailboxOf = (f: Flags) => {
  const server = (p: "imap" | "smtp") => {
    const port = f[`${p}-port`] === undefined ? undefined : Number(f[`${p}-port`])
    return drop({
      host: f[`${p}-host`],
      port,
      secure: port === 993 || port === 465,
      user: f[`${p}-user`] ?? f.address,
      password: f[`${p}-password`]
    })
  }
  return f.address === undefined && f["imap-host"] === undefined && f["smtp-host"] === undefined
    ? undefined
    : drop({ address: f.address, imap: server("imap"), smtp: server("smtp") })
}

const credentialsOf = (f: Flags) => {
  // the simulator Parley ships plays the provider (docs/channels.md, "Try it without an account")
  if (f.simulator === true) return { simulator: true }
  if (f.kind === "email") return mailboxOf(f)
  const given = CREDENTIAL_FLAGS.filter((flag) => f[flag] !== undefined)
  return given.length === 0 ? undefined : Object.fromEntries(given.map((flag) => [flag.replaceAll("-", "_"), f[flag]!]))
}

/** The command line as an AdminCommand (decoded, so numbers and kinds are checked here). */
const toCommand = (words: ReadonlyArray<string>, f: Flags) => {
  const raw = (() => {
    switch (words.join(" ")) {
      case "migrate":
        return { _tag: "migrate" }
      case "user create":
        return {
          _tag: "user.create",
          email: f.email,
          password: f.password,
          name: f.name,
          workspaceName: f["workspace-name"],
          credits: num(f.credits),
          trainingCredits: num(f["training-credits"])
        }
      case "user list":
        return { _tag: "user.list" }
      case "user show":
        return { _tag: "user.show", email: f.email, id: num(f.id) }
      case "user grant-manager":
        return { _tag: "user.grant-manager", email: f.email, workspaceId: num(f["workspace-id"]) }
      case "user make-super":
        return { _tag: "user.make-super", email: f.email }
      case "workspace create":
        return {
          _tag: "workspace.create",
          email: f.email,
          name: f.name,
          credits: num(f.credits),
          trainingCredits: num(f["training-credits"])
        }
      case "workspace list":
        return { _tag: "workspace.list" }
      case "workspace show":
        return { _tag: "workspace.show", workspaceId: num(f["workspace-id"] ?? f.id) }
      case "workspace set":
        return {
          _tag: "workspace.set",
          workspaceId: num(f["workspace-id"]),
          credits: num(f.credits),
          trainingCredits: num(f["training-credits"]),
          subscription: f.subscription,
          drafts: f.drafts
        }
      case "token create":
        return {
          _tag: "token.create",
          email: f.email,
          scopes: list(f.scopes),
          name: f.name,
          expiresInDays: num(f["expires-in-days"])
        }
      case "token list":
        return { _tag: "token.list", email: f.email }
      case "token show":
        return { _tag: "token.show", id: num(f.id) }
      case "token revoke":
        return { _tag: "token.revoke", id: num(f.id) }
      case "channel create":
        return {
          _tag: "channel.create",
          workspaceId: num(f["workspace-id"]),
          kind: f.kind,
          pipelineId: num(f["pipeline-id"]),
          name: f.name,
          callbackUrl: f["callback-url"],
          allowedOrigins: list(f["allowed-origins"]),
          allowedIps: list(f["allowed-ips"]),
          credentials: credentialsOf(f)
        }
      case "channel list":
        return { _tag: "channel.list", workspaceId: num(f["workspace-id"]) }
      case "channel show":
        return { _tag: "channel.show", id: num(f.id) }
      case "channel rotate":
        return { _tag: "channel.rotate", id: num(f.id) }
      case "pipeline list":
        return { _tag: "pipeline.list", workspaceId: num(f["workspace-id"]) }
      case "pipeline show":
        return { _tag: "pipeline.show", id: num(f.id) }
      default:
        return undefined
    }
  })()
  if (raw === undefined) {
    return Effect.fail(new UsageError({ message: `Unknown command: ${words.join(" ") || "(none)"}` }))
  }
  if (raw._tag === "user.show" && (f.email === undefined) === (f.id === undefined)) {
    return Effect.fail(new UsageError({ message: "user show needs --email E or --id N" }))
  }
  return Schema.decodeUnknown(AdminCommand, { errors: "all" })(drop(raw)).pipe(
    Effect.mapError((e) => new UsageError({ message: `Invalid arguments for ${words.join(" ")}:\n${e.message}` }))
  )
}

const num = (value: string | undefined) => (value === undefined ? undefined : Number(value))

/** A live server holding the embedded data dir, if there is one. */
const runningServer = (dataDir: string): ServerInfo | undefined => {
  if (lockHolder(dataDir) === undefined) return undefined
  try {
    return JSON.parse(Fs.readFileSync(serverInfoPath(dataDir), "utf8")) as ServerInfo
  } catch {
    return undefined
  }
}

const viaServer = (info: ServerInfo, command: AdminCommand) =>
  Effect.gen(function*() {
    const body = yield* Schema.encode(AdminCommand)(command).pipe(Effect.orDie)
    const response = yield* Effect.tryPromise({
      try: () =>
        fetch(`${info.admin_url}/admin/commands`, {
          method: "POST",
          headers: { authorization: `Bearer ${info.admin_secret}`, "content-type": "application/json" },
          body: JSON.stringify(body)
        }).then((r) => r.json() as Promise<{ ok: boolean; result?: unknown; error?: string }>),
      catch: () =>
        new CommandFailed({
          message: `The server (pid ${info.pid}) holds the database but its admin endpoint does not answer`
        })
    })
    if (!response.ok) return yield* new CommandFailed({ message: response.error ?? "The server refused the command" })
    return response.result
  })

/** The server commands go to: the one holding the embedded data dir (with DATABASE_URL, none). */
const holder = Effect.map(
  AppConfig,
  (config) => Option.isNone(config.databaseUrl) ? runningServer(config.dataDir) : undefined
)

/** The heavy part, loaded only when a command runs here: the services and the database driver. */
const direct = Effect.promise(() => import("./Direct.js"))

/** One command on a database opened here. `migrate` opens the bare database and only migrates. */
const directly = (command: AdminCommand) =>
  command._tag === "migrate"
    ? Effect.flatMap(
      Effect.promise(() => Promise.all([import("../admin/Migrate.js"), import("./CliDatabase.js")])),
      ([{ migrate }, { CliSqlLive }]) => Effect.provide(migrate, CliSqlLive)
    )
    : Effect.flatMap(direct, (d) => d.withDatabase((execute) => execute(command)))

/**
 * Runs `use` with a way to execute commands: through the server holding the data dir, or on a database opened once
 * here.
 */
const withExecutor = <A, E>(use: (execute: Execute) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const server = yield* holder
    if (server) return yield* use((command) => viaServer(server, command))
    return yield* Effect.flatMap(direct, (d) => d.withDatabase(use))
  })

/** `knowledge import`: exit code 0 when every row was upserted, 1 when some were rejected. */
const knowledgeImport = (f: Flags) =>
  Effect.gen(function*() {
    const tableId = Number(f["table-id"])
    const batchSize = f["batch-size"] === undefined ? 200 : Number(f["batch-size"])
    if (f["table-id"] === undefined || !Number.isInteger(tableId) || tableId <= 0) {
      return yield* new UsageError({ message: "knowledge import needs --table-id N (a positive integer)" })
    }
    if (f.file === undefined) {
      return yield* new UsageError({ message: "knowledge import needs --file rows.csv|rows.jsonl" })
    }
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 1000) {
      return yield* new UsageError({ message: "--batch-size must be an integer from 1 to 1000" })
    }
    const file = f.file
    if (!Fs.existsSync(file)) return yield* new UsageError({ message: `Cannot read ${file}: no such file` })
    const started = Date.now()
    const result = yield* withExecutor((execute) =>
      Effect.gen(function*() {
        const table = yield* execute({ _tag: "knowledge.columns", tableId: tableId as never }).pipe(
          Effect.catchTag(
            "CommandFailed",
            (e) => Effect.fail(/^No knowledge table/.test(e.message) ? new UsageError({ message: e.message }) : e)
          )
        ) as Effect.Effect<{ columns: ReadonlyArray<Column> }, CommandFailed | UsageError>
        const rows = yield* readRows(file, table.columns).pipe(
          Effect.mapError((e: ImportUsageError) => new UsageError({ message: e.message }))
        )
        return yield* runImport({ execute, tableId, rows, batchSize, progress: progressReporter(rows.length) })
      })
    )
    if (f.json === true) yield* Console.log(JSON.stringify(result))
    else yield* Console.log(summary(result, Date.now() - started))
    if (result.rejected.length > 0) process.exitCode = 1
  })

/** Runs the command named by `words` with `flags`, then exits with its code. */
export const runCli = (words: ReadonlyArray<string>, flags: Flags) => {
  const program = Effect.gen(function*() {
    if (words.join(" ") === "knowledge import") return yield* knowledgeImport(flags)
    const command = yield* toCommand(words, flags)
    const server = yield* holder
    const result = server ? yield* viaServer(server, command) : yield* directly(command)
    yield* Console.log(flags.json === true ? JSON.stringify(result) : render(command, result))
  }).pipe(
    Effect.provide(AppConfig.Default),
    Effect.catchAll((e) => {
      if (e instanceof UsageError) {
        return Effect.zipRight(
          flags.json ? Console.log(JSON.stringify({ error: e.message })) : Console.error(`${e.message}\n\n${USAGE}`),
          Effect.sync(() => (process.exitCode = 2))
        )
      }
      const message = e instanceof CommandFailed || e instanceof DataDirBusy ? e.message : undefined
      if (message === undefined) return Effect.fail(e)
      return Effect.zipRight(
        flags.json ? Console.log(JSON.stringify({ error: message })) : Console.error(`Error: ${message}`),
        Effect.sync(() => (process.exitCode = 1))
      )
    }),
    Logger.withMinimumLogLevel(LogLevel.Warning)
  )
  NodeRuntime.runMain(program, { disableErrorReporting: false })
}
