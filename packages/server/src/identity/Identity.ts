import { SqlClient } from "@effect/sql"
import {
  type Actor,
  isScope,
  Me,
  type Scope,
  Scopes,
  type TokenId,
  type UserId,
  type WorkspaceId,
  WorkspaceSummary
} from "@parley/domain"
import { Effect, Option } from "effect"
import { CommandFailed } from "./CommandFailed.js"
import { IdentityRepo, type UserRow } from "./IdentityRepo.js"
import { hashPassword, newAccessToken, randomBase62, verifyPassword } from "./Secrets.js"
import { TokenAuth } from "./TokenAuth.js"

export { CommandFailed }

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

/**
 * Users, workspaces, memberships and access tokens: the operator commands behind the CLI, and the
 * bearer authentication behind every `/api/user` endpoint (TokenAuth.ts, with its cache of actors).
 */
export class Identity extends Effect.Service<Identity>()("@parley/server/Identity", {
  dependencies: [IdentityRepo.Default, TokenAuth.Default],
  scoped: Effect.gen(function*() {
    const repo = yield* IdentityRepo
    const sql = yield* SqlClient.SqlClient
    const auth = yield* TokenAuth
    const changed = auth.changed

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
      if (input.password.length < 8) {
        return yield* new CommandFailed({ message: "The password must be at least 8 characters" })
      }
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
        const id = yield* repo.insertWorkspace({
          name,
          credits: input.credits ?? 0,
          training_credits: input.trainingCredits ?? 0
        })
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
        return yield* new CommandFailed({
          message: `Unknown scope(s): ${unknown.join(", ")}. Known: ${Scopes.join(", ")}`
        })
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
      authenticate: auth.authenticate,
      authenticateToken: auth.authenticateToken,
      authenticateGrant: auth.authenticateGrant,
      identityChanges: auth.changes,
      requireScope: auth.requireScope,
      me
    }
  })
}) {}
