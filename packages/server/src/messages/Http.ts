import { FileSystem, HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Api, DeliveryFailed, MAX_OPERATOR_FILE_BYTES, OperatorUploadLimit, type SendPayload } from "@parley/domain"
import { Effect, Layer, Option } from "effect"
import { Messages } from "./Messages.js"

/**
 * Part headers count towards the parser's limit: some slack here, the exact 25 MB is checked per file.
 * A file over the limit stops the parser mid-body; the rest is drained once the 422 is sent, or the
 * client's kept-alive connection hangs on the unread bytes and its next request is reset.
 */
export const OperatorUploadLimitLive = Layer.succeed(
  OperatorUploadLimit,
  Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    NodeHttpServerRequest.toServerResponse(request).once("finish", () => {
      if (!incoming.complete) incoming.resume()
    })
    return Option.some(FileSystem.Size(MAX_OPERATOR_FILE_BYTES + 16 * 1024))
  })
)

const normalise = (payload: SendPayload) =>
  "files[]" in payload || typeof payload.files === "object" && payload.files !== null
    ? {
      message: (payload.message as string | undefined) ?? null,
      files: [
        ...((payload as { "files[]"?: ReadonlyArray<never> })["files[]"] ?? []),
        ...((payload.files as ReadonlyArray<never> | null | undefined) ?? [])
      ],
      template: null
    }
    : {
      message: (payload.message as string | null | undefined) ?? null,
      files: [],
      template: ("template" in payload ? payload.template : undefined) ?? null
    }

export const MessagesHttpLive = HttpApiBuilder.group(Api, "messages", (handlers) =>
  Effect.gen(function*() {
    const messages = yield* Messages
    return handlers.handle("send", ({ path, payload }) =>
      messages.send(path.conversation, normalise(payload)).pipe(
        Effect.catchTag("ChannelRejected", (e) => Effect.fail(new DeliveryFailed({ message: e.message })))
      ))
  }))
