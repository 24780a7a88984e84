/**
 * A call to Meta's Graph API as every Meta adapter makes it (WhatsApp's Cloud API, the Messenger Platform): the token
 * as a bearer header (never in a URL a span records), no trace propagation to Meta, a time limit, and an answer
 * outside 2xx read by the adapter's own table of Meta's codes.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { SendFailure } from "@parley/domain"
import { Duration, Effect } from "effect"

export const GRAPH_TIMEOUT = Duration.seconds(20)

export const graphUnreachable = (cause: unknown) =>
  new SendFailure({
    kind: "transient",
    message: `The Graph API could not be reached: ${cause instanceof Error ? cause.message : String(cause)}`,
    status: null,
    code: null,
    excerpt: null
  })

/** The client (for downloads) and `call`, which answers a 2xx's status and body or fails by `failureOf`. */
export const makeGraphCall = (failureOf: (status: number, body: string) => SendFailure) =>
  Effect.map(HttpClient.HttpClient, (base) => {
    const client = base.pipe(HttpClient.withTracerPropagation(false))
    const call = (request: HttpClientRequest.HttpClientRequest, token: string) =>
      client.execute(HttpClientRequest.bearerToken(request, token)).pipe(
        Effect.flatMap((response) => Effect.map(response.text, (body) => ({ status: response.status, body }))),
        Effect.timeout(GRAPH_TIMEOUT),
        Effect.mapError(graphUnreachable),
        Effect.flatMap((r) =>
          r.status >= 200 && r.status < 300 ? Effect.succeed(r) : Effect.fail(failureOf(r.status, r.body))
        ),
        Effect.scoped
      )
    return { client, call }
  })
