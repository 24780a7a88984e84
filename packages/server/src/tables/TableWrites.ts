/**
 * Statements that write a table, built from the columns a caller sets. A table with one writer (docs/architecture.md,
 * "Who writes each table") exports its own typed `insert` and `update` from these, so its SQL text lives in one
 * module; a repository whose statement writes several tables at once (a reply stored with its charge) embeds
 * them as fragments and stays one statement.
 */
import { type SqlClient, Statement } from "@effect/sql"

/** A column's value: a parameter, or SQL of the statement around it (`c.workspace_id`, `now()`, a `case`). */
export type SqlValue = Statement.Fragment | string | number | boolean | null | Date

/** The columns a write sets; one left out or `undefined` keeps its value (or its default). */
export type Columns<C extends string> = { readonly [K in C]?: SqlValue | undefined }

export const valueOf = (sql: SqlClient.SqlClient, value: SqlValue | undefined): Statement.Fragment =>
  Statement.isFragment(value) ? value : sql`${value ?? null}`

const entriesOf = <C extends string>(values: Columns<C>) =>
  Object.entries(values).filter((e): e is [C, SqlValue] => e[1] !== undefined)

/**
 * `insert into <table> (<columns>) select <values>`; the statement around it adds its `from`, `where`, `on conflict`
 * and `returning`.
 */
export const insertInto = <C extends string>(table: string) => (sql: SqlClient.SqlClient, values: Columns<C>) => {
  const entries = entriesOf(values)
  return sql`insert into ${sql(table)} (${sql.csv(entries.map(([column]) => sql.literal(column)))}) select ${
    sql.csv(entries.map(([, value]) => valueOf(sql, value)))
  }`
}

/** `update <table> set <column> = <value>, ...` followed by `rest` (its `where`, `returning`). */
export const updateOf =
  <C extends string>(table: string) => (sql: SqlClient.SqlClient, set: Columns<C>, rest: Statement.Fragment) =>
    sql`update ${sql(table)} set ${
      sql.csv(entriesOf(set).map(([column, value]) => sql`${sql.literal(column)} = ${valueOf(sql, value)}`))
    } ${rest}`
