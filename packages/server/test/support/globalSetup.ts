/**
 * Initialising a PGlite data directory takes seconds, so it is done once per run: migrate a fresh
 * in-memory database, dump it, and let every suite load its own copy of the dump.
 */
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { TestProject } from "vitest/node"
import { writeMigratedDump } from "../../src/db/InitialDatabase.js"

declare module "vitest" {
  export interface ProvidedContext {
    pgDumpPath: string
  }
}

export default async function setup(project: TestProject) {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-test-"))
  const file = Path.join(dir, "migrated.tar.gz")
  await Effect.runPromise(writeMigratedDump(file))
  project.provide("pgDumpPath", file)
  return () => Fs.rmSync(dir, { recursive: true, force: true })
}
