/**
 * Values taken from the request by middleware, so services that build links (signed file URLs, pagination) never
 * read the request: the public base URL (PUBLIC_URL, or the Host the client used) and the request's own URL as the
 * client reached it.
 */
import { HttpApiMiddleware } from "@effect/platform"
import { Context } from "effect"

export class PublicBaseUrl extends Context.Tag("@parley/domain/PublicBaseUrl")<PublicBaseUrl, string>() {}

export class PublicOrigin extends HttpApiMiddleware.Tag<PublicOrigin>()("@parley/domain/PublicOrigin", {
  provides: PublicBaseUrl
}) {}

/** The request's URL under the public base URL: the page links of a paginated answer are built from it. */
export class RequestUrl extends Context.Tag("@parley/domain/RequestUrl")<RequestUrl, URL>() {}

export class PageLinks extends HttpApiMiddleware.Tag<PageLinks>()("@parley/domain/PageLinks", {
  provides: RequestUrl
}) {}
