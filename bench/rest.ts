/**
 * REST throughput: GET opportunity by id and POST opportunity, concurrency 32, then the bare baseline of
 * the GET (node:http and one SELECT, `bare.ts`) on the same database in the same run; on Postgres also
 * the bare with its SELECT prepared.
 * Run: pnpm bench:rest   (or: npx tsx bench/rest.ts [seconds])
 * On Postgres: BENCH_PG=throwaway (a cluster for this run) or DATABASE_URL=… (an empty database), and
 * BENCH_TOPOLOGY=single|split, BENCH_WORKERS=n (see support.ts, postgres.ts).
 */
import {
  costsHeader,
  costsRow,
  header,
  load,
  measure,
  row,
  send,
  serverProcs,
  setup,
  sideBySide,
  sideBySideHeader,
  startBare,
  startServer,
  statementsTable
} from "./support.js"

const seconds = Number(process.argv[2] ?? 10)
const concurrency = 32

const s = await setup()
try {
  const server = await startServer({}, s)
  const auth = { authorization: `Bearer ${server.demo.token}`, "content-type": "application/json" }
  const phone = (i: number) => String(4915100000000 + i)
  const ids: Array<number> = []
  let gets, posts
  try {
    // 200 opportunities to read back
    for (let i = 0; i < 200; i++) {
      const r = await send({
        method: "POST",
        url: `${server.api}/api/user/opportunities`,
        headers: auth,
        body: JSON.stringify({
          pipeline_id: server.demo.pipeline_id,
          name: `Seed ${i}`,
          tags: ["bench"],
          contact: { phone: phone(i), name: `Lead ${i}` }
        })
      })
      ids.push(JSON.parse(r.body).data.id)
    }
    const get = (i: number) => ({
      method: "GET",
      url: `${server.api}/api/user/opportunities/${ids[i % ids.length]}`,
      headers: auth
    })
    await load(concurrency, 2, get) // warm-up
    // BENCH_PROFILE_LOAD=true with BENCH_NODE_ARGS="--import ./bench/cpu-profile.mjs": the GET row profiled
    const profile = () =>
      process.env.BENCH_PROFILE_LOAD === "true" && server.processes.forEach((p) => process.kill(p.pid, "SIGUSR2"))
    profile()
    gets = await measure(s.database, serverProcs(server), () => load(concurrency, seconds, get))
    profile()
    let created = 1000
    posts = await measure(s.database, serverProcs(server), () =>
      load(concurrency, seconds, () => ({
        method: "POST",
        url: `${server.api}/api/user/opportunities`,
        headers: auth,
        body: JSON.stringify({
          pipeline_id: server.demo.pipeline_id,
          name: "Bench lead",
          tags: ["bench"],
          contact: { phone: phone(created++) }
        })
      })))
  } finally {
    await server.stop(true)
  }

  // the bare baseline on the same database: the server is stopped, so the two never share the machine
  const bare = await startBare(server)
  let bareGets, preparedGets
  try {
    const get = (i: number) => ({ method: "GET", url: `${bare.url}/opportunities/${ids[i % ids.length]}` })
    await load(concurrency, 2, get) // warm-up
    bareGets = await measure(s.database, [{ name: "bare", pid: bare.pid }], () => load(concurrency, seconds, get))
    // on Postgres also with the statement prepared, as the server prepares its own (bare.ts)
    if (s.database.kind === "native") {
      const prepared = (i: number) => ({
        method: "GET",
        url: `${bare.url}/prepared/opportunities/${ids[i % ids.length]}`
      })
      await load(concurrency, 2, prepared)
      preparedGets = await measure(
        s.database,
        [{ name: "bare", pid: bare.pid }],
        () => load(concurrency, seconds, prepared)
      )
    }
  } finally {
    await bare.stop()
    server.removeData()
  }

  console.log(`\nREST on ${server.label}; ${seconds} s per scenario, node ${process.version}\n`)
  console.log(header)
  console.log(row("GET /api/user/opportunities/{id}", concurrency, gets.result))
  console.log(row("POST /api/user/opportunities (new contact)", concurrency, posts.result))
  console.log(row("bare: node:http + one SELECT", concurrency, bareGets.result))
  if (preparedGets) console.log(row("bare, the SELECT prepared", concurrency, preparedGets.result))
  console.log("\nSide by side with the bare baseline (same database, same run):\n")
  console.log(sideBySideHeader)
  console.log(sideBySide("GET opportunity", concurrency, gets.result, bareGets.result))
  if (preparedGets) {
    console.log(sideBySide("GET opportunity (bare prepared)", concurrency, gets.result, preparedGets.result))
  }
  console.log("\nWhere the time goes (per request):\n")
  console.log(costsHeader)
  console.log(costsRow("GET opportunity", gets.costs))
  console.log(costsRow("POST opportunity", posts.costs))
  console.log(costsRow("bare GET (one SELECT)", bareGets.costs))
  if (preparedGets) console.log(costsRow("bare GET, prepared", preparedGets.costs))
  for (const [name, m] of [["GET opportunity", gets], ["bare GET", bareGets]] as const) {
    console.log(statementsTable(name, m.costs))
  }
} finally {
  await s.database.stop()
}
process.exit(0)
