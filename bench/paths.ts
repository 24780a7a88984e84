/**
 * CPU per request of any GET paths of the server, one after the other (concurrency 32, keep-alive, 2 s of
 * warm-up each): to compare routes, such as a GET of one opportunity against `/health`. `{id}` in a path is
 * an opportunity made first (a new contact, tag `bench`). The demo token authorizes every request.
 * Run: npx tsx bench/paths.ts [seconds] [path,path,...]
 *   e.g. BENCH_PG=throwaway npx tsx bench/paths.ts 6 "/health,/api/user/opportunities/{id}"
 */
import { load, measure, send, serverProcs, setup, startServer } from "./support.js"

const seconds = Number(process.argv[2] ?? 6)
const paths = (process.argv[3] ?? "/health,/api/user/opportunities/{id}").split(",")
const concurrency = 32

const s = await setup()
try {
  const server = await startServer({}, s)
  const auth = { authorization: `Bearer ${server.demo.token}`, "content-type": "application/json" }
  try {
    const created = await send({
      method: "POST",
      url: `${server.api}/api/user/opportunities`,
      headers: auth,
      body: JSON.stringify({
        pipeline_id: server.demo.pipeline_id,
        name: "Seed",
        tags: ["bench"],
        contact: { phone: "4915100000001", name: "Lead" }
      })
    })
    const id = JSON.parse(created.body).data.id
    console.log(
      `\nGET paths on ${server.label}; ${seconds} s each, concurrency ${concurrency}, node ${process.version}\n`
    )
    console.log(
      "| path | req/s | p50 / p99 ms | server CPU ms per request | Postgres | errors |\n|---|---|---|---|---|---|"
    )
    for (const p of paths) {
      const get = () => ({ method: "GET", url: `${server.api}${p.replace("{id}", String(id))}`, headers: auth })
      await load(concurrency, 2, get) // warm-up
      const { result, costs } = await measure(s.database, serverProcs(server), () => load(concurrency, seconds, get))
      console.log(
        `| \`${p}\` | ${result.perSecond.toFixed(0)} | ${result.p50.toFixed(2)} / ${result.p99.toFixed(2)} | ${
          costs.cpu.map(([k, v]) => `${k} ${v.toFixed(3)}`).join(", ")
        } | ${costs.postgresCpu?.toFixed(3) ?? ""} | ${result.errors} |`
      )
    }
  } finally {
    await server.stop()
  }
} finally {
  await s.database.stop()
}
process.exit(0)
