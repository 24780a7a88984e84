/**
 * Before and after in one run, for a machine shared with other work: two `parley serve` processes, one
 * from another checkout (a worktree of an earlier commit, its dependencies installed) and one from this
 * one, each on a throwaway Postgres cluster of its own (or each on an embedded data dir when BENCH_PG is
 * not set), load in short blocks alternating between them, and per block each server's node CPU per
 * request (and Postgres's), so that whatever else the machine does falls on both alike. Medians of the
 * blocks, with every block's figure.
 * Scenarios: `get` (an opportunity, concurrency 32), `health` (32), `inbound` (a contact's message with no
 * agent turn, 16), `reply` (a message and its reply at a local webhook receiver, as reply.ts does, 16 loops
 * over 64 conversations a side: CPU per reply).
 * Run: npx tsx bench/compare.ts <other checkout> [blocks per side, 10] [scenarios: get,health,inbound; or reply]
 * e.g. git worktree add --detach /tmp/parley-before <commit>, node_modules linked or installed there.
 */
import * as Path from "node:path"
import { type Exchange, replyExchange, replyServerEnv, startReplyHook } from "./replies.js"
import { cpuMs, load, type RequestSpec, send, setup, startServer } from "./support.js"

const other = Path.resolve(process.argv[2] ?? "")
if (process.argv[2] === undefined) {
  throw new Error("usage: npx tsx bench/compare.ts <other checkout> [blocks] [scenarios]")
}
const blocks = Number(process.argv[3] ?? 10)
const scenarios = (process.argv[4] ?? "get,health,inbound").split(",")
const BLOCK_S = 1.5

/** One receiver for both servers' reply webhooks: contact ids start with the side's name. */
const secrets = new Map<string, string>()
const hook = await startReplyHook((contactId) => secrets.get(contactId.split("-")[0]!) ?? "")

/** `concurrency` loops, each making its next exchange as soon as the last was answered, for `seconds`. */
const exchanges = async (
  concurrency: number,
  seconds: number,
  next: (loop: number, n: number) => Promise<Exchange>
) => {
  let requests = 0
  const started = performance.now()
  const deadline = started + seconds * 1000
  await Promise.all(Array.from({ length: concurrency }, async (_, loop) => {
    for (let n = 0; performance.now() < deadline; n++) await next(loop, n).then(() => requests++)
  }))
  return { requests, perSecond: requests / ((performance.now() - started) / 1000) }
}

const start = async (label: string, side: string, from?: string) => {
  const s = await setup()
  const server = await startServer(replyServerEnv, s, from)
  secrets.set(side, server.demo.channel.client_secret)
  const auth = { authorization: `Bearer ${server.demo.token}`, "content-type": "application/json" }
  const ids: Array<number> = []
  for (let i = 0; i < 200; i++) {
    const r = await send({
      method: "POST",
      url: `${server.api}/api/user/opportunities`,
      headers: auth,
      body: JSON.stringify({
        pipeline_id: server.demo.pipeline_id,
        name: `Seed ${i}`,
        tags: ["bench"],
        contact: { phone: String(4915100000000 + i), name: `Lead ${i}` }
      })
    })
    ids.push(JSON.parse(r.body).data.id)
  }
  // no agent turn during the inbound rows (as receiver.ts); the reply scenario sets the debounce to 0 (replies.ts)
  const debounce = (ms: number) =>
    send({
      method: "PUT",
      url: `${server.api}/api/user/pipelines/${server.demo.pipeline_id}`,
      headers: auth,
      body: JSON.stringify({ reply_debounce_ms: ms })
    })
  const basic = `Basic ${
    Buffer.from(`${server.demo.channel.client_id}:${server.demo.channel.client_secret}`).toString("base64")
  }`
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
  const contacts = Array.from({ length: 64 }, (_, i) => `${side}-reply-${i}`)
  let exchange: ((contactId: string, text: string) => Promise<Exchange>) | undefined
  /**
   * Sets the pipeline up for the scenario and warms it: each inbound visitor or reply conversation writes once first.
   */
  const prepare = async (scenario: string, concurrency: number) => {
    if (scenario === "reply") {
      exchange = await replyExchange(server, hook)
      for (let i = 0; i < contacts.length; i += 16) {
        await Promise.all(contacts.slice(i, i + 16).map((c) => exchange!(c, "Hello")))
      }
    } else {
      await debounce(60_000)
      if (scenario === "inbound") {
        for (let i = 0; i < 500; i += 16) {
          await Promise.all(Array.from({ length: 16 }, (_, j) => send(spec(scenario)(i + j))))
        }
      }
    }
    await run(scenario, concurrency, 2)
  }
  const run = (scenario: string, concurrency: number, seconds: number) =>
    scenario === "reply"
      ? exchanges(concurrency, seconds, (loop, n) => {
        const own = contacts.filter((_, i) => i % concurrency === loop)
        return exchange!(own[n % own.length]!, `What does the annual plan cost? (${n})`)
      })
      : load(concurrency, seconds, spec(scenario))
  return { label, s, server, pid: server.processes[0]!.pid, prepare, run }
}

const before = await start(`before (${other})`, "before", other)
const after = await start("after (this checkout)", "after")
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const lines: Array<string> = []
try {
  for (const scenario of scenarios) {
    const concurrency = scenario === "inbound" || scenario === "reply" ? 16 : 32
    const figures = new Map([[before, {
      node: [] as Array<number>,
      pg: [] as Array<number>,
      rate: [] as Array<number>
    }], [after, { node: [], pg: [], rate: [] }]])
    for (const side of [before, after]) await side.prepare(scenario, concurrency)
    for (let b = 0; b < blocks * 2; b++) {
      const side = b % 2 === 0 ? before : after
      await side.run(scenario, concurrency, 0.3)
      const node0 = cpuMs(side.pid)
      const pg0 = (await side.s.database.counters())?.cpu
      const r = await side.run(scenario, concurrency, BLOCK_S)
      const pg1 = (await side.s.database.counters())?.cpu
      const f = figures.get(side)!
      f.node.push((cpuMs(side.pid) - node0) / r.requests)
      if (pg0 !== undefined && pg1 !== undefined) f.pg.push((pg1 - pg0) / r.requests)
      f.rate.push(r.perSecond)
    }
    lines.push(`\n${scenario}, concurrency ${concurrency}, ${blocks} blocks of ${BLOCK_S} s each side:\n`)
    lines.push(
      "| server | req/s (median) | node CPU ms / req | Postgres CPU ms / req | node CPU per block |",
      "|---|---|---|---|---|"
    )
    for (const side of [before, after]) {
      const f = figures.get(side)!
      lines.push(
        `| ${side.label} | ${median(f.rate).toFixed(0)} | ${median(f.node).toFixed(3)} | ${
          f.pg.length > 0 ? median(f.pg).toFixed(3) : ""
        } | ${f.node.map((x) => x.toFixed(2)).join(" ")} |`
      )
    }
  }
} finally {
  for (const side of [before, after]) {
    await side.server.stop()
    await side.s.database.stop()
  }
  hook.close()
}
console.log(`\n${before.server.label}; node ${process.version}`)
console.log(lines.join("\n"))
if (hook.stats.badSignatures > 0 || hook.stats.unexpected > 0) {
  console.log(`\nreply webhooks: ${hook.stats.badSignatures} bad signatures, ${hook.stats.unexpected} unexpected`)
}
process.exit(0)
