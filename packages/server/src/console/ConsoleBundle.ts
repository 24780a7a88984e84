/**
 * The operator console's script and stylesheet (packages/console): assets of the production build, or,
 * running from the sources, bundled by esbuild on first use. Fixed for the process's life, gzipped once,
 * named in the page by their hash.
 */
import { Effect } from "effect"
import { optionalAsset } from "../Assets.js"
import { fixed } from "../http/StaticBody.js"

interface Sources {
  readonly js: string
  readonly css: string
}

const fromAssets = (): Sources | undefined => {
  const js = optionalAsset("console.js")
  const css = optionalAsset("console.css")
  return js === undefined || css === undefined ? undefined : { js: js.toString("utf8"), css: css.toString("utf8") }
}

const fromSources = Effect.promise(async () => {
  // beside the server's sources in the repository; the build has the assets instead
  const module = (await import(new URL("../../../console/build.mjs", import.meta.url).href)) as {
    readonly bundleConsole: () => Promise<Sources>
  }
  return module.bundleConsole()
})

/** The bundle, made once: an effect to yield where it is needed (the first console request waits for it). */
export const makeConsoleBundle = Effect.cached(
  Effect.suspend(() => {
    const assets = fromAssets()
    return assets === undefined ? fromSources : Effect.succeed(assets)
  }).pipe(Effect.map((sources) => ({ js: fixed(sources.js), css: fixed(sources.css) })))
)
