/**
 * The console's bundle: `src/main.tsx` and what it imports (Preact, signals, socket.io's client, our CSS),
 * minified for browsers by esbuild into one ES module and one stylesheet, in memory. The production build
 * (scripts/build.mjs) writes them as assets; the server running from sources calls this on the first
 * request for the console (packages/server/src/console/ConsoleBundle.ts).
 */
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const here = Path.dirname(fileURLToPath(import.meta.url))

/** `{js, css}` as UTF-8 text. */
export const bundleConsole = async () => {
  const esbuild = await import("esbuild")
  const result = await esbuild.build({
    absWorkingDir: here,
    entryPoints: [Path.join(here, "src/main.tsx")],
    bundle: true,
    write: false,
    outdir: "out",
    format: "esm",
    platform: "browser",
    target: ["chrome111", "firefox115", "safari16.4"],
    jsx: "automatic",
    jsxImportSource: "preact",
    minify: true,
    legalComments: "none",
    define: { "process.env.NODE_ENV": "\"production\"" },
    logLevel: "warning"
  })
  const text = (ext) => result.outputFiles.find((f) => f.path.endsWith(ext))?.text ?? ""
  return { js: text(".js"), css: text(".css") }
}
