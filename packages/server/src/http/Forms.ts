/**
 * What the plain-router pages and endpoints (the account pages, OAuth's) read from a request: a form body, the
 * public base URL it was made to (the OAuth issuer), and the caller's address.
 */
import { type HttpServerRequest, UrlParams } from "@effect/platform"
import { Effect, Option } from "effect"
import { AppConfig, publicBaseUrl } from "../config/AppConfig.js"

/** A form body (or query) as first values and lists; an unreadable body reads as empty. */
export const formOf = (request: HttpServerRequest.HttpServerRequest) =>
  request.urlParamsBody.pipe(
    Effect.orElseSucceed(() => UrlParams.empty),
    Effect.map((params) => ({
      first: (key: string) => Option.getOrUndefined(UrlParams.getFirst(params, key)),
      all: (key: string) => UrlParams.getAll(params, key),
      record: () => {
        const out: Record<string, string> = {}
        for (const [k, v] of params) if (!(k in out)) out[k] = v
        return out
      }
    }))
  )

/** The public base URL the request was made to: the OAuth issuer and the cookies' scope. */
export const issuerOf = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.map(AppConfig, (config) => publicBaseUrl(config, request.headers))

export const remoteAddress = (request: HttpServerRequest.HttpServerRequest) =>
  Option.getOrElse(request.remoteAddress, () => "unknown")
