/**
 * Migrates the database at argv[2] with the server's migrations (the native Postgres template of the
 * suite's `postgres` project). A script of its own, run with tsx by globalSetup.ts: the global setup
 * cannot load the Postgres driver's modules itself.
 */
import { NodeContext } from "@effect/platform-node"
import { PgMigrator } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { migrations } from "../../src/db/migrations/index.js"
import { pooledPgClient } from "../../src/db/PgPool.js"

await Effect.runPromise(Effect.scoped(Layer.build(
  PgMigrator.layer({ loader: PgMigrator.fromRecord(migrations) }).pipe(
    Layer.provide(pooledPgClient(Redacted.make(process.argv[2]!), 2)),
    Layer.provide(NodeContext.layer)
  )
)))
