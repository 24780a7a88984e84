import type { OAuthErrorCode } from "@parley/domain"
import { Data } from "effect"

/** An OAuth error answered as JSON (RFC 6749 5.2, RFC 7591 3.2.2, RFC 7009 2.2.1). */
export class OAuthFailure extends Data.TaggedError("OAuthFailure")<{
  readonly error: OAuthErrorCode
  readonly description: string
  readonly status: number
  readonly retryAfter?: number
}> {}

export const oauthFailure = (error: OAuthErrorCode, description: string, status = 400) =>
  new OAuthFailure({ error, description, status })

/**
 * An authorization request that must not be redirected anywhere (RFC 6749 4.1.2.1): unknown client or a
 * redirect URI it did not register. The user sees an error page instead.
 */
export class AuthorizeRefused extends Data.TaggedError("AuthorizeRefused")<{ readonly message: string }> {}

/** A bad authorization request from a known client and redirect URI: the error goes back to the client. */
export class AuthorizeRedirectError extends Data.TaggedError("AuthorizeRedirectError")<{
  readonly redirectTo: string
}> {}
