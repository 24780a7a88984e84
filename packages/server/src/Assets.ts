/**
 * Files the server reads as they are (the widget's script, the demo page's template, and in the
 * production build the initial embedded database), from `assets/` beside this module: in the sources,
 * and in the build (scripts/build.mjs copies them next to its chunks).
 */
import * as Fs from "node:fs"

const assetUrl = (name: string) => new URL(`./assets/${name}`, import.meta.url)

export const readAsset = (name: string): Buffer => Fs.readFileSync(assetUrl(name))

/** An asset only some installations have (the build's initial database). */
export const optionalAsset = (name: string): Buffer | undefined =>
  Fs.existsSync(assetUrl(name)) ? readAsset(name) : undefined
