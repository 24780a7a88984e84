/**
 * Named prepared statements on the pooled Postgres connections. @effect/sql-pg sends every statement
 * unnamed, so Postgres parses, analyses and plans it on every call (a GET of one opportunity planned in
 * 0.35 ms and ran in 0.05). Here a statement with parameters gets a name on its connection the first time
 * its SQL text runs there: `pg` then sends Parse once per connection and only Bind, Describe, Execute and
 * Sync afterwards, and Postgres may keep a generic plan (after five custom ones, when it costs no more).
 *
 * - Statements without parameters (transaction control, DDL, multi-statement migrations, LISTEN) and
 *   cursors keep going unnamed through the simple or extended protocol, exactly as before.
 * - Names are unique to the connection (`parley_<process>_<connection>_<n>`, never reused): where one
 *   server session serves several clients (pglite-socket; a pooler in transaction mode, for which
 *   DATABASE_PREPARED_STATEMENTS=false is still the setting) a name cannot clash with another client's,
 *   nor run another client's statement. At most `MAX_PREPARED` per connection, least recently used
 *   deallocated first, so texts that vary with their input (`in` lists of every length) stay bounded.
 * - A connection that is replaced (Postgres restarted, the pool dropped it) starts with no names: the
 *   state lives with the `pg` client.
 * - When a migration changes a table under a prepared `select *` Postgres refuses the statement
 *   ("cached plan must not change result type", 0A000); a statement that vanished (26000: DEALLOCATE or
 *   DISCARD ran) fails too. Either way the name is dropped and, if the connection was not in a
 *   transaction (nothing else was undone), the statement runs once more under a new name; in a
 *   transaction the error stands and the transaction fails as any statement error fails it (the old
 *   statement is deallocated by the next statement outside a transaction).
 */
import { randomBytes } from "node:crypto"
import type pg from "pg"

export const MAX_PREPARED = 200

/** This process, in statement names (random, so two processes on one session differ too). */
const processTag = randomBytes(4).toString("hex")
/** Connections given statement names by this process so far. */
let connections = 0

type Callback = (error: (Error & { code?: string }) | null, result?: unknown) => void
type Send = (config: unknown, callback: Callback) => void

interface QueryConfig {
  readonly text: string
  readonly values?: ReadonlyArray<unknown>
  readonly name?: string
  readonly submit?: unknown
}

/** Statement errors after which the connection's prepared name is of no more use. */
const stale = (error: { code?: string } | null) => error?.code === "0A000" || error?.code === "26000"

/** The text and parameters of a `client.query` call worth naming, or undefined (leave it as it is). */
const nameable = (config: unknown, values: unknown): QueryConfig | undefined => {
  if (typeof config === "string") {
    return Array.isArray(values) && values.length > 0 ? { text: config, values } : undefined
  }
  if (typeof config !== "object" || config === null) return undefined
  const c = config as QueryConfig
  if (typeof c.submit === "function" || c.name !== undefined || typeof c.text !== "string") return undefined
  const vs = c.values ?? (Array.isArray(values) ? values : undefined)
  return vs !== undefined && vs.length > 0 ? { ...c, values: vs } : undefined
}

interface Connection {
  readonly connection: { readonly parsedStatements: Record<string, string> }
  readonly getTransactionStatus: () => string | null
}

/**
 * Replaces `client.query` so that statements with parameters run as named prepared statements;
 * `count` is called for every statement sent (the deallocations included).
 */
export const prepareStatements = (client: pg.PoolClient, count: () => void) => {
  const original = client.query.bind(client) as (...args: Array<unknown>) => unknown
  const send: Send = (config, callback) => {
    count()
    original(config, callback)
  }
  const internals = client as unknown as Connection
  /** SQL text → statement name, least recently used first. */
  const names = new Map<string, string>()
  const prefix = `parley_${processTag}_${++connections}_`
  let counter = 0

  /** Names to free on the server: those a failed deallocation (in an aborted transaction) left behind. */
  let leftover: Array<string> = []

  const forget = (text: string) => {
    const name = names.get(text)
    if (name === undefined) return
    names.delete(text)
    delete internals.connection.parsedStatements[name]
    return name
  }
  /** Frees statements on the server, then goes on; what an aborted transaction refuses is freed next time. */
  const deallocate = (free: ReadonlyArray<string>, then: () => void) =>
    send(free.map((name) => `deallocate ${name}`).join("; "), (error) => {
      if (error) leftover = [...leftover, ...free]
      then()
    })

  const run = (config: QueryConfig, callback: Callback, retry: boolean) => {
    if (leftover.length > 0 && internals.getTransactionStatus() === "I") {
      const free = leftover
      leftover = []
      return deallocate(free, () => run(config, callback, retry))
    }
    let name = names.get(config.text)
    const go = (name: string) => {
      const idle = internals.getTransactionStatus() === "I"
      send({ ...config, name }, (error, result) => {
        if (!stale(error)) return callback(error, result)
        forget(config.text)
        const again = () => (retry && idle ? run(config, callback, false) : callback(error, result))
        return error?.code === "0A000" ? deallocate([name], again) : again()
      })
    }
    if (name !== undefined) {
      names.delete(config.text)
      names.set(config.text, name)
      return go(name)
    }
    name = `${prefix}${++counter}`
    names.set(config.text, name)
    if (names.size <= MAX_PREPARED) return go(name)
    const evicted = forget(names.keys().next().value as string)!
    deallocate([evicted], () => go(name))
  }

  client.query = ((config: unknown, values?: unknown, callback?: unknown) => {
    const named = nameable(config, values)
    if (named === undefined) {
      count()
      return original(config, values, callback)
    }
    const done = (typeof values === "function" ? values : callback) as Callback | undefined
    if (done !== undefined) return run(named, done, true)
    return new Promise((resolve, reject) =>
      run(named, (error, result) => (error ? reject(error) : resolve(result)), true)
    )
  }) as typeof client.query
}

/** Only counts what `client.query` sends (statements stay unnamed: DATABASE_PREPARED_STATEMENTS=false). */
export const countStatements = (client: pg.PoolClient, count: () => void) => {
  const original = client.query.bind(client) as (...args: Array<unknown>) => unknown
  client.query = ((...args: Array<unknown>) => {
    count()
    return original(...args)
  }) as typeof client.query
}
