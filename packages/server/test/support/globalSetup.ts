/**
 * Once per run and project. The embedded projects: initialising a PGlite data directory takes seconds,
 * so migrate a fresh in-memory database, dump it, and let every suite load its own copy of the dump. The
 * `postgres` project: a throwaway native cluster (NativePostgres.ts) with a migrated template database,
 * from which every suite creates a database of its own.
 */
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { TestProject } from "vitest/node"
import { writeMigratedDump } from "../../src/db/InitialDatabase.js"
import { startCluster, TEMPLATE_DATABASE } from "./NativePostgres.js"

declare module "vitest" {
  export interface ProvidedContext {
    pgDumpPath: string
    /** The native cluster's `postgres` database (to create and drop test databases), `postgres` project only. */
    pgAdminUrl: string
  }
}

const root = Path.resolve(__dirname, "../../../..")

export default async function setup(project: TestProject) {
  if (project.name === "postgres") {
    const cluster = await startCluster()
    try {
      cluster.psql("postgres", `create database ${TEMPLATE_DATABASE}`)
      execFileSync(Path.join(root, "node_modules/.bin/tsx"), [
        Path.join(__dirname, "migrateTemplate.ts"),
        cluster.url(TEMPLATE_DATABASE)
      ], {
        cwd: root,
        stdio: "pipe"
      })
      cluster.psql("postgres", `alter database ${TEMPLATE_DATABASE} with is_template true allow_connections false`)
    } catch (e) {
      cluster.stop()
      throw e
    }
    project.provide("pgAdminUrl", cluster.url("postgres"))
    return () => cluster.stop()
  }
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-test-"))
  const file = Path.join(dir, "migrated.tar.gz")
  await Effect.runPromise(writeMigratedDump(file))
  project.provide("pgDumpPath", file)
  return () => Fs.rmSync(dir, { recursive: true, force: true })
}
