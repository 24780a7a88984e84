/**
 * `GET` and `POST {receiver_url}/channels/{webhook_key}/webhook` (docs/channels.md): a provider channel's webhook on
 * the receiver listener. The route reads the transport; the channel layer (ProviderInbound.ts) does the rest.
 */
import { HttpLayerRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import type { ProviderRequest } from "@parley/domain"
import { Effect, Layer } from "effect"
import { AppConfig, receiverBaseUrl } from "../config/AppConfig.js"
import { BoundAddresses } from "../http/Listener.js"
import { ProviderInbound } from "./ProviderInbound.js"
import { WEBHOOK_ROUTE } from "./WebhookPath.js"

const providerRequest = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const search = yield* HttpServerRequest.ParsedSearchParams
  const { key } = yield* HttpLayerRouter.params
  const body = request.method === "POST" ? new Uint8Array(yield* request.arrayBuffer) : new Uint8Array()
  const query: Record<string, string | undefined> = {}
  for (const [name, value] of Object.entries(search)) query[name] = Array.isArray(value) ? value[0] : value
  const config = yield* AppConfig
  const receiver = yield* (yield* BoundAddresses).receiver
  // the URL as the channel's webhook_url publishes it: what a provider that signs URLs signed
  const url = `${receiverBaseUrl(config, receiver)}${request.url}`
  const provider: ProviderRequest = { method: request.method, url, headers: request.headers, query, body }
  return { key: key ?? "", provider }
})

const refused = (e: { readonly status: number; readonly message: string }) =>
  HttpServerResponse.unsafeJson({ status: false, message: e.message, data: null }, { status: e.status })

const handshake = Effect.gen(function*() {
  const { key, provider } = yield* providerRequest
  const challenge = yield* (yield* ProviderInbound).handshake(key, provider)
  return HttpServerResponse.text(challenge)
}).pipe(
  Effect.catchTag("WebhookRefused", (e) => Effect.succeed(refused(e))),
  Effect.withSpan("ChannelWebhook.handshake")
)

const receive = Effect.gen(function*() {
  const { key, provider } = yield* providerRequest
  const answer = yield* (yield* ProviderInbound).receive(key, provider)
  return answer === undefined
    ? HttpServerResponse.unsafeJson({ status: true, message: "Received.", data: null })
    : HttpServerResponse.text(answer.body, { contentType: answer.contentType })
}).pipe(
  Effect.catchTag("WebhookRefused", (e) => Effect.succeed(refused(e))),
  Effect.withSpan("ChannelWebhook.receive")
)

export const ChannelWebhookRoutes = Layer.mergeAll(
  HttpLayerRouter.add("GET", WEBHOOK_ROUTE, handshake),
  HttpLayerRouter.add("POST", WEBHOOK_ROUTE, receive)
)
