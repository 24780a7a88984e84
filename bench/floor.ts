/**
 * The fixed stack's floor: what one GET costs in `@effect/platform`'s HttpApi on node with no database, no
 * authentication and no middleware of ours, beside `node:http` answering the same JSON, and beside `bare.ts`'s
 * GET (node:http and one SELECT on Postgres), the baseline of issue 21's GET target. Each server is a process
 * of its own, loaded as rest.ts loads the server (concurrency 32, keep-alive), one after the other.
 * Run: npx tsx bench/floor.ts [seconds]   (BENCH_PG=throwaway or DATABASE_URL for the bare GET row; FLOOR_PAD=100
 * builds the HttpApi routes in a context of 100 more services, to see what a large application's contexts cost)
 *
 * The HttpApi server is the least a REST endpoint of ours is: one group, one GET endpoint with an integer path
 * parameter and a Schema-encoded success, served by HttpLayerRouter on NodeHttpServer (as Listener.ts serves
 * ours, its logger off). Its CPU per request against the bare GET's says what part of the bare GET's rate any
 * HttpApi endpoint can reach on this machine.
 */
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpLayerRouter } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import {
  costsHeader,
  costsRow,
  header,
  load,
  measure,
  row,
  send,
  setup,
  sideBySide,
  sideBySideHeader,
  spawnAnnounced,
  startBare,
  startServer
} from "./support.js"

const Opportunity = Schema.Struct({
  id: Schema.Number,
  name: Schema.String,
  status: Schema.String,
  tags: Schema.Array(Schema.String)
})
const body = (id: number) => ({ id, name: "Seed", status: "active", tags: ["bench"] })

const idPath = Schema.Struct({ id: Schema.NumberFromString })
class Floor extends HttpApiGroup.make("floor")
  .add(HttpApiEndpoint.get("get", "/opportunities/:id").setPath(idPath).addSuccess(Opportunity))
  // the row as the database returns it (bare.ts answers `select *` the same way)
  .add(HttpApiEndpoint.get("select", "/select/opportunities/:id").setPath(idPath).addSuccess(Schema.Unknown))
{}
class FloorApi extends HttpApi.make("floor").add(Floor) {}

/**
 * HttpApi on NodeHttpServer; with FLOOR_DATABASE_URL its `select` route reads through @effect/sql-pg (a pool of 10).
 */
const serveEffect = () => {
  const server = Http.createServer()
  const FloorLive = HttpApiBuilder.group(
    FloorApi,
    "floor",
    (handlers) =>
      Effect.map(Effect.serviceOption(SqlClient.SqlClient), (sql) =>
        handlers
          .handle("get", ({ path }) => Effect.succeed(body(path.id)))
          .handle("select", ({ path }) =>
            sql._tag === "None"
              ? Effect.die("no database")
              : sql.value`select * from opportunities where id = ${path.id}`.pipe(
                Effect.map((rows) => rows[0]),
                Effect.orDie
              )))
  )
  const url = process.env.FLOOR_DATABASE_URL
  const database = url === undefined ? Layer.empty : PgClient.layer({ url: Redacted.make(url), maxConnections: 10 })
  // FLOOR_PAD=n: n more services in the context the routes are built in, as an application's many are
  const pad = Layer.succeedContext(
    Context.unsafeMake(
      new Map(Array.from({ length: Number(process.env.FLOOR_PAD ?? 0) }, (_, i) => [`pad/${i}`, { i }]))
    )
  )
  const routes = HttpLayerRouter.addHttpApi(FloorApi).pipe(
    Layer.provide(FloorLive),
    Layer.provide(database),
    Layer.provide(pad)
  )
  const main = HttpLayerRouter.serve(routes, { disableListenLog: true, disableLogger: true }).pipe(
    Layer.provide(NodeHttpServer.layer(() => server, { host: "127.0.0.1", port: 0 })),
    Layer.tap(() => Effect.sync(() => console.log(`FLOOR http://127.0.0.1:${(server.address() as AddressInfo).port}`)))
  )
  NodeRuntime.runMain(Layer.launch(main))
}

const serveNode = () => {
  const server = Http.createServer((req, res) => {
    const json = JSON.stringify(body(Number(req.url!.split("/")[2])))
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(json) })
    res.end(json)
  })
  server.listen(0, "127.0.0.1", () => console.log(`FLOOR http://127.0.0.1:${(server.address() as AddressInfo).port}`))
}

/** Starts this file as a server of `kind` in a process of its own. */
const start = (kind: "effect" | "node", databaseUrl?: string) =>
  spawnAnnounced(fileURLToPath(import.meta.url), [kind], {
    ...(process.env as Record<string, string>),
    ...(databaseUrl === undefined ? {} : { FLOOR_DATABASE_URL: databaseUrl })
  }, /FLOOR (\S+)/)

const kind = process.argv[2]
if (kind === "effect") serveEffect()
else if (kind === "node") serveNode()
else {
  const seconds = Number(kind ?? 10)
  const concurrency = 32
  const s = await setup()
  try {
    const rows: Array<[string, Awaited<ReturnType<typeof measure<Awaited<ReturnType<typeof load>>>>>]> = []
    for (const k of ["effect", "node"] as const) {
      const server = await start(k)
      try {
        const get = (i: number) => ({ method: "GET", url: `${server.url}/opportunities/${1 + (i % 200)}` })
        await load(concurrency, 2, get) // warm-up
        rows.push([
          k === "effect" ? "HttpApi, no database" : "node:http, no database",
          await measure(s.database, [{ name: k, pid: server.pid }], () => load(concurrency, seconds, get))
        ])
      } finally {
        await server.stop()
      }
    }
    // the bare GET of rest.ts: a server only to migrate the database and make the opportunities it reads,
    // stopped before the bare starts
    const server = await startServer({}, s)
    const ids: Array<number> = []
    for (let i = 0; i < 20; i++) {
      const r = await send({
        method: "POST",
        url: `${server.api}/api/user/opportunities`,
        headers: { authorization: `Bearer ${server.demo.token}`, "content-type": "application/json" },
        body: JSON.stringify({
          pipeline_id: server.demo.pipeline_id,
          name: `Seed ${i}`,
          contact: { phone: String(4915100000000 + i) }
        })
      })
      ids.push(JSON.parse(r.body).data.id)
    }
    await server.stop(true)
    // on Postgres: the same SELECT through HttpApi and @effect/sql-pg, nothing of ours
    if (s.database.kind === "native") {
      const effect = await start("effect", s.database.url!)
      try {
        const get = (i: number) => ({ method: "GET", url: `${effect.url}/select/opportunities/${ids[i % ids.length]}` })
        await load(concurrency, 2, get)
        rows.push([
          "HttpApi + @effect/sql-pg, one SELECT",
          await measure(s.database, [{ name: "effect", pid: effect.pid }], () => load(concurrency, seconds, get))
        ])
      } finally {
        await effect.stop()
      }
    }
    const bare = await startBare(server)
    try {
      const get = (i: number) => ({ method: "GET", url: `${bare.url}/opportunities/${ids[i % ids.length]}` })
      await load(concurrency, 2, get)
      rows.push([
        "bare: node:http + one SELECT",
        await measure(s.database, [{ name: "bare", pid: bare.pid }], () => load(concurrency, seconds, get))
      ])
    } finally {
      await bare.stop()
      server.removeData()
    }
    const bareRow = rows[rows.length - 1]![1].result
    console.log(`\nThe stack's floor on ${server.label}; ${seconds} s per row, node ${process.version}\n`)
    console.log(header)
    for (const [name, m] of rows) console.log(row(name, concurrency, m.result))
    console.log(`\nSide by side with the bare GET (one SELECT):\n\n${sideBySideHeader}`)
    for (const [name, m] of rows.slice(0, -1)) console.log(sideBySide(name, concurrency, m.result, bareRow))
    console.log(`\nWhere the time goes (per request):\n\n${costsHeader}`)
    for (const [name, m] of rows) console.log(costsRow(name, m.costs))
  } finally {
    await s.database.stop()
  }
  process.exit(0)
}
