import type { UserId } from "@parley/domain"
import { Data, Effect, Option } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"
import { AppSecret } from "../config/AppSecret.js"
import { Identity } from "../identity/Identity.js"
import { randomBase62, sha256Hex } from "../identity/Secrets.js"
import { RateLimits } from "../limits/RateLimits.js"
import { SessionsRepo } from "./SessionsRepo.js"

export const SESSION_COOKIE = "parley_session"
export const LOGIN_COOKIE = "parley_login"
export const SESSION_TTL_MS = 12 * 3_600_000
// failures per address, each attempt counted before its password is checked and given back only when it
// succeeds: a success does not clear the others, so one's own account cannot be used to reset the count
const SIGN_IN_FAILURES = { limit: 10, windowMs: 15 * 60_000 }

/** Too many failed sign-ins from one address. */
export class TooManyAttempts extends Data.TaggedError("TooManyAttempts")<{ readonly retryAfter: number }> {}

/** A signed-in browser: the user and the CSRF token its forms must carry. */
export interface Session {
  /** The session's row: the console's tokens are bound to it. */
  readonly id: number
  readonly userId: UserId
  readonly email: string
  readonly name: string | null
  readonly csrf: string
}

/**
 * Browser sessions for the account and consent pages: a random cookie stored only as SHA-256, and CSRF
 * tokens that are HMACs of the session (or, before sign-in, of a random login cookie) under a key
 * derived from APP_SECRET, so every api process checks them alike.
 */
export class Sessions extends Effect.Service<Sessions>()("@parley/server/Sessions", {
  dependencies: [SessionsRepo.Default, Identity.Default, AppSecret.Default, RateLimits.Default],
  effect: Effect.gen(function*() {
    const repo = yield* SessionsRepo
    const identity = yield* Identity
    const secret = yield* AppSecret
    const limits = yield* RateLimits

    const mac = (purpose: string, value: string) =>
      createHmac("sha256", secret.accountKey).update(`${purpose}:${value}`).digest("base64url")
    const matches = (expected: string, given: string | undefined) => {
      if (given === undefined) return false
      const a = Buffer.from(expected)
      const b = Buffer.from(given)
      return a.length === b.length && timingSafeEqual(a, b)
    }

    /** The session of a request's cookie, if it is live. */
    const current = Effect.fn("Sessions.current")(function*(cookie: string | undefined) {
      if (cookie === undefined || cookie === "") return Option.none<Session>()
      const hash = sha256Hex(cookie)
      const row = yield* repo.live(hash)
      return Option.map(
        row,
        (r): Session => ({ id: r.id, userId: r.user_id, email: r.email, name: r.name, csrf: mac("session", hash) })
      )
    })

    /** Email and password to a new session cookie value; none when they are wrong. */
    const signIn = Effect.fn("Sessions.signIn")(function*(email: string, password: string, address: string) {
      const attempt = yield* limits.take(`sign-in:${address}`, SIGN_IN_FAILURES)
      if (attempt._tag === "Blocked") return yield* new TooManyAttempts({ retryAfter: attempt.retryAfter })
      const user = yield* identity.verifyCredentials(email, password)
      if (Option.isNone(user)) {
        yield* Effect.logInfo("account sign-in failed").pipe(Effect.annotateLogs({ address }))
        return Option.none<string>()
      }
      yield* limits.release(attempt.attempt)
      const token = randomBase62(43)
      yield* repo.insert({
        session_hash: sha256Hex(token),
        user_id: user.value.id,
        expires_at: new Date(Date.now() + SESSION_TTL_MS)
      })
      yield* Effect.logInfo("account sign-in").pipe(Effect.annotateLogs({ user_id: user.value.id }))
      return Option.some(token)
    })

    /** Ends the session and, with it, the console tokens it was given. */
    const signOut = (cookie: string) => Effect.zipRight(repo.remove(sha256Hex(cookie)), identity.tokensChanged)

    return {
      current,
      signIn,
      signOut,
      /** A fresh value for the login cookie that the sign-in form's CSRF token is bound to. */
      newLoginNonce: () => randomBase62(32),
      loginCsrf: (nonce: string) => mac("login", nonce),
      checkLoginCsrf: (nonce: string | undefined, given: string | undefined) =>
        nonce !== undefined && nonce !== "" && matches(mac("login", nonce), given),
      checkCsrf: (session: Session, given: string | undefined) => matches(session.csrf, given)
    }
  })
}) {}
