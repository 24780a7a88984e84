import { NodeContext } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import * as PgMigrator from "@effect/sql-pg/PgMigrator"
import { PGlite } from "@electric-sql/pglite"
import { vector } from "@electric-sql/pglite-pgvector"
import { Data, Effect, Layer, Option } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { AppConfig } from "../config/AppConfig.js"
import { progress } from "../StartupProgress.js"
import { acquireDataDirLock } from "./DataDirLock.js"
import { embeddedVacuum } from "./EmbeddedVacuum.js"
import { initialDatabase } from "./InitialDatabase.js"
import { migrations } from "./migrations/index.js"
import * as PgliteClient from "./PgliteClient.js"
import { pooledPgClient } from "./PgPool.js"

export class DatabaseOpenError
  extends Data.TaggedError("DatabaseOpenError")<{ readonly message: string; readonly cause?: unknown }>
{}

/** Opens (or initialises) an embedded PGlite with pgvector; `dataDir` undefined keeps it in memory. */
export const openPglite = (options: { readonly dataDir?: string; readonly loadDataDir?: Blob }) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        if (options.dataDir !== undefined) {
          Fs.mkdirSync(Path.dirname(Path.resolve(options.dataDir)), { recursive: true })
        }
        const db = await PGlite.create({
          ...(options.dataDir !== undefined ? { dataDir: options.dataDir } : {}),
          ...(options.loadDataDir !== undefined ? { loadDataDir: options.loadDataDir } : {}),
          extensions: { vector }
        })
        // Generic plans for prepared statements (PgliteClient prepares every statement with parameters).
        // Postgres re-plans a prepared statement on every run once a generic plan's cost exceeds the
        // average of its first custom plans, and as tables grow that average goes stale: in a long run the
        // turn's snapshot flipped to a custom plan per execution (about 2.5 ms of planning in WASM, the
        // soak's CPU per reply rising by a quarter; docs/benchmarks.md). Statements that need a plan for
        // their values (knowledge search) ask for custom plans in their own transaction.
        await db.exec("set time zone 'UTC'; set plan_cache_mode = force_generic_plan")
        return db
      },
      catch: (cause) =>
        new DatabaseOpenError({ message: `Could not open the embedded database: ${String(cause)}`, cause })
    }),
    (db) => Effect.promise(() => db.close())
  )

export const embeddedDataPath = (dataDir: string) => Path.join(dataDir, "pgdata")

/** The embedded database in `PARLEY_DATA_DIR`, or Postgres at `DATABASE_URL`. */
export const SqlLive = Layer.unwrapScoped(Effect.gen(function*() {
  const config = yield* AppConfig
  if (Option.isSome(config.databaseUrl)) {
    yield* progress("Connecting to Postgres (DATABASE_URL)")
    return pooledPgClient(config.databaseUrl.value, config.databasePoolSize, config.databasePreparedStatements)
  }
  yield* acquireDataDirLock(config.dataDir)
  const path = embeddedDataPath(config.dataDir)
  // a new data dir starts from the build's migrated dump when there is one (see InitialDatabase.ts)
  const initial = Fs.existsSync(path) ? undefined : initialDatabase()
  yield* progress(
    Fs.existsSync(path)
      ? `Opening the embedded database in ${Path.resolve(path)}`
      : `Creating the embedded database in ${Path.resolve(path)}${
        initial === undefined ? "" : " from the built-in template"
      }`
  )
  const db = yield* openPglite({ dataDir: path, ...(initial === undefined ? {} : { loadDataDir: initial }) })
  return embeddedVacuum(config.embeddedVacuumMs).pipe(Layer.provideMerge(PgliteClient.layer(db)))
}))

/** Migrations not yet applied, for the progress lines (the migrator decides for itself). */
const pendingMigrations = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [table] = yield* sql<{ exists: boolean }>`select to_regclass('effect_sql_migrations') is not null as exists`
  const [row] = table?.exists === true
    ? yield* sql<{ latest: number | null }>`select max(migration_id) as latest from effect_sql_migrations`
    : []
  const latest = row?.latest ?? 0
  return Object.keys(migrations).filter((name) => Number(name.slice(0, 4)) > latest)
})

/** Each migration announces itself before it runs ("Migrating 3 of 16: 0003_pipelines_channels"). */
const announced = (pending: ReadonlyArray<string>) =>
  Object.fromEntries(
    Object.entries(migrations).map(([name, migration]) => [
      name,
      Effect.zipRight(progress(`Migrating ${pending.indexOf(name) + 1} of ${pending.length}: ${name}`), migration)
    ])
  )

/** Runs pending migrations; everything that touches tables is built on top of this layer. */
export const MigrationsLive = Layer.unwrapEffect(Effect.gen(function*() {
  const pending = yield* pendingMigrations.pipe(Effect.orDie)
  yield* progress(
    pending.length === 0
      ? `Database schema up to date (${Object.keys(migrations).length} migrations)`
      : `Applying ${pending.length} migrations`
  )
  return PgMigrator.layer({ loader: PgMigrator.fromRecord(announced(pending)) })
})).pipe(Layer.provide(NodeContext.layer))
