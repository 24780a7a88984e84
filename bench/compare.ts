/**
 * Before and after in one run, for a machine shared with other work: two `parley serve` processes, one
 * from another checkout (a worktree of an earlier commit, its dependencies installed) and one from this
 * one, each on a throwaway Postgres cluster of its own (or each on an embedded data dir when BENCH_PG is
 * not set), load in short blocks alternating between them, and per block each server's node CPU per
 * request (and Postgres's), so that whatever else the machine does falls on both alike. Medians of the
 * blocks, with every block's figure.
 * Run: npx tsx bench/compare.ts <other checkout> [blocks per side, 10] [scenarios: get,health,inbound]
 * e.g. git worktree add --detach /tmp/parley-before <commit>, node_modules linked or installed there.
 */
import * as Path from "node:path"
import { cpuMs, load, type RequestSpec, send, setup, startServer } from "./support.js"

const other = Path.resolve(process.argv[2] ?? "")
if (process.argv[2] === undefined) throw new Error("usage: npx tsx bench/compare.ts <other checkout> [blocks] [scenarios]")
const blocks = Number(process.argv[3] ?? 10)
const scenarios = (process.argv[4] ?? "get,health,inbound").split(",")
const BLOCK_S = 1.5

const start = async (label: string, from?: string) => {
  const s = await setup()
  const server = await startServer({}, s, from)
  const auth = { authorization: `Bearer ${server.demo.token}`, "content-type": "application/json" }
  const ids: Array<number> = []
  for (let i = 0; i < 200; i++) {
    const r = await send({
      method: "POST",
      url: `${server.api}/api/user/opportunities`,
      headers: auth,
      body: JSON.stringify({ pipeline_id: server.demo.pipeline_id, name: `Seed ${i}`, tags: ["bench"], contact: { phone: String(4915100000000 + i), name: `Lead ${i}` } })
    })
    ids.push(JSON.parse(r.body).data.id)
  }
  // no agent turn during the inbound rows (as receiver.ts)
  await send({ method: "PUT", url: `${server.api}/api/user/pipelines/${server.demo.pipeline_id}`, headers: auth, body: JSON.stringify({ reply_debounce_ms: 60_000 }) })
  const basic = `Basic ${Buffer.from(`${server.demo.channel.client_id}:${server.demo.channel.client_secret}`).toString("base64")}`
  let sent = 0
  const spec = (scenario: string) => (i: number): RequestSpec =>
    scenario === "health"
      ? { method: "GET", url: `${server.api}/health` }
      : scenario === "inbound"
      ? {
        method: "POST",
        url: `${server.receiver}/web-chat/message`,
        headers: { authorization: basic, "content-type": "application/json" },
        body: JSON.stringify({ contact_id: `visitor-${i % 500}`, message: `Message ${sent++}` })
      }
      : { method: "GET", url: `${server.api}/api/user/opportunities/${ids[i % ids.length]}`, headers: auth }
  return { label, s, server, pid: server.processes[0]!.pid, spec }
}

const before = await start(`before (${other})`, other)
const after = await start("after (this checkout)")
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const lines: Array<string> = []
try {
  for (const scenario of scenarios) {
    const concurrency = scenario === "inbound" ? 16 : 32
    const figures = new Map([[before, { node: [] as Array<number>, pg: [] as Array<number>, rate: [] as Array<number> }], [after, { node: [], pg: [], rate: [] }]])
    // warm-up (each inbound visitor writes once first: contact, conversation and opportunity)
    for (const side of [before, after]) {
      if (scenario === "inbound") for (let i = 0; i < 500; i += 16) await Promise.all(Array.from({ length: 16 }, (_, j) => send(side.spec(scenario)(i + j))))
      await load(concurrency, 2, side.spec(scenario))
    }
    for (let b = 0; b < blocks * 2; b++) {
      const side = b % 2 === 0 ? before : after
      await load(concurrency, 0.3, side.spec(scenario))
      const node0 = cpuMs(side.pid)
      const pg0 = (await side.s.database.counters())?.cpu
      const r = await load(concurrency, BLOCK_S, side.spec(scenario))
      const pg1 = (await side.s.database.counters())?.cpu
      const f = figures.get(side)!
      f.node.push((cpuMs(side.pid) - node0) / r.requests)
      if (pg0 !== undefined && pg1 !== undefined) f.pg.push((pg1 - pg0) / r.requests)
      f.rate.push(r.perSecond)
    }
    lines.push(`\n${scenario}, concurrency ${concurrency}, ${blocks} blocks of ${BLOCK_S} s each side:\n`)
    lines.push("| server | req/s (median) | node CPU ms / req | Postgres CPU ms / req | node CPU per block |", "|---|---|---|---|---|")
    for (const side of [before, after]) {
      const f = figures.get(side)!
      lines.push(`| ${side.label} | ${median(f.rate).toFixed(0)} | ${median(f.node).toFixed(3)} | ${f.pg.length > 0 ? median(f.pg).toFixed(3) : ""} | ${f.node.map((x) => x.toFixed(2)).join(" ")} |`)
    }
  }
} finally {
  for (const side of [before, after]) {
    await side.server.stop()
    await side.s.database.stop()
  }
}
console.log(`\n${before.server.label}; node ${process.version}`)
console.log(lines.join("\n"))
process.exit(0)
