/**
 * The bare baselines: `node:http` and the database and nothing else, on the server's own database and
 * rows (started by `support.ts` `startBare` once the server's scenario is over, as a process of its own
 * like the server). Two routes, each the least the matching server route must do:
 *
 * - `GET /opportunities/{id}`: one SELECT (`select * from opportunities where id = $1`), the row as JSON;
 * - `POST /web-chat/message` (JSON `{contact_id, message}`): the 4-statement transaction of a returning
 *   visitor's message: `begin`; the one statement that finds the visitor's contact, conversation and
 *   current opportunity (the same SQL as `WebChatRepo.existingThread`); the message insert (the same
 *   columns as `WebChatRepo.insertMessage`, so the triggers on `messages` run); `commit`. No channel
 *   authentication, no realtime event, no hand-over to the conversation's entity. (The server itself has
 *   run the read and the insert without `begin` and `commit` since 7800bb1; the baseline stays the
 *   4-statement transaction the targets are stated against.)
 *
 * Postgres (BARE_DATABASE_URL) through a `pg` Pool of BARE_POOL_SIZE connections (the server's
 * DATABASE_POOL_SIZE); the embedded database (BARE_PGLITE_DIR, the stopped server's data dir) through
 * PGlite with pgvector, one session, as the server opens it. The statements go unnamed, as a plain `pg`
 * client sends them (Postgres parses and plans each one), which is the baseline the targets are stated
 * against; under `/prepared/` the same two routes name them (`pg` prepares each once per connection, as
 * the server does since db/PgPrepared.ts), Postgres only. BARE_WORKSPACE, BARE_CHANNEL and BARE_PIPELINE
 * name the demo workspace's web channel. Prints `BARE <url>` once it listens.
 */
import { Effect, Scope } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { openPglite } from "../packages/server/src/db/Database.js"
import { pg } from "./postgres.js"

const workspaceId = Number(process.env.BARE_WORKSPACE)
const channelId = Number(process.env.BARE_CHANNEL)
const pipelineId = Number(process.env.BARE_PIPELINE)

const selectOpportunity = "select * from opportunities where id = $1"
const existingThread = `
  select c.id as contact_id, cv.id as conversation_id, o.id as opportunity_id, o.stage_id,
         exists (select 1 from conversation_opportunity co
                 where co.opportunity_id = o.id and co.conversation_id = cv.id) as linked
  from contacts c
  left join lateral (select id from conversations where channel_id = $2 and contact_id = c.id
                     order by id limit 1) cv on true
  left join lateral (select id, stage_id from opportunities
                     where contact_id = c.id and pipeline_id = $3
                     order by created_at desc, id desc limit 1) o on true
  where c.workspace_id = $1 and c.identifier = $4`
const insertMessage = `
  insert into messages (id, workspace_id, conversation_id, opportunity_id, contact_id, channel_id, stage_id, pipeline_id,
                        role, status, message, files, attachments, external_chat_id, call_type, is_manual, sender_id)
  values ($1, $2, $3, $4, $5, $6, $7, $8, 'user', 'received', $9, '[]'::jsonb, '[]'::jsonb, $10, 'web_chat', false, null)`

interface Thread {
  readonly contact_id: number
  readonly conversation_id: number | null
  readonly opportunity_id: number | null
  readonly stage_id: number | null
}

/** A statement; with `name`, prepared once per connection under that name (Postgres only). */
type Query = <R>(text: string, params: ReadonlyArray<unknown>, name?: string) => Promise<Array<R>>

/** Runs queries on one connection (`run`), or in a transaction on one (`transaction`). */
interface Db {
  readonly query: Query
  readonly transaction: <A>(f: (query: Query) => Promise<A>) => Promise<A>
}

const config = (text: string, params: ReadonlyArray<unknown>, name: string | undefined) => ({
  text,
  values: params as Array<unknown>,
  ...(name === undefined ? {} : { name })
})

const open = async (): Promise<Db> => {
  if (process.env.BARE_DATABASE_URL !== undefined) {
    const pool = new pg.Pool({
      connectionString: process.env.BARE_DATABASE_URL,
      max: Number(process.env.BARE_POOL_SIZE ?? 10)
    })
    await pool.query("select 1")
    return {
      query: async (text, params, name) => (await pool.query(config(text, params, name))).rows,
      transaction: async (f) => {
        const client = await pool.connect()
        try {
          await client.query("begin")
          const result = await f(async (text, params, name) => (await client.query(config(text, params, name))).rows)
          await client.query("commit")
          return result
        } catch (e) {
          await client.query("rollback").catch(() => undefined)
          throw e
        } finally {
          client.release()
        }
      }
    }
  }
  const scope = Effect.runSync(Scope.make())
  const db = await Effect.runPromise(Scope.extend(openPglite({ dataDir: process.env.BARE_PGLITE_DIR! }), scope))
  return {
    query: async (text, params) => (await db.query(text, params as Array<unknown>)).rows as Array<never>,
    // PGlite's transaction sends `begin` and `commit` itself
    transaction: (f) =>
      db.transaction((tx) =>
        f(async (text, params) => (await tx.query(text, params as Array<unknown>)).rows as Array<never>)
      )
  }
}

let sequence = 0
/** Sortable like the server's ULIDs (time first), unique in this process. */
const messageId = () => `${Date.now().toString(36).padStart(10, "0")}bare${(sequence++).toString(36).padStart(8, "0")}`

const db = await open()

const json = (res: Http.ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text)
}

const server = Http.createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (c: Buffer) => chunks.push(c))
  req.on("end", () => {
    const handle = async () => {
      // `/prepared/…`: the same routes with named statements
      const prepared = req.url?.startsWith("/prepared/") === true && process.env.BARE_DATABASE_URL !== undefined
      const url = prepared ? req.url!.slice("/prepared".length) : req.url ?? ""
      const named = (name: string) => (prepared ? name : undefined)
      const get = /^\/opportunities\/(\d+)$/.exec(url)
      if (req.method === "GET" && get) {
        const [row] = await db.query(selectOpportunity, [Number(get[1])], named("bare_opportunity"))
        return row === undefined
          ? json(res, 404, { status: false, message: "Not found" })
          : json(res, 200, { status: true, data: row })
      }
      if (req.method === "POST" && url === "/web-chat/message") {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { contact_id: string; message: string }
        const id = await db.transaction(async (query) => {
          const [thread] = await query<Thread>(
            existingThread,
            [workspaceId, channelId, pipelineId, body.contact_id],
            named("bare_thread")
          )
          if (thread === undefined || thread.conversation_id === null) return undefined
          const id = messageId()
          await query(insertMessage, [
            id,
            workspaceId,
            thread.conversation_id,
            thread.opportunity_id,
            thread.contact_id,
            channelId,
            thread.stage_id,
            pipelineId,
            body.message,
            body.contact_id
          ], named("bare_insert"))
          return id
        })
        return id === undefined
          ? json(res, 404, { status: false, message: "No such visitor (the server's warm-up creates them)" })
          : json(res, 200, { status: true, message: "Message received.", data: { message_id: id } })
      }
      json(res, 404, { status: false, message: "Not found" })
    }
    handle().catch((e) => json(res, 500, { status: false, message: String(e) }))
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, "127.0.0.1", () => console.log(`BARE http://127.0.0.1:${(server.address() as AddressInfo).port}`))
process.on("SIGTERM", () => {
  server.closeAllConnections()
  server.close(() => process.exit(0))
})
