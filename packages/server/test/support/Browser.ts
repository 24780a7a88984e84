/**
 * Headless Chromium for the browser suites: Debian's `chromium` package (`.ci/run` installs it), driven by
 * playwright-core.
 */
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { type Browser, chromium } from "playwright-core"

/** Debian's `chromium`; CHROMIUM_PATH overrides. Missing, the suite fails, never skips. */
export const chromiumPath = () => {
  const candidates = [
    process.env.CHROMIUM_PATH,
    ...(process.env.PATH ?? "").split(Path.delimiter).map((dir) => Path.join(dir, "chromium")),
    "/usr/bin/chromium"
  ]
  const found = candidates.find((c) => c !== undefined && c !== "" && Fs.existsSync(c))
  if (found === undefined) {
    throw new Error("Chromium not found: install Debian's package (apt-get install -y chromium) or set CHROMIUM_PATH")
  }
  return found
}

export const launchBrowser = () => chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox"] })

/** A browser for the test's scope. */
export const launch = Effect.acquireRelease(
  Effect.promise(launchBrowser),
  (browser: Browser) => Effect.promise(() => browser.close())
)
