import { HttpServerRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import {
  type Actor,
  Forbidden,
  hasScope,
  missingScopeMessage,
  type Scope,
  type TokenId,
  Unauthorized,
  UserId
} from "@parley/domain"
import { Effect, Option, PubSub, Redacted, Schedule, Schema, Stream } from "effect"
import { IdentityRepo } from "./IdentityRepo.js"
import { sha256Hex } from "./Secrets.js"

const LAST_USED_RESOLUTION_MS = 60_000
const AUTH_CACHE_TTL_MS = 30_000
const AUTH_CACHE_MAX = 10_000
const IDENTITY_CHANNEL = "parley_identity_changed"

/** An authenticated actor and its token's expiry (epoch ms, null: none). */
export interface Grant {
  readonly actor: Actor
  readonly tokenExpiresAt: number | null
}
interface CachedGrant extends Grant {
  readonly until: number
}

/**
 * The bearer authentication behind every `/api/user` endpoint, and its cache of actors. Identity hands
 * these functions out as its own (the same functions, no wrapper between a request and the cache).
 */
export class TokenAuth extends Effect.Service<TokenAuth>()("@parley/server/TokenAuth", {
  dependencies: [IdentityRepo.Default],
  scoped: Effect.gen(function*() {
    const repo = yield* IdentityRepo
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const lastTouched = new Map<TokenId, number>()

    const invalidToken = new Unauthorized({ message: "Unauthenticated." })

    /**
     * Authenticated actors, so a request costs no query for its token. An entry lives at most
     * AUTH_CACHE_TTL_MS, never past the token's expiry, and every change to tokens, memberships or
     * super users clears the cache here and, through NOTIFY, in every other process on the database.
     */
    const cache = new Map<string, CachedGrant>()
    /** Every change seen here, local or NOTIFYed: holders of long-lived access (operators' sockets) check it again. */
    const changes = yield* PubSub.sliding<void>(1)
    const forget = Effect.zipRight(Effect.sync(() => cache.clear()), PubSub.publish(changes, undefined))
    const changed = Effect.gen(function*() {
      yield* forget
      // pg_notify, not PgClient.notify: NOTIFY takes no bind parameters, which sql-pg's notify sends
      yield* sql`select pg_notify(${IDENTITY_CHANNEL}, 'changed')`.pipe(Effect.orDie)
    })
    yield* pg.listen(IDENTITY_CHANNEL).pipe(
      Stream.runForEach(() => forget),
      Effect.catchAllCause((cause) => Effect.logWarning("identity change listener stopped; retrying", cause)),
      Effect.repeat(Schedule.spaced("1 second")),
      Effect.forkScoped
    )

    const resolve = (hash: string, actAs: string | undefined) =>
      Effect.gen(function*() {
        const row = yield* repo.tokenByHash(hash)
        if (Option.isNone(row) || row.value.expired || row.value.revoked) return yield* invalidToken
        const t = row.value
        let userId = t.user_id
        if (actAs !== undefined && actAs !== "") {
          if (!t.is_super_user) return yield* new Forbidden({ message: "Only super users may act as another user." })
          const target = Schema.decodeUnknownOption(Schema.compose(Schema.NumberFromString, UserId))(actAs)
          const user = Option.isSome(target) ? yield* repo.userById(target.value) : Option.none()
          if (Option.isNone(user)) return yield* new Forbidden({ message: "The user to act as does not exist." })
          userId = user.value.id
        }
        const memberships = yield* repo.memberships(userId)
        if (memberships.length === 0) return yield* new Forbidden({ message: "This user has no workspace." })
        const actor: Actor = {
          userId,
          authenticatedUserId: t.user_id,
          tokenId: t.id,
          scopes: t.scopes,
          workspaceIds: memberships.map((m) => m.id),
          defaultWorkspaceId: memberships[0]!.id,
          isSuperUser: t.is_super_user
        }
        return { actor, tokenExpiresAt: t.expires_at === null ? null : Date.parse(t.expires_at) }
      })

    /**
     * A token (and who a super user acts as) to the actor every tenant query is scoped by. Runs on every
     * authenticated request, so only a cache miss (the queries) is a span of its own, not every map lookup
     * (a span costs CPU on every request: docs/benchmarks.md, "Native Postgres side by side").
     */
    const authenticateGrant = Effect.fnUntraced(
      function*(bearer: Redacted.Redacted<string>, actAs: string | undefined) {
        const token = Redacted.value(bearer).trim()
        if (token.length === 0) return yield* invalidToken
        const hash = sha256Hex(token)
        const key = `${hash}|${actAs ?? ""}`
        const now = Date.now()
        let entry = cache.get(key)
        if (
          entry === undefined || entry.until <= now || (entry.tokenExpiresAt !== null && entry.tokenExpiresAt <= now)
        ) {
          const resolved = yield* resolve(hash, actAs).pipe(Effect.withSpan("Identity.resolveToken"))
          if (cache.size >= AUTH_CACHE_MAX) cache.clear()
          entry = { ...resolved, until: now + AUTH_CACHE_TTL_MS }
          cache.set(key, entry)
        }
        const tokenId = entry.actor.tokenId
        if ((lastTouched.get(tokenId) ?? 0) < now - LAST_USED_RESOLUTION_MS) {
          lastTouched.set(tokenId, now)
          yield* repo.touchToken(tokenId)
        }
        return entry
      }
    )
    const authenticateToken = (bearer: Redacted.Redacted<string>, actAs: string | undefined) =>
      Effect.map(authenticateGrant(bearer, actAs), (grant) => grant.actor)

    /** Bearer token (and optional `X-Act-As-User`) of the current request. */
    const authenticate = (bearer: Redacted.Redacted<string>) =>
      Effect.flatMap(
        HttpServerRequest.HttpServerRequest,
        (request) => authenticateToken(bearer, request.headers["x-act-as-user"])
      )

    const requireScope = (actor: Actor, scope: Scope) =>
      hasScope(actor.scopes, scope)
        ? Effect.succeed(actor)
        : Effect.fail(new Forbidden({ message: missingScopeMessage(scope) }))

    return {
      /** Tokens, memberships or super users changed: forget cached actors here and in every other process. */
      changed,
      authenticate,
      authenticateToken,
      /** The actor and when its token expires (null: never), for access that outlives one request. */
      authenticateGrant,
      /** Publishes on every change to tokens, memberships or super users, in this process or another. */
      changes,
      requireScope
    }
  })
}) {}
