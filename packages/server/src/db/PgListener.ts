/**
 * LISTEN on Postgres (DATABASE_URL) that outlives its connection. @effect/sql-pg's `listen` holds one
 * client for good: when Postgres restarts, the client is dead and its streams neither end nor fail, so
 * caches would never hear of another process's change again (and it drops notifications with an empty
 * payload). This one connection per process reconnects (1 s apart, with jitter) and LISTENs again on
 * every channel that has a subscriber; since what was notified while it was away is lost, each
 * subscriber then gets one empty notification, meaning "something may have changed" (every subscriber
 * of ours treats any notification that way: clear a cache, look for work).
 */
import { SqlError } from "@effect/sql/SqlError"
import { Effect, Stream } from "effect"
import pg from "pg"

export interface PgListener {
  readonly listen: (channel: string) => Stream.Stream<string, SqlError>
}

const RECONNECT_MS = 1000

export const makePgListener = (connectionString: string) =>
  Effect.gen(function*() {
    const subscribers = new Map<string, Set<(payload: string) => void>>()
    let client: pg.Client | undefined
    let opening = false
    let reconnect = false
    let closed = false
    let timer: ReturnType<typeof setTimeout> | undefined

    // one statement at a time on the connection (pg deprecates overlapping queries on one client)
    let queue: Promise<unknown> = Promise.resolve()
    const run = (c: pg.Client, statement: string) => {
      queue = queue.then(() => c.query(statement)).catch(() => {})
    }

    const dispatch = (channel: string, payload: string) => {
      for (const emit of subscribers.get(channel) ?? []) emit(payload)
    }
    const listenSql = (channel: string) => `LISTEN ${pg.escapeIdentifier(channel)}`

    const schedule = () => {
      if (closed || timer !== undefined) return
      timer = setTimeout(() => {
        timer = undefined
        void open()
      }, RECONNECT_MS * (0.75 + Math.random() / 2))
    }

    /** The connection `c` failed or ended: drop it and connect again. */
    const lost = (c: pg.Client) => {
      if (client !== c) return
      client = undefined
      c.end().catch(() => {})
      schedule()
    }

    const open = async () => {
      if (closed || opening || client !== undefined || subscribers.size === 0) return
      opening = true
      const c = new pg.Client({ connectionString, application_name: "parley listen" })
      c.on("error", () => lost(c))
      c.on("end", () => lost(c))
      c.on("notification", (message) => dispatch(message.channel, message.payload ?? ""))
      try {
        await c.connect()
        for (const channel of subscribers.keys()) await c.query(listenSql(channel))
      } catch {
        opening = false
        c.end().catch(() => {})
        schedule()
        return
      }
      opening = false
      if (closed) return void c.end().catch(() => {})
      client = c
      // notifications sent while no connection listened are lost: tell every subscriber to look again
      if (reconnect) { for (const channel of subscribers.keys()) dispatch(channel, "") }
      reconnect = true
    }

    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
        if (timer !== undefined) clearTimeout(timer)
        const c = client
        client = undefined
        void c?.end().catch(() => {})
      })
    )

    const listen = (channel: string): Stream.Stream<string, SqlError> =>
      Stream.asyncPush<string, SqlError>((emit) =>
        Effect.acquireRelease(
          Effect.sync(() => {
            const emitOne = (payload: string) => void emit.single(payload)
            const forChannel = subscribers.get(channel) ?? new Set()
            const first = forChannel.size === 0
            forChannel.add(emitOne)
            subscribers.set(channel, forChannel)
            // a failed LISTEN means a failing connection: its error handler reconnects and LISTENs on all
            if (first && client !== undefined) run(client, listenSql(channel))
            void open()
            return emitOne
          }),
          (emitOne) =>
            Effect.sync(() => {
              const forChannel = subscribers.get(channel)
              forChannel?.delete(emitOne)
              if (forChannel?.size === 0) {
                subscribers.delete(channel)
                if (client !== undefined) run(client, `UNLISTEN ${pg.escapeIdentifier(channel)}`)
              }
            })
        )
      )

    return { listen } satisfies PgListener
  })
