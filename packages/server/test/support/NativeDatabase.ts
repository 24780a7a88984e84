/**
 * Which database a suite runs on, and databases of a test's own on the run's native Postgres cluster.
 *
 * `databaseMode` is `postgres` in vitest's `postgres` project (PARLEY_TEST_DATABASE=postgres, see
 * vitest.config.ts), `embedded` otherwise. In the `postgres` project the global setup (globalSetup.ts)
 * has started a throwaway cluster with a migrated template database and provides its admin URL; a test
 * creates its own database from that template (a file copy: milliseconds) and drops it at the end.
 */
import pg from "pg"
import { inject } from "vitest"
import { pgTypeParser } from "../../src/db/PgTypes.js"
import { TEMPLATE_DATABASE } from "./NativePostgres.js"

export const databaseMode: "embedded" | "postgres" = process.env.PARLEY_TEST_DATABASE === "postgres"
  ? "postgres"
  : "embedded"

/** Runs `text` on the database at `url` with a connection of its own; rows parsed as the app parses them. */
export const queryUrl = async <A = Record<string, unknown>>(
  url: string,
  text: string,
  params: ReadonlyArray<unknown> = []
) => {
  const client = new pg.Client({ connectionString: url, types: { getTypeParser: pgTypeParser } })
  await client.connect()
  try {
    return (await client.query(text, [...params])).rows as Array<A>
  } finally {
    await client.end()
  }
}

export interface NativeDatabase {
  readonly name: string
  /** As the superuser `postgres`, or as `role` when one was asked for. */
  readonly url: string
  /** The same database as the superuser (never counted against a role's connection limit). */
  readonly adminUrl: string
  /** Drops the database (cutting its sessions) and its role. */
  readonly drop: () => Promise<void>
}

let databases = 0

/**
 * A database of its own on the run's native cluster (`postgres` project only): a copy of the migrated
 * template, or with `empty` a database with only the `vector` extension, owned by a login role of its
 * own allowed `connectionLimit` connections (as docs/deploy.md sets one up).
 */
export const createNativeDatabase = async (
  options: { readonly empty?: boolean; readonly connectionLimit?: number } = {}
): Promise<NativeDatabase> => {
  if (databaseMode !== "postgres") {
    throw new Error("a native database exists in the postgres project only (PARLEY_TEST_DATABASE=postgres)")
  }
  const admin = inject("pgAdminUrl")
  const name = `parley_test_${process.pid}_${++databases}_${Date.now().toString(36)}`
  const adminUrl = admin.replace(/\/postgres$/, `/${name}`)
  if (options.empty !== true) {
    await queryUrl(admin, `create database ${name} template ${TEMPLATE_DATABASE}`)
    return {
      name,
      url: adminUrl,
      adminUrl,
      drop: () => queryUrl(admin, `drop database if exists ${name} with (force)`).then(() => undefined)
    }
  }
  const limit = options.connectionLimit ?? -1
  await queryUrl(admin, `create role ${name} login connection limit ${limit}`)
  await queryUrl(admin, `create database ${name} owner ${name}`)
  await queryUrl(adminUrl, "create extension vector")
  return {
    name,
    url: admin.replace(/\/\/postgres@/, `//${name}@`).replace(/\/postgres$/, `/${name}`),
    adminUrl,
    drop: async () => {
      await queryUrl(admin, `drop database if exists ${name} with (force)`)
      await queryUrl(admin, `drop role if exists ${name}`)
    }
  }
}
