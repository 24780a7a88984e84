import {
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity,
  OpenApi
} from "@effect/platform"
import { Ok } from "../Envelope.js"
import { BadRequestResponse, ForbiddenResponse, UnauthorizedResponse, UnprocessableResponse } from "../Errors.js"
import { Paginated } from "../Pagination.js"
import { CurrentChannel, HistoryMessage, HistoryQuery, InitiatePayload, WebChatSession } from "../WebChat.js"
import { PageLinks, PublicOrigin } from "./PublicOrigin.js"

export const basic = HttpApiSecurity.basic.pipe(
  HttpApiSecurity.annotate(OpenApi.Description, "The web channel's `client_id` (wc_...) and `client_secret`.")
)

/** Basic `client_id:client_secret` of an active web channel: 401 otherwise, 422 for another kind of channel. */
export class WebChatAuth extends HttpApiMiddleware.Tag<WebChatAuth>()("@parley/domain/WebChatAuth", {
  failure: HttpApiSchema.UnionUnify(UnauthorizedResponse, UnprocessableResponse),
  provides: CurrentChannel,
  security: { basic }
}) {}

export class WebChatApi extends HttpApiGroup.make("webChat")
  .add(
    HttpApiEndpoint.post("initiate", "/api/user/web-chat/initiate")
      .setPayload(InitiatePayload)
      .addSuccess(Ok(WebChatSession, { message: "Conversation initiated." }))
      .addError(BadRequestResponse)
      .addError(UnprocessableResponse)
      .annotate(OpenApi.Summary, "Open or resume a web-chat conversation (idempotent per contact_id)")
      .annotate(
        OpenApi.Description,
        "Returns the receiver address, the socket channel and a join token. Identity fields fill only what the contact lacks. 400 `No subscription found`, `No credits found` or `No stages found for this pipeline`; 422 `Channel is not linked to any pipeline`."
      )
  )
  .add(
    HttpApiEndpoint.get("history", "/api/user/messages/webchat")
      .setUrlParams(HistoryQuery)
      .addSuccess(Ok(Paginated(HistoryMessage)))
      .addError(ForbiddenResponse)
      .middleware(PageLinks)
      .annotate(OpenApi.Summary, "Message history of one conversation of this channel, newest first")
      .annotate(
        OpenApi.Description,
        "`contact_id` wins over `conversation_id`. 403 `Unauthorized` when the conversation is missing or belongs to another channel."
      )
  )
  .middleware(WebChatAuth)
  .middleware(PublicOrigin)
  .annotate(OpenApi.Title, "Web chat")
{}
