// Preloaded into a server process for diagnosis (BENCH_NODE_ARGS="--import ./bench/cpu-profile.mjs"): the
// first SIGUSR2 starts V8's sampling profiler, the second writes `<BENCH_PROFILE_DIR or tmp>/<pid>.cpuprofile`
// (open it in Chrome DevTools, or summarise it with `node bench/cpu-profile.mjs <file>`).
import * as Fs from "node:fs"
import * as Inspector from "node:inspector"
import * as Os from "node:os"
import * as Path from "node:path"

if (process.argv[1] !== undefined && import.meta.url.endsWith(Path.basename(process.argv[1]))) {
  // summary: self time by package or source file, and by function
  const p = JSON.parse(Fs.readFileSync(process.argv[2], "utf8"))
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const self = new Map()
  p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)))
  const busy = [...self].filter(([id]) => byId.get(id).callFrame.functionName !== "(idle)").reduce((a, [, t]) => a + t, 0)
  const files = new Map()
  const fns = new Map()
  for (const [id, t] of self) {
    const cf = byId.get(id).callFrame
    if (cf.functionName === "(idle)") continue
    const file = cf.url.replace(/.*node_modules\/\.pnpm\/(@?[^/@]+(?:\+[^/@]+)?)@[^/]+\/node_modules\/.*?\/dist\/(?:esm|cjs)?\/?/, "$1 ").replace(/.*\/packages\//, "packages/") || cf.functionName
    files.set(file, (files.get(file) ?? 0) + t)
    const fn = `${cf.functionName || "(anonymous)"}  ${file}:${cf.lineNumber + 1}`
    fns.set(fn, (fns.get(fn) ?? 0) + t)
  }
  const top = (m, n) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${((100 * v) / busy).toFixed(1).padStart(5)}%  ${k}`).join("\n")
  console.log(`busy ${(busy / 1e6).toFixed(2)} s of ${((p.endTime - p.startTime) / 1e6).toFixed(2)} s\n\nby file\n${top(files, 30)}\n\nby function\n${top(fns, 40)}`)
} else {
  const session = new Inspector.Session()
  session.connect()
  let running = false
  process.on("SIGUSR2", () => {
    if (!running) {
      running = true
      session.post("Profiler.enable", () => session.post("Profiler.start"))
      return
    }
    running = false
    session.post("Profiler.stop", (error, result) => {
      if (error) return
      const file = Path.join(process.env.BENCH_PROFILE_DIR ?? Os.tmpdir(), `${process.pid}.cpuprofile`)
      Fs.writeFileSync(file, JSON.stringify(result.profile))
      process.stderr.write(`CPU profile written to ${file}\n`)
    })
  })
}
