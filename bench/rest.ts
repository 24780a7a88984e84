/**
 * REST throughput on the embedded database: GET opportunity by id and POST opportunity, concurrency 32.
 * Run: pnpm bench:rest   (or: npx tsx bench/rest.ts [seconds])
 */
import { header, load, row, send, startServer } from "./support.js"

const seconds = Number(process.argv[2] ?? 10)
const concurrency = 32

const server = await startServer()
const auth = { authorization: `Bearer ${server.demo.token}`, "content-type": "application/json" }
const phone = (i: number) => String(4915100000000 + i)
try {
  // 200 opportunities to read back
  const ids: Array<number> = []
  for (let i = 0; i < 200; i++) {
    const r = await send({
      method: "POST",
      url: `${server.api}/api/user/opportunities`,
      headers: auth,
      body: JSON.stringify({ pipeline_id: server.demo.pipeline_id, name: `Seed ${i}`, tags: ["bench"], contact: { phone: phone(i), name: `Lead ${i}` } })
    })
    ids.push(JSON.parse(r.body).data.id)
  }
  const get = (i: number) => ({ method: "GET", url: `${server.api}/api/user/opportunities/${ids[i % ids.length]}`, headers: auth })
  await load(concurrency, 2, get) // warm-up
  const gets = await load(concurrency, seconds, get)
  let created = 1000
  const posts = await load(concurrency, seconds, () => ({
    method: "POST",
    url: `${server.api}/api/user/opportunities`,
    headers: auth,
    body: JSON.stringify({ pipeline_id: server.demo.pipeline_id, name: "Bench lead", tags: ["bench"], contact: { phone: phone(created++) } })
  }))
  console.log(`\nREST on the embedded database, ${seconds} s per scenario, node ${process.version}\n`)
  console.log(header)
  console.log(row("GET /api/user/opportunities/{id}", concurrency, gets))
  console.log(row("POST /api/user/opportunities (new contact)", concurrency, posts))
} finally {
  await server.stop()
}
