/**
 * The database as the CLI opens it: the embedded data dir (when no server holds it) or DATABASE_URL, with
 * two connections at most and no LISTEN connection. No migrations here: `parley migrate` runs them and
 * reports, other commands build on MigrationsLive (Direct.ts).
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Stream } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import { SqlLive } from "../db/Database.js"

/** One command at a time needs little: DATABASE_POOL_SIZE is for servers. */
export const CLI_POOL_SIZE = 2

const SmallPool = Layer.effect(
  AppConfig,
  Effect.map(
    AppConfig,
    (config) => AppConfig.make({ ...config, databasePoolSize: Math.min(config.databasePoolSize, CLI_POOL_SIZE) })
  )
)

/**
 * What the services listen for (NOTIFY) clears their caches, which live for one command here, so the CLI
 * opens no LISTEN connection. Its own changes are still announced: servers forget what a command changed.
 */
const NoListen = Layer.effectContext(Effect.map(PgClient.PgClient, (pg) => {
  const client = new Proxy(pg, {
    get: (target, key) => key === "listen" ? () => Stream.never : Reflect.get(target, key)
  })
  return Context.make(PgClient.PgClient, client).pipe(Context.add(SqlClient.SqlClient, client))
}))

export const CliSqlLive = NoListen.pipe(Layer.provideMerge(SqlLive), Layer.provide(SmallPool))
