import { HttpServerRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import {
  type Actor,
  Forbidden,
  hasScope,
  isScope,
  Me,
  missingScopeMessage,
  type Scope,
  Scopes,
  type TokenId,
  Unauthorized,
  UserId,
  type WorkspaceId,
  WorkspaceSummary
} from "@parley/domain"
import { PgClient } from "@effect/sql-pg"
import { Effect, Option, Redacted, Schedule, Schema, Stream } from "effect"
import { CommandFailed } from "./CommandFailed.js"
import { IdentityRepo, type UserRow } from "./IdentityRepo.js"
import { hashPassword, newAccessToken, randomBase62, sha256Hex, verifyPassword } from "./Secrets.js"

export { CommandFailed }

const LAST_USED_RESOLUTION_MS = 60_000
const AUTH_CACHE_TTL_MS = 30_000
const AUTH_CACHE_MAX = 10_000
const IDENTITY_CHANNEL = "parley_identity_changed"
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

/**
 * Users, workspaces, memberships and access tokens: the operator commands behind the CLI, and the
 * bearer authentication behind every `/api/user` endpoint.
 */
export class Identity extends Effect.Service<Identity>()("@parley/server/Identity", {
  dependencies: [IdentityRepo.Default],
  scoped: Effect.gen(function*() {
    const repo = yield* IdentityRepo
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const lastTouched = new Map<TokenId, number>()

    const userByEmail = (email: string) =>
      repo.userByEmail(email).pipe(
        Effect.flatMap(Option.match({
          onNone: () => Effect.fail(new CommandFailed({ message: `No user with email ${email}` })),
          onSome: Effect.succeed
        }))
      )

    const createUser = Effect.fn("Identity.createUser")(function*(input: {
      readonly email: string
      readonly password: string
      readonly name?: string | undefined
      readonly workspaceName?: string | undefined
      readonly credits?: number | undefined
      readonly trainingCredits?: number | undefined
    }) {
      const email = input.email.trim().toLowerCase()
      if (!EMAIL.test(email)) return yield* new CommandFailed({ message: `Not a valid email: ${input.email}` })
      if (input.password.length < 8) return yield* new CommandFailed({ message: "The password must be at least 8 characters" })
      if (Option.isSome(yield* repo.userByEmail(email))) {
        return yield* new CommandFailed({ message: `A user with email ${email} already exists` })
      }
      const password_hash = yield* hashPassword(input.password)
      return yield* sql.withTransaction(Effect.gen(function*() {
        const user = yield* repo.insertUser({ email, name: input.name ?? null, password_hash })
        const workspaceId = yield* repo.insertWorkspace({
          name: input.workspaceName ?? `${input.name ?? email.split("@")[0]}'s workspace`,
          credits: input.credits ?? 0,
          training_credits: input.trainingCredits ?? 0
        })
        yield* repo.upsertMembership(user.id, workspaceId, "owner")
        return { user_id: user.id, email: user.email, name: user.name, workspace_id: workspaceId }
      })).pipe(Effect.orDie)
    })

    /** Another workspace, owned by an existing user. */
    const createWorkspace = Effect.fn("Identity.createWorkspace")(function*(input: {
      readonly email: string
      readonly name: string
      readonly credits?: number | undefined
      readonly trainingCredits?: number | undefined
    }) {
      const user = yield* userByEmail(input.email)
      const name = input.name.trim()
      if (name.length === 0) return yield* new CommandFailed({ message: "A workspace needs a name" })
      const workspaceId = yield* sql.withTransaction(Effect.gen(function*() {
        const id = yield* repo.insertWorkspace({ name, credits: input.credits ?? 0, training_credits: input.trainingCredits ?? 0 })
        yield* repo.upsertMembership(user.id, id, "owner")
        return id
      })).pipe(Effect.orDie)
      yield* changed
      return { workspace_id: workspaceId, name, owner_user_id: user.id, owner_email: user.email }
    })

    const grantManager = Effect.fn("Identity.grantManager")(function*(email: string, workspaceId: WorkspaceId) {
      const user = yield* userByEmail(email)
      if (!(yield* repo.workspaceExists(workspaceId))) {
        return yield* new CommandFailed({ message: `No workspace with id ${workspaceId}` })
      }
      yield* repo.upsertMembership(user.id, workspaceId, "manager")
      yield* changed
      return { user_id: user.id, workspace_id: workspaceId, role: "manager" as const }
    })

    const makeSuper = Effect.fn("Identity.makeSuper")(function*(email: string) {
      const user = yield* userByEmail(email)
      yield* repo.setSuperUser(user.id)
      yield* changed
      return { user_id: user.id, is_super_user: true }
    })

    const setWorkspace = Effect.fn("Identity.setWorkspace")(function*(
      workspaceId: WorkspaceId,
      set: { credits?: number; training_credits?: number; is_subscription_active?: boolean }
    ) {
      const row = yield* repo.updateWorkspace(workspaceId, set)
      if (Option.isNone(row)) return yield* new CommandFailed({ message: `No workspace with id ${workspaceId}` })
      const { role: _role, ...workspace } = row.value
      return workspace
    })

    const createToken = Effect.fn("Identity.createToken")(function*(input: {
      readonly email: string
      readonly scopes: ReadonlyArray<string>
      readonly name?: string | undefined
      readonly expiresInDays?: number | undefined
      readonly oauthClientId?: string | undefined
    }) {
      const user = yield* userByEmail(input.email)
      const unknown = input.scopes.filter((s) => !isScope(s))
      if (unknown.length > 0) {
        return yield* new CommandFailed({ message: `Unknown scope(s): ${unknown.join(", ")}. Known: ${Scopes.join(", ")}` })
      }
      if (input.scopes.length === 0) return yield* new CommandFailed({ message: "A token needs at least one scope" })
      if (input.expiresInDays !== undefined && !(input.expiresInDays > 0)) {
        return yield* new CommandFailed({ message: "--expires-in-days must be a positive number" })
      }
      const scopes = [...new Set(input.scopes)] as Array<Scope>
      const issued = yield* issueToken({
        userId: user.id,
        name: input.name ?? "CLI token",
        scopes,
        expiresAt: input.expiresInDays === undefined ? null : new Date(Date.now() + input.expiresInDays * 86_400_000),
        oauthClientId: input.oauthClientId
      })
      return { id: issued.id, token: issued.token, user_id: user.id, scopes, expires_at: issued.expires_at }
    })

    /**
     * A new token for a known user: the material is returned once and only its SHA-256 is stored. Runs in
     * the caller's transaction when there is one (OAuth issues tokens together with grants and refresh tokens).
     */
    const issueToken = Effect.fn("Identity.issueToken")(function*(input: {
      readonly userId: UserId
      readonly name: string
      readonly scopes: ReadonlyArray<Scope>
      readonly expiresAt: Date | null
      readonly prefix?: string | undefined
      readonly oauthClientId?: string | undefined
      readonly oauthGrantId?: number | undefined
      /** The account session the token dies with (the console's tokens). */
      readonly accountSessionId?: number | undefined
    }) {
      const material = newAccessToken(input.prefix)
      const row = yield* repo.insertToken({
        user_id: input.userId,
        name: input.name,
        token_hash: material.hash,
        token_hint: material.hint,
        scopes: input.scopes,
        expires_at: input.expiresAt,
        ...(input.oauthClientId !== undefined ? { oauth_client_id: input.oauthClientId } : {}),
        ...(input.oauthGrantId !== undefined ? { oauth_grant_id: input.oauthGrantId } : {}),
        ...(input.accountSessionId !== undefined ? { account_session_id: input.accountSessionId } : {})
      })
      return { id: row.id, token: material.token, expires_at: row.expires_at }
    })

    /** A short-lived token bound to an account session (the console's): deleted with the session. */
    const issueSessionToken = Effect.fn("Identity.issueSessionToken")(function*(input: {
      readonly userId: UserId
      readonly sessionId: number
      readonly scopes: ReadonlyArray<Scope>
      readonly ttlMs: number
    }) {
      yield* repo.sweepSessionTokens(input.sessionId)
      return yield* issueToken({
        userId: input.userId,
        name: "Console",
        scopes: input.scopes,
        expiresAt: new Date(Date.now() + input.ttlMs),
        prefix: "cst_",
        accountSessionId: input.sessionId
      })
    })

    // an unknown email costs the same scrypt as a wrong password, so timing does not tell which it was
    const dummyHash = yield* Effect.cached(hashPassword(randomBase62(16)))

    /** Email and password to the user (the sign-in page); none when either is wrong. */
    const verifyCredentials = Effect.fn("Identity.verifyCredentials")(function*(email: string, password: string) {
      const row = yield* repo.userByEmail(email.trim())
      if (Option.isNone(row)) {
        yield* verifyPassword(password, yield* dummyHash)
        return Option.none<UserRow>()
      }
      const { password_hash, ...user } = row.value
      return (yield* verifyPassword(password, password_hash)) ? Option.some<UserRow>(user) : Option.none<UserRow>()
    })

    const personalTokens = (userId: UserId) => repo.personalTokens(userId)

    /** A user revoking one of their own personal tokens; false when it is not theirs or already gone. */
    const revokePersonalToken = Effect.fn("Identity.revokePersonalToken")(function*(userId: UserId, id: TokenId) {
      const revoked = yield* repo.revokeUserToken(userId, id)
      if (revoked) yield* changed
      return revoked
    })

    const revokeToken = Effect.fn("Identity.revokeToken")(function*(id: TokenId) {
      if (!(yield* repo.revokeToken(id))) return yield* new CommandFailed({ message: `No token with id ${id}` })
      yield* changed
      return { id, revoked: true }
    })

    const invalidToken = new Unauthorized({ message: "Unauthenticated." })

    /**
     * Authenticated actors, so a request costs no query for its token. An entry lives at most
     * AUTH_CACHE_TTL_MS, never past the token's expiry, and every change to tokens, memberships or
     * super users clears the cache here and, through NOTIFY, in every other process on the database.
     */
    const cache = new Map<string, { readonly actor: Actor; readonly tokenExpiresAt: number | null; readonly until: number }>()
    const changed = Effect.gen(function*() {
      cache.clear()
      // pg_notify, not PgClient.notify: NOTIFY takes no bind parameters, which sql-pg's notify sends
      yield* sql`select pg_notify(${IDENTITY_CHANNEL}, 'changed')`.pipe(Effect.orDie)
    })
    yield* pg.listen(IDENTITY_CHANNEL).pipe(
      Stream.runForEach(() => Effect.sync(() => cache.clear())),
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
          defaultWorkspaceId: memberships[0]!.id
        }
        return { actor, tokenExpiresAt: t.expires_at === null ? null : Date.parse(t.expires_at) }
      })

    /**
     * A token (and who a super user acts as) to the actor every tenant query is scoped by. Runs on every
     * authenticated request, so only a cache miss (the queries) is a span of its own, not every map lookup
     * (a span costs CPU on every request: docs/benchmarks.md, "Native Postgres side by side").
     */
    const authenticateToken = Effect.fnUntraced(function*(bearer: Redacted.Redacted<string>, actAs: string | undefined) {
      const token = Redacted.value(bearer).trim()
      if (token.length === 0) return yield* invalidToken
      const hash = sha256Hex(token)
      const key = `${hash}|${actAs ?? ""}`
      const now = Date.now()
      let entry = cache.get(key)
      if (entry === undefined || entry.until <= now || (entry.tokenExpiresAt !== null && entry.tokenExpiresAt <= now)) {
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
      return entry.actor
    })

    /** Bearer token (and optional `X-Act-As-User`) of the current request. */
    const authenticate = (bearer: Redacted.Redacted<string>) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => authenticateToken(bearer, request.headers["x-act-as-user"]))

    const requireScope = (actor: Actor, scope: Scope) =>
      hasScope(actor.scopes, scope) ? Effect.succeed(actor) : Effect.fail(new Forbidden({ message: missingScopeMessage(scope) }))

    const me = Effect.fn("Identity.me")(function*(actor: Actor) {
      const user = yield* repo.userById(actor.authenticatedUserId).pipe(Effect.map(Option.getOrThrow))
      const token = yield* repo.tokenById(actor.tokenId).pipe(Effect.map(Option.getOrThrow))
      const memberships = yield* repo.memberships(actor.userId)
      return new Me({
        user: { id: user.id, email: user.email, name: user.name, is_super_user: user.is_super_user },
        acting_as: actor.userId === actor.authenticatedUserId ? null : actor.userId,
        token: { id: token.id, name: token.name, scopes: token.scopes, expires_at: token.expires_at },
        workspaces: memberships.map((m) => new WorkspaceSummary(m))
      })
    })

    return {
      createUser,
      createWorkspace,
      grantManager,
      makeSuper,
      setWorkspace,
      createToken,
      issueToken,
      issueSessionToken,
      revokeToken,
      verifyCredentials,
      personalTokens,
      revokePersonalToken,
      /** Tokens were revoked elsewhere (OAuth): forget cached actors here and in every other process. */
      tokensChanged: changed,
      authenticate,
      authenticateToken,
      requireScope,
      me
    }
  })
}) {}
