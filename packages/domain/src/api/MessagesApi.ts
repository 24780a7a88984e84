import { FileSystem, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, Multipart, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Ok, UploadRejectedResponse } from "../Envelope.js"
import {
  ConversationNotFoundResponse,
  DeliveryFailedResponse,
  ForbiddenResponse,
  UnprocessableResponse
} from "../Errors.js"
import { MessageRecord, SendPayload } from "../Messages.js"
import { ConversationIdFromString } from "../Opportunities.js"
import { Authorized } from "./Auth.js"
import { PublicOrigin } from "./PublicOrigin.js"

/** The 25 MB per-file limit of operator uploads (SPEC.md 8), in force while this endpoint reads its body. */
export class OperatorUploadLimit
  extends HttpApiMiddleware.Tag<OperatorUploadLimit>()("@parley/domain/OperatorUploadLimit", {
    provides: Multipart.MaxFileSize
  })
{}

export class MessagesApi extends HttpApiGroup.make("messages")
  .add(
    HttpApiEndpoint.post("send", "/api/user/:conversation/messages")
      .setPath(Schema.Struct({ conversation: ConversationIdFromString }))
      .setPayload(SendPayload)
      .addSuccess(Ok(MessageRecord, { message: "Message sent." }))
      .addError(ForbiddenResponse)
      .addError(ConversationNotFoundResponse)
      .addError(UnprocessableResponse)
      .addError(DeliveryFailedResponse)
      // raised while the body is read; the builder encodes it through the union of every endpoint's errors
      .addError(UploadRejectedResponse)
      .middleware(OperatorUploadLimit)
      .middleware(PublicOrigin)
      .middleware(Authorized["messages:send"])
      .annotate(OpenApi.Summary, "Send a message into a conversation as an operator (text as JSON, files as multipart)")
      .annotate(
        OpenApi.Description,
        "Up to 10,000 characters and up to 10 files of 25 MB (`files[]`). Delivered through the conversation's channel: `new_message` on the socket and, with a callback URL, the signed reply webhook. 500 when the channel refuses it (the record is kept with status `failed`)."
      )
  )
  .annotate(OpenApi.Title, "Messages")
{}

export type { FileSystem }
