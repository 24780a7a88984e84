// Preloaded into a server process for diagnosis (BENCH_NODE_ARGS="--import ./bench/cpu-profile.mjs"): the
// first SIGUSR2 starts V8's sampling profiler, the second writes `<BENCH_PROFILE_DIR or tmp>/<pid>.cpuprofile`
// (open it in Chrome DevTools, or summarise it with `node bench/cpu-profile.mjs <file>`). With
// BENCH_PROFILE=heap it samples allocations instead (every 16 KiB allocated, the collected objects
// included) and writes `<pid>.heapprofile`: what allocates, not what stays.
import * as Fs from "node:fs"
import * as Inspector from "node:inspector"
import * as Os from "node:os"
import * as Path from "node:path"

const shorten = (url) =>
  url.replace(/.*node_modules\/\.pnpm\/(@?[^/@]+(?:\+[^/@]+)?)@[^/]+\/node_modules\/.*?\/dist\/(?:esm|cjs)?\/?/, "$1 ").replace(/.*\/packages\//, "packages/")

const top = (m, total, n) =>
  [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`).join("\n")

/** Self time (CPU profile) or self bytes (heap profile) by package or source file, and by function. */
const summarise = (file) => {
  const p = JSON.parse(Fs.readFileSync(file, "utf8"))
  const self = new Map()
  const frames = new Map()
  if (p.head !== undefined) {
    // heap profile: a tree of call frames, each with its own sampled bytes
    const walk = (node) => {
      frames.set(node.id, node.callFrame)
      self.set(node.id, (node.selfSize ?? 0))
      for (const child of node.children ?? []) walk(child)
    }
    walk(p.head)
  } else {
    for (const n of p.nodes) frames.set(n.id, n.callFrame)
    p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)))
  }
  const files = new Map()
  const fns = new Map()
  let total = 0
  for (const [id, t] of self) {
    const cf = frames.get(id)
    if (cf.functionName === "(idle)" || t === 0) continue
    total += t
    const where = shorten(cf.url) || cf.functionName
    files.set(where, (files.get(where) ?? 0) + t)
    const fn = `${cf.functionName || "(anonymous)"}  ${where}:${cf.lineNumber + 1}`
    fns.set(fn, (fns.get(fn) ?? 0) + t)
  }
  const amount = p.head !== undefined ? `${(total / 1048576).toFixed(1)} MiB allocated (sampled)` : `busy ${(total / 1e6).toFixed(2)} s of ${((p.endTime - p.startTime) / 1e6).toFixed(2)} s`
  console.log(`${amount}\n\nby file\n${top(files, total, 30)}\n\nby function\n${top(fns, total, 40)}`)
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(Path.basename(process.argv[1]))) {
  summarise(process.argv[2])
} else {
  const heap = process.env.BENCH_PROFILE === "heap"
  const session = new Inspector.Session()
  session.connect()
  let running = false
  const write = (kind, profile) => {
    const file = Path.join(process.env.BENCH_PROFILE_DIR ?? Os.tmpdir(), `${process.pid}.${kind}`)
    Fs.writeFileSync(file, JSON.stringify(profile))
    process.stderr.write(`Profile written to ${file}\n`)
  }
  process.on("SIGUSR2", () => {
    running = !running
    if (heap) {
      if (running) {
        session.post("HeapProfiler.enable", () =>
          session.post("HeapProfiler.startSampling", {
            samplingInterval: 16384,
            includeObjectsCollectedByMajorGC: true,
            includeObjectsCollectedByMinorGC: true
          }))
      } else {
        session.post("HeapProfiler.stopSampling", (error, result) => error || write("heapprofile", result.profile))
      }
      return
    }
    if (running) session.post("Profiler.enable", () => session.post("Profiler.start"))
    else session.post("Profiler.stop", (error, result) => error || write("cpuprofile", result.profile))
  })
}
