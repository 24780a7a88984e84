/**
 * `POST {receiver_url}/web-chat/message` (SPEC.md 4.4): one inbound message, multipart or JSON, with the
 * receiver's own envelope `{status, message, data}`. The message row is committed before the 200. The route reads
 * the transport; the web chat's rules are in Inbound.ts.
 */
import { HttpLayerRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { corsFor } from "../http/Cors.js"
import { WebChatInbound } from "./Inbound.js"
import { receivedBody } from "./ReceiverBody.js"

export { MAX_FILE_BYTES, MAX_FILES } from "./Inbound.js"

const reply = (status: number, message: string, data: unknown = null) =>
  HttpServerResponse.unsafeJson({ status: status < 300, message, data }, { status })

export const receive = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const inbound = yield* WebChatInbound
  const messageId = yield* inbound.accept({
    authorization: request.headers["authorization"] ?? "",
    origin: request.headers["origin"],
    address: Option.getOrElse(request.remoteAddress, () => ""),
    idempotencyKey: request.headers["idempotency-key"],
    readBody: receivedBody(request)
  })
  return reply(200, "Message received.", { message_id: messageId })
}).pipe(
  Effect.scoped,
  Effect.catchTag("Refused", (e) => Effect.succeed(reply(e.status, e.message, e.data ?? null))),
  Effect.withSpan("Receiver.message")
)

/** Browsers post here from widget pages on other origins (CORS: see http/Cors.ts). */
export const ReceiverRoutes = Layer.mergeAll(
  HttpLayerRouter.add("POST", "/web-chat/message", receive),
  corsFor((path) => path === "/web-chat/message")
)
