/** Build step (scripts/build.mjs): `node initial-database.mjs <file>` writes the migrated dump. */
import { NodeRuntime } from "@effect/platform-node"
import { writeMigratedDump } from "./InitialDatabase.js"

const file = process.argv[2]
if (file === undefined) throw new Error("usage: initial-database.mjs <file>")
NodeRuntime.runMain(writeMigratedDump(file))
