/**
 * `pnpm start` and `pnpm parley`: the built CLI (packages/server/dist), built first when it is missing
 * or older than the sources, so a fresh clone needs only `pnpm install && pnpm start`.
 */
import { pathToFileURL } from "node:url"
import { build, entry, isStale } from "./build.mjs"

if (isStale()) {
  process.stdout.write("Building Parley (packages/server/dist): first start, or the sources changed ... ")
  const ms = await build()
  process.stdout.write(`done in ${(ms / 1000).toFixed(1)} s\n`)
}
await import(pathToFileURL(entry).href)
