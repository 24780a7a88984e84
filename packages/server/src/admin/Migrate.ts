import { NodeContext } from "@effect/platform-node"
import * as PgMigrator from "@effect/sql-pg/PgMigrator"
import { Effect } from "effect"
import { migrations } from "../db/migrations/index.js"

/** `parley migrate`: applies pending migrations and names them; needs nothing but the database. */
export const migrate = PgMigrator.run({ loader: PgMigrator.fromRecord(migrations) }).pipe(
  Effect.map((applied) => ({ applied: applied.map(([id, name]) => `${String(id).padStart(4, "0")}_${name}`) })),
  Effect.provide(NodeContext.layer),
  Effect.orDie
)
