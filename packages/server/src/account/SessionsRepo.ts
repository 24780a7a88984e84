import { SqlClient } from "@effect/sql"
import type { UserId } from "@parley/domain"
import { Effect, Option } from "effect"

export interface SessionRow {
  readonly id: number
  readonly user_id: UserId
  readonly email: string
  readonly name: string | null
}

/** SQL for browser sessions of the account pages. Database failures are defects here. */
export class SessionsRepo extends Effect.Service<SessionsRepo>()("@parley/server/SessionsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return {
      /** Also sweeps the sessions that ran out, so the table does not grow without bound. */
      insert: (s: { session_hash: string; user_id: UserId; expires_at: Date }) =>
        Effect.all([
          sql`delete from account_sessions where expires_at <= now()`,
          sql`insert into account_sessions (session_hash, user_id, expires_at) values (${s.session_hash}, ${s.user_id}, ${s.expires_at})`
        ], { discard: true }).pipe(Effect.orDie),

      live: (hash: string) =>
        sql<SessionRow>`
          select s.id::int as id, s.user_id, u.email, u.name from account_sessions s join users u on u.id = s.user_id
          where s.session_hash = ${hash} and s.expires_at > now()`.pipe(
          Effect.map((rows) => Option.fromNullable(rows[0])),
          Effect.orDie
        ),

      remove: (hash: string) =>
        sql`delete from account_sessions where session_hash = ${hash}`.pipe(Effect.asVoid, Effect.orDie)
    }
  })
}) {}
