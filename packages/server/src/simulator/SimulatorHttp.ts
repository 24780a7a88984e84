/**
 * What every simulator's routes share (Routes.ts and each simulator's own routes): JSON answers, the 404 for an
 * address no simulated channel has, the bearer token a simulated adapter sends, and the contact's phone page.
 */
import { HttpLayerRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { htmlResponse, scriptNonce } from "../http/PageHeaders.js"
import { type PhoneOptions, phonePage } from "./PhonePage.js"

export const json = (status: number, body: unknown) => HttpServerResponse.unsafeJson(body, { status })
export const notFound = json(404, { message: "No simulated channel has this address." })

export const bearer = Effect.map(
  HttpServerRequest.HttpServerRequest,
  (request) => /^Bearer (.+)$/i.exec(request.headers["authorization"] ?? "")?.[1]
)

/** The contact's phone for the simulated channel of the path's `key`, or 404. */
export const page = <E, R>(
  simulated: (key: string) => Effect.Effect<Option.Option<unknown>, E, R>,
  options: PhoneOptions
) =>
  Effect.gen(function*() {
    const { key } = yield* HttpLayerRouter.params
    if (Option.isNone(yield* simulated(key ?? ""))) return notFound
    const nonce = scriptNonce()
    const policy = { "script-src": [`'nonce-${nonce}'`], "style-src": ["'unsafe-inline'"], "connect-src": ["'self'"] }
    return htmlResponse(phonePage(nonce, options), policy, { cache: "no-store" })
  })
