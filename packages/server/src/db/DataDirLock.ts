/**
 * Only one process may open a PGlite data directory. Whoever opens it (the server or the CLI) holds
 * `<data dir>/lock` with its pid; a lock whose process is gone is stale and taken over.
 */
import { Data, Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"

export class DataDirBusy extends Data.TaggedError("DataDirBusy")<{ readonly pid: number; readonly message: string }> {}

export const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

export const lockPath = (dataDir: string) => Path.join(dataDir, "lock")

/** The pid holding the data directory, if a live process does. */
export const lockHolder = (dataDir: string): number | undefined => {
  try {
    const pid = Number(Fs.readFileSync(lockPath(dataDir), "utf8").trim())
    return Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid) ? pid : undefined
  } catch {
    return undefined
  }
}

const tryAcquire = (file: string): boolean => {
  try {
    Fs.writeFileSync(file, String(process.pid), { flag: "wx", mode: 0o600 })
    return true
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
    return false
  }
}

export const acquireDataDirLock = (dataDir: string) =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      Fs.mkdirSync(dataDir, { recursive: true })
      const file = lockPath(dataDir)
      if (tryAcquire(file)) return
      const holder = lockHolder(dataDir)
      if (holder !== undefined) {
        return yield* new DataDirBusy({
          pid: holder,
          message: `The data directory ${dataDir} is in use by process ${holder}`
        })
      }
      Fs.rmSync(file, { force: true })
      if (!tryAcquire(file)) {
        return yield* new DataDirBusy({
          pid: 0,
          message: `The data directory ${dataDir} was locked by another process just now`
        })
      }
    }),
    () =>
      Effect.sync(() => {
        const file = lockPath(dataDir)
        try {
          if (Fs.readFileSync(file, "utf8").trim() === String(process.pid)) Fs.rmSync(file, { force: true })
        } catch {
          // already gone
        }
      })
  )
