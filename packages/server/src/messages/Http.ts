import { FileSystem, HttpApiBuilder } from "@effect/platform"
import { Api, DeliveryFailed, MAX_OPERATOR_FILE_BYTES, OperatorUploadLimit, type SendPayload } from "@parley/domain"
import { Effect, Layer, Option } from "effect"
import { Messages } from "./Messages.js"

/** Part headers count towards the parser's limit: some slack here, the exact 25 MB is checked per file. */
export const OperatorUploadLimitLive = Layer.succeed(
  OperatorUploadLimit,
  Effect.succeed(Option.some(FileSystem.Size(MAX_OPERATOR_FILE_BYTES + 16 * 1024)))
)

const normalise = (payload: SendPayload) =>
  "files[]" in payload || typeof payload.files === "object" && payload.files !== null
    ? {
      message: (payload.message as string | undefined) ?? null,
      files: [...((payload as { "files[]"?: ReadonlyArray<never> })["files[]"] ?? []), ...((payload.files as ReadonlyArray<never> | null | undefined) ?? [])]
    }
    : { message: (payload.message as string | null | undefined) ?? null, files: [] }

export const MessagesHttpLive = HttpApiBuilder.group(Api, "messages", (handlers) =>
  Effect.gen(function*() {
    const messages = yield* Messages
    return handlers.handle("send", ({ path, payload }) =>
      messages.send(path.conversation, normalise(payload)).pipe(
        Effect.catchTag("ChannelRejected", (e) => Effect.fail(new DeliveryFailed({ message: e.message })))
      ))
  }))
