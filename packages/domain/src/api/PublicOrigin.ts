/**
 * The public base URL of the request (PUBLIC_URL, or the Host the client used), provided to handlers by
 * middleware so services that build links (signed file URLs, pagination) never read the request.
 */
import { HttpApiMiddleware } from "@effect/platform"
import { Context } from "effect"

export class PublicBaseUrl extends Context.Tag("@parley/domain/PublicBaseUrl")<PublicBaseUrl, string>() {}

export class PublicOrigin extends HttpApiMiddleware.Tag<PublicOrigin>()("@parley/domain/PublicOrigin", {
  provides: PublicBaseUrl
}) {}
