/**
 * The one writer of `workspaces`: every statement that creates a workspace, changes its settings or takes its
 * credits is built here, whichever repository runs it (docs/architecture.md, "Who writes each table").
 */
import type { SqlClient } from "@effect/sql"
import { insertInto, type SqlValue, updateOf, valueOf } from "./TableWrites.js"

export type WorkspaceColumn =
  | "name"
  | "credits"
  | "training_credits"
  | "is_subscription_active"
  | "is_drafts_enabled"
  | "updated_at"

/** `insert into workspaces (...) select ...`: the caller's statement adds `returning`. */
export const insert = insertInto<WorkspaceColumn>("workspaces")

/** `update workspaces set ...` and the caller's `where`. */
export const update = updateOf<WorkspaceColumn>("workspaces")

/**
 * Takes `cost` off a workspace's credits, atomically under concurrent charges (each subtracts its own cost from
 * the row it locked). A free message leaves the row alone. With `coveredOnly`, only when the credits cover the
 * cost: the caller adds `returning id` to learn whether it was charged. The reply's statement checks its funds
 * itself and charges without it.
 */
export const chargeCredits = (
  sql: SqlClient.SqlClient,
  workspace: SqlValue,
  cost: number,
  options: { readonly coveredOnly: boolean }
) =>
  update(
    sql,
    { credits: sql`credits - ${cost}::numeric`, updated_at: sql`now()` },
    sql`where id = ${valueOf(sql, workspace)} and ${cost}::numeric > 0 ${
      options.coveredOnly ? sql`and credits >= ${cost}::numeric` : sql.literal("")
    }`
  )

/** One training credit per point embedded (knowledge upserts). */
export const spendTrainingCredits = (sql: SqlClient.SqlClient, workspace: number, credits: number) =>
  update(
    sql,
    { training_credits: sql`training_credits - ${credits}`, updated_at: sql`now()` },
    sql`where id = ${workspace}`
  )
