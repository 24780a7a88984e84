/**
 * The CLI with DATABASE_URL: a client of the database, never of the cluster. `parley migrate` on an empty
 * database, then commands with RUNNER_PORT taken (a server beside the CLI holds it) and room for two
 * connections only. The Postgres: on the embedded run PGlite behind pglite-socket (two connections at
 * most); in the postgres project a native database with only the `vector` extension, owned by a role
 * allowed two connections (as docs/deploy.md sets one up). Waits in multiples of support/Cli.ts's `unit`.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { PGlite } from "@electric-sql/pglite"
import { vector } from "@electric-sql/pglite-pgvector"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { migrations } from "../src/db/migrations/index.js"
import { parley, run, testTimeout } from "./support/Cli.js"
import { createNativeDatabase, databaseMode, queryUrl } from "./support/NativeDatabase.js"

/**
 * An empty Postgres with the vector extension and room for two connections: its URL, a query as its superuser, and a
 * stop.
 */
const emptyPostgres = async () => {
  if (databaseMode === "postgres") {
    const db = await createNativeDatabase({ empty: true, connectionLimit: 2 })
    return {
      url: db.url,
      query: <A>(text: string) => queryUrl<A>(db.adminUrl, text),
      stop: db.drop
    }
  }
  const db = await PGlite.create({ extensions: { vector } })
  // two connections: more than the CLI's pool (and a LISTEN connection, or a cluster's) is refused
  const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: 2 })
  await server.start()
  return {
    url: `postgres://postgres@${server.getServerConn()}/postgres`,
    query: async <A>(text: string) => (await db.query<A>(text)).rows,
    stop: async () => {
      await server.stop()
      await db.close()
    }
  }
}

describe("parley CLI with DATABASE_URL: a client of the database, never of the cluster", () => {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-cli-pg-"))
  let postgres: Awaited<ReturnType<typeof emptyPostgres>>
  const runnerPort = Net.createServer()
  let env: Record<string, string>

  beforeAll(async () => {
    postgres = await emptyPostgres()
    // a server beside the CLI holds RUNNER_PORT: the CLI must never need it
    await new Promise<void>((resolve) => runnerPort.listen(0, "127.0.0.1", resolve))
    env = {
      DATABASE_URL: postgres.url,
      RUNNER_PORT: String((runnerPort.address() as Net.AddressInfo).port),
      APP_SECRET: "cli-test-app-secret",
      PUBLIC_URL: "https://parley.example.com",
      RECEIVER_URL: "https://chat.example.com",
      // the embedded database behind pglite-socket is one session for every connection, as a pooler in
      // transaction mode is: statement names would clash (docs/operations.md)
      ...(databaseMode === "postgres" ? {} : { DATABASE_PREPARED_STATEMENTS: "false" })
    }
  })
  /** What a cluster runner or client creates in the database when it starts (its storage), and the CLI never should. */
  const clusterTables = async () =>
    (await postgres.query<{ tablename: string }>("select tablename from pg_tables where tablename like 'cluster%'"))
      .map((r) => r.tablename)

  afterAll(async () => {
    await new Promise((resolve) => runnerPort.close(resolve))
    await postgres?.stop()
    Fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it("`parley migrate` on an empty database applies every migration and nothing else, and logs nothing", async () => {
    const migrate = await run(dataDir, ["migrate"], env)
    expect(migrate.stderr).toBe("")
    expect(migrate.code).toBe(0)
    expect(migrate.stdout).toContain(`Applied ${Object.keys(migrations).length} migrations:\n  0001_identity\n`)
    expect(await clusterTables()).toEqual([])
  }, testTimeout)

  it(
    "creates, lists and shows with RUNNER_PORT taken and two connections, web-chat URLs from PUBLIC_URL and RECEIVER_URL",
    async () => {
      const user = await run(dataDir, [
        "user",
        "create",
        "--email",
        "pg@example.com",
        "--password",
        "s3cret-pass",
        "--credits",
        "10"
      ], env)
      expect(user.stderr).toBe("")
      expect(user.code).toBe(0)
      expect(user.stdout).toMatch(/^credits\s+10$/m)
      expect(user.stdout).not.toContain("- credits")
      expect(user.stdout).toContain("Before its agent replies, workspace 1 still needs:")
      const widget = await parley(dataDir, ["channel", "create", "--workspace-id", "1", "--kind", "widget"], env)
      expect(widget.client_secret).toMatch(/^wcs_/)
      const listed = await run(dataDir, ["channel", "list", "--json"], env)
      expect(listed.stderr).toBe("")
      expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({
        id: widget.id,
        client_id: widget.client_id,
        initiate_url: null,
        messages_url: "https://chat.example.com/web-chat/message",
        widget_embed:
          `<script src="https://parley.example.com/widget.js" data-client-id="${widget.client_id}" async></script>`
      })])
      expect(listed.stdout).not.toContain(widget.client_secret)
      expect(await clusterTables()).toEqual([])
    },
    testTimeout
  )
})
