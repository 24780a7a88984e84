import {
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity,
  OpenApi
} from "@effect/platform"
import { Ok } from "../Envelope.js"
import {
  BadRequestResponse,
  ForbiddenResponse,
  TooManyRequestsResponse,
  UnauthorizedResponse,
  UnprocessableResponse
} from "../Errors.js"
import { Paginated } from "../Pagination.js"
import { VisitorMessage } from "../WebChat.js"
import { CurrentVisitor, WidgetHandoff, WidgetHistoryQuery, WidgetSession, WidgetSessionPayload } from "../Widget.js"
import { PageLinks, PublicOrigin } from "./PublicOrigin.js"

export const widgetSession = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotate(OpenApi.Description, "The visitor's `session` from `POST /api/widget/session`.")
)

/** A valid, unexpired visitor session of an active widget channel (401), used from an allowed origin (403). */
export class WidgetAuth extends HttpApiMiddleware.Tag<WidgetAuth>()("@parley/domain/WidgetAuth", {
  failure: HttpApiSchema.UnionUnify(UnauthorizedResponse, ForbiddenResponse),
  provides: CurrentVisitor,
  security: { widgetSession }
}) {}

export class WidgetApi extends HttpApiGroup.make("widget")
  .add(
    HttpApiEndpoint.post("session", "/api/widget/session")
      .setPayload(WidgetSessionPayload)
      .addSuccess(Ok(WidgetSession, { message: "Widget session ready." }))
      .addError(BadRequestResponse)
      .addError(UnauthorizedResponse)
      .addError(ForbiddenResponse)
      .addError(UnprocessableResponse)
      .addError(TooManyRequestsResponse)
      .annotate(
        OpenApi.Summary,
        "Open or resume a website visitor's conversation (browser-safe: public client id plus Origin)"
      )
      .annotate(
        OpenApi.Description,
        "Called by widget.js from the page. The page's `Origin` must be in the widget channel's `allowed_origins` (403 `Origin not allowed`; an empty list allows no site). A valid `session` resumes that visitor; otherwise a new anonymous contact is made (its `contact_id` is chosen by the server). 401 `Invalid client credentials`, 422 for a channel that is not a widget channel or has no pipeline, 400 `No subscription found`, `No credits found`, `No stages found for this pipeline`, 429 when one address opens too many new sessions."
      )
  )
  .add(
    HttpApiEndpoint.get("history", "/api/widget/messages")
      .setUrlParams(WidgetHistoryQuery)
      .addSuccess(Ok(Paginated(VisitorMessage)))
      .middleware(WidgetAuth)
      .middleware(PageLinks)
      .annotate(OpenApi.Summary, "The visitor's own conversation, newest first")
  )
  .add(
    HttpApiEndpoint.post("handoff", "/api/widget/handoff")
      .addSuccess(Ok(WidgetHandoff, { message: "A member of the team was asked for." }))
      .middleware(WidgetAuth)
      .annotate(
        OpenApi.Summary,
        "The visitor asks to talk to a person (the widget's menu): a handoff request by the contact"
      )
      .annotate(
        OpenApi.Description,
        "The conversation waits for an operator (docs/handoff.md): the visitor gets the bridge message, the agent stops replying. Asking again while waiting or while an operator has it changes nothing and answers the current state."
      )
  )
  .middleware(PublicOrigin)
  .annotate(OpenApi.Title, "Website widget")
{}
