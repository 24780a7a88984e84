/**
 * The CLI's commands on a database opened here: the embedded data dir when no server holds it, or
 * DATABASE_URL. The CLI is a client: it builds the services its commands call on the migrated database
 * (CliDatabase.ts) and nothing else (no worker engine, no cluster runner or client, no sweeps, no
 * listeners), runs its command and closes the database. None of its commands sends an entity or workflow
 * message (admin/Commands.ts), so none needs the cluster. Loaded by Run.ts only when a command runs here.
 */
import { Effect, Layer } from "effect"
import { AdminRepo } from "../admin/AdminRepo.js"
import { runCommand } from "../admin/Commands.js"
import { Channels } from "../channels/Channels.js"
import type { AppConfig } from "../config/AppConfig.js"
import { MigrationsLive } from "../db/Database.js"
import { BoundAddresses } from "../http/Listener.js"
import { Identity } from "../identity/Identity.js"
import { Knowledge } from "../knowledge/Knowledge.js"
import { Pipelines } from "../pipelines/Pipelines.js"
import { Versions } from "../pipelines/Versions.js"
import { CliSqlLive } from "./CliDatabase.js"
import type { Execute } from "./Import.js"

/** What the commands call, on the migrated database. */
const CommandsLive = Layer.mergeAll(
  Identity.Default,
  Channels.Default,
  Knowledge.Default,
  Pipelines.Default,
  Versions.Default,
  AdminRepo.Default,
  BoundAddresses.Default
).pipe(Layer.provideMerge(MigrationsLive), Layer.provideMerge(CliSqlLive))

/** Runs `use` with the commands on a database opened once here, then closes it. */
export const withDatabase = <A, E>(use: (execute: Execute) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<Layer.Layer.Success<typeof CommandsLive> | AppConfig>()
    return yield* use((command) => runCommand(command).pipe(Effect.provide(context)))
  }).pipe(Effect.provide(CommandsLive))
