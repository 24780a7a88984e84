/**
 * A new embedded database starts from a dump of an empty, fully migrated one: `initdb` in PGlite takes
 * seconds, loading a dump a fraction of that. The production build writes the dump (scripts/build.mjs,
 * through `writeInitialDatabase.ts`) and ships it as an asset; test runs write their own (globalSetup).
 */
import { Effect, Layer } from "effect"
import * as Fs from "node:fs"
import { optionalAsset } from "../Assets.js"
import { MigrationsLive, openPglite } from "./Database.js"
import * as PgliteClient from "./PgliteClient.js"

export const INITIAL_DATABASE_ASSET = "initial-database.tar.gz"

/** Migrates a fresh in-memory database and writes its gzipped dump to `file`. */
export const writeMigratedDump = (file: string) =>
  Effect.scoped(Effect.gen(function*() {
    const db = yield* openPglite({})
    yield* Layer.build(MigrationsLive.pipe(Layer.provide(PgliteClient.layer(db))))
    const dump = yield* Effect.promise(() => db.dumpDataDir("gzip"))
    Fs.writeFileSync(file, Buffer.from(yield* Effect.promise(() => dump.arrayBuffer())))
  }))

/** The build's dump, when this installation has one (running from the sources, it has not). */
export const initialDatabase = (): Blob | undefined => {
  const bytes = optionalAsset(INITIAL_DATABASE_ASSET)
  return bytes === undefined ? undefined : new Blob([new Uint8Array(bytes)])
}
