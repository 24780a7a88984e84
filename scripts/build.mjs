/**
 * `pnpm build`: the production build. One esbuild bundle of the CLI and server (every package and its
 * dependencies, split so `parley --help` loads nothing of the server) in packages/server/dist, with
 * source maps and the assets the server reads at run time. PGlite stays an ordinary dependency: it
 * loads its WebAssembly and data files from beside its own modules.
 *
 * Also a module: `isStale()` and `build()` are what scripts/parley.mjs uses to build before it runs.
 */
import { execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { createRequire } from "node:module"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
export const dist = Path.join(root, "packages/server/dist")
export const entry = Path.join(dist, "parley.mjs")

/** What the bundle is made of: a change to any of these makes it stale. */
const inputs = () => {
  const files = [Path.join(root, "pnpm-lock.yaml"), fileURLToPath(import.meta.url)]
  for (const pkg of Fs.readdirSync(Path.join(root, "packages"))) {
    const dir = Path.join(root, "packages", pkg)
    files.push(Path.join(dir, "package.json"))
    const src = Path.join(dir, "src")
    if (Fs.existsSync(src)) for (const f of Fs.readdirSync(src, { recursive: true })) files.push(Path.join(src, String(f)))
  }
  return files
}

const newest = (files) => Math.max(...files.map((f) => Fs.existsSync(f) ? Fs.statSync(f).mtimeMs : 0))

/** Missing, or older than a source file, a package manifest, the lockfile or this script. */
export const isStale = () => !Fs.existsSync(entry) || Fs.statSync(entry).mtimeMs < newest(inputs())

/** Modules that read files from beside themselves at run time, and optional native add-ons. */
const external = ["@electric-sql/pglite", "@electric-sql/pglite/*", "@electric-sql/pglite-pgvector", "pg-native", "bufferutil", "utf-8-validate"]

/**
 * The migrated initial database for new data dirs (packages/server/src/db/InitialDatabase.ts): made by
 * the bundle's own `initial-database.mjs`, and kept in node_modules/.cache keyed by what decides its
 * contents (PGlite's version and the migrations), so a rebuild that changes neither reuses it.
 */
const initialDatabase = (bundleDir) => {
  const hash = createHash("sha256")
  for (const pkg of ["@electric-sql/pglite", "@electric-sql/pglite-pgvector"]) {
    hash.update(Fs.readFileSync(Path.join(root, "packages/server/node_modules", pkg, "package.json")))
  }
  const migrationsDir = Path.join(root, "packages/server/src/db/migrations")
  for (const file of Fs.readdirSync(migrationsDir).sort()) hash.update(file).update(Fs.readFileSync(Path.join(migrationsDir, file)))
  const cached = Path.join(root, "node_modules/.cache/parley", `initial-database-${hash.digest("hex").slice(0, 16)}.tar.gz`)
  if (!Fs.existsSync(cached)) {
    Fs.mkdirSync(Path.dirname(cached), { recursive: true })
    execFileSync(process.execPath, [Path.join(bundleDir, "initial-database.mjs"), `${cached}.tmp`], { stdio: "inherit" })
    Fs.renameSync(`${cached}.tmp`, cached)
  }
  return cached
}

export const build = async () => {
  const esbuild = await import("esbuild")
  const started = performance.now()
  Fs.rmSync(dist, { recursive: true, force: true })
  const result = await esbuild.build({
    metafile: true,
    absWorkingDir: root,
    entryPoints: {
      parley: Path.join(root, "packages/server/src/cli/main.ts"),
      "initial-database": Path.join(root, "packages/server/src/db/writeInitialDatabase.ts")
    },
    bundle: true,
    splitting: true,
    platform: "node",
    format: "esm",
    target: "node20",
    outdir: dist,
    outExtension: { ".js": ".mjs" },
    chunkNames: "chunks/[name]-[hash]",
    sourcemap: "linked",
    sourcesContent: false,
    external,
    // dependencies written as CommonJS call require(); an ES module has none of its own
    banner: { js: "import { createRequire as __parleyRequire } from 'node:module'; const require = __parleyRequire(import.meta.url);" },
    logLevel: "warning",
    legalComments: "none"
  })
  // read with `new URL("./assets/...", import.meta.url)` by src/Assets.ts: beside the chunk holding it
  const assetsModule = Path.join(root, "packages/server/src/Assets.ts")
  const [chunk] = Object.entries(result.metafile.outputs)
    .filter(([, output]) => Object.keys(output.inputs).some((input) => Path.resolve(root, input) === assetsModule))
  const assets = Path.join(Path.dirname(Path.resolve(root, chunk[0])), "assets")
  Fs.cpSync(Path.join(root, "packages/server/src/assets"), assets, { recursive: true })
  Fs.copyFileSync(initialDatabase(dist), Path.join(assets, "initial-database.tar.gz"))
  Fs.writeFileSync(Path.join(assets, "scalar.js"), await scalarBundle())
  // the operator console's browser bundle (packages/console): src/console/ConsoleBundle.ts reads these
  const { bundleConsole } = await import(pathToFileURL(Path.join(root, "packages/console/build.mjs")).href)
  const consoleBundle = await bundleConsole()
  Fs.writeFileSync(Path.join(assets, "console.js"), consoleBundle.js)
  Fs.writeFileSync(Path.join(assets, "console.css"), consoleBundle.css)
  return performance.now() - started
}

/**
 * Scalar's bundle for `/docs/try`, which HttpApiScalar inlines from a module @effect/platform does not
 * export: written as an asset so the build needs no node_modules for it (src/http/Docs.ts reads it).
 */
const scalarBundle = async () => {
  const platform = Path.dirname(createRequire(Path.join(root, "packages/server/package.json")).resolve("@effect/platform/package.json"))
  const module = await import(pathToFileURL(Path.join(platform, "dist/esm/internal/httpApiScalar.js")).href)
  return module.javascript
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const ms = await build()
  console.log(`Built ${Path.relative(root, entry)} in ${(ms / 1000).toFixed(1)} s`)
}
