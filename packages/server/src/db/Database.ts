import { PGlite } from "@electric-sql/pglite"
import { vector } from "@electric-sql/pglite-pgvector"
import { NodeContext } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import * as PgMigrator from "@effect/sql-pg/PgMigrator"
import { Data, Effect, Layer, Option } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { AppConfig } from "../config/AppConfig.js"
import { acquireDataDirLock } from "./DataDirLock.js"
import { embeddedVacuum } from "./EmbeddedVacuum.js"
import { migrations } from "./migrations/index.js"
import * as PgliteClient from "./PgliteClient.js"
import { pgTypeParser } from "./PgTypes.js"

export class DatabaseOpenError extends Data.TaggedError("DatabaseOpenError")<{ readonly message: string; readonly cause?: unknown }> {}

/** Opens (or initialises) an embedded PGlite with pgvector; `dataDir` undefined keeps it in memory. */
export const openPglite = (options: { readonly dataDir?: string; readonly loadDataDir?: Blob }) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        if (options.dataDir !== undefined) Fs.mkdirSync(Path.dirname(Path.resolve(options.dataDir)), { recursive: true })
        const db = await PGlite.create({
          ...(options.dataDir !== undefined ? { dataDir: options.dataDir } : {}),
          ...(options.loadDataDir !== undefined ? { loadDataDir: options.loadDataDir } : {}),
          extensions: { vector }
        })
        await db.exec("set time zone 'UTC'")
        return db
      },
      catch: (cause) => new DatabaseOpenError({ message: `Could not open the embedded database: ${String(cause)}`, cause })
    }),
    (db) => Effect.promise(() => db.close())
  )

export const embeddedDataPath = (dataDir: string) => Path.join(dataDir, "pgdata")

/** The embedded database in `PARLEY_DATA_DIR`, or Postgres at `DATABASE_URL`. */
export const SqlLive = Layer.unwrapScoped(Effect.gen(function*() {
  const config = yield* AppConfig
  if (Option.isSome(config.databaseUrl)) {
    return PgClient.layer({
      url: config.databaseUrl.value,
      maxConnections: config.databasePoolSize,
      types: { getTypeParser: pgTypeParser }
    })
  }
  yield* acquireDataDirLock(config.dataDir)
  const db = yield* openPglite({ dataDir: embeddedDataPath(config.dataDir) })
  return embeddedVacuum(config.embeddedVacuumMs).pipe(Layer.provideMerge(PgliteClient.layer(db)))
}))

/** Runs pending migrations; everything that touches tables is built on top of this layer. */
export const MigrationsLive = PgMigrator.layer({ loader: PgMigrator.fromRecord(migrations) }).pipe(
  Layer.provide(NodeContext.layer)
)
