import { Schema } from "effect"
import { ErrorResponse, FixedErrorResponse, humanise, summarise, ValidationIssue } from "./Envelope.js"

export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  message: Schema.String
}) {}

export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", {
  message: Schema.String
}) {}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  message: Schema.String
}) {}

/** 400 with a business message (`Create a stage first`, `No credits found`). */
export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", {
  message: Schema.String
}) {}

/** 422 found by the service rather than the schema: unknown ids, uniqueness, cross-field rules. */
export class Unprocessable extends Schema.TaggedError<Unprocessable>()("Unprocessable", {
  message: Schema.String,
  validation: Schema.Array(ValidationIssue)
}) {
  static of(issues: ReadonlyArray<{ readonly field: string; readonly message: string }>) {
    const validation = issues.map((i) => new ValidationIssue({ field: i.field, message: humanise(i.field, i.message) }))
    return new Unprocessable({ message: summarise(validation), validation })
  }
}

export const UnauthorizedResponse = ErrorResponse(Unauthorized, 401, "Unauthorized")
export const ForbiddenResponse = ErrorResponse(Forbidden, 403, "Forbidden")
export const NotFoundResponse = ErrorResponse(NotFound, 404, "NotFound")
export const BadRequestResponse = ErrorResponse(BadRequest, 400, "BadRequest")
export const UnprocessableResponse = ErrorResponse(Unprocessable, 422, "Unprocessable")

/** 500: the conversation's channel refused an outgoing message; the record is kept with status `failed`. */
export class DeliveryFailed extends Schema.TaggedError<DeliveryFailed>()("DeliveryFailed", {
  message: Schema.String
}) {}
export const DeliveryFailedResponse = ErrorResponse(DeliveryFailed, 500, "DeliveryFailed")

/** 502: a channel's provider failed or could not be reached for a read (the templates of a WhatsApp account). */
export class ProviderFailed extends Schema.TaggedError<ProviderFailed>()("ProviderFailed", {
  message: Schema.String
}) {}
export const ProviderFailedResponse = ErrorResponse(ProviderFailed, 502, "ProviderFailed")

/** 429: too many attempts from one address; `retry_after` seconds until the window resets. */
export class TooManyRequests extends Schema.TaggedError<TooManyRequests>()("TooManyRequests", {
  message: Schema.String
}) {}
export const TooManyRequestsResponse = ErrorResponse(TooManyRequests, 429, "TooManyRequests")

/** 409: a handoff move that does not apply to the conversation's current state (docs/handoff.md). */
export class HandoffConflict extends Schema.TaggedError<HandoffConflict>()("HandoffConflict", {
  message: Schema.String
}) {}
export const HandoffConflictResponse = ErrorResponse(HandoffConflict, 409, "HandoffConflict")

/**
 * 404s named for what is missing: each a tagged error of its own, so `catchTag` and the OpenAPI document see the
 * name, made without arguments and carrying SPEC.md's message for it. On the wire each is the 404 envelope with
 * that message; an endpoint declares the ones it can answer.
 */
const fixedMessage = (message: string) => ({
  message: Schema.optionalWith(Schema.String, { default: () => message })
})
export class ActionNotFound
  extends Schema.TaggedError<ActionNotFound>()("ActionNotFound", fixedMessage("Action not found."))
{}
export const ActionNotFoundResponse = FixedErrorResponse(ActionNotFound, 404, "ActionNotFound", "Action not found.")
export class ChannelNotFound
  extends Schema.TaggedError<ChannelNotFound>()("ChannelNotFound", fixedMessage("Channel not found."))
{}
export const ChannelNotFoundResponse = FixedErrorResponse(ChannelNotFound, 404, "ChannelNotFound", "Channel not found.")
export class ConversationNotFound
  extends Schema.TaggedError<ConversationNotFound>()("ConversationNotFound", fixedMessage("Conversation not found."))
{}
export const ConversationNotFoundResponse = FixedErrorResponse(
  ConversationNotFound,
  404,
  "ConversationNotFound",
  "Conversation not found."
)
export class EvalCaseNotFound
  extends Schema.TaggedError<EvalCaseNotFound>()("EvalCaseNotFound", fixedMessage("Eval case not found."))
{}
export const EvalCaseNotFoundResponse = FixedErrorResponse(
  EvalCaseNotFound,
  404,
  "EvalCaseNotFound",
  "Eval case not found."
)
export class EvalRunNotFound
  extends Schema.TaggedError<EvalRunNotFound>()("EvalRunNotFound", fixedMessage("Eval run not found."))
{}
export const EvalRunNotFoundResponse = FixedErrorResponse(
  EvalRunNotFound,
  404,
  "EvalRunNotFound",
  "Eval run not found."
)
export class FollowupNotFound
  extends Schema.TaggedError<FollowupNotFound>()("FollowupNotFound", fixedMessage("This stage has no followup."))
{}
export const FollowupNotFoundResponse = FixedErrorResponse(
  FollowupNotFound,
  404,
  "FollowupNotFound",
  "This stage has no followup."
)
export class KnowledgeTableNotFound extends Schema.TaggedError<KnowledgeTableNotFound>()(
  "KnowledgeTableNotFound",
  fixedMessage("Knowledge table not found.")
) {}
export const KnowledgeTableNotFoundResponse = FixedErrorResponse(
  KnowledgeTableNotFound,
  404,
  "KnowledgeTableNotFound",
  "Knowledge table not found."
)
export class MessageNotFound
  extends Schema.TaggedError<MessageNotFound>()("MessageNotFound", fixedMessage("Message not found on this channel."))
{}
export const MessageNotFoundResponse = FixedErrorResponse(
  MessageNotFound,
  404,
  "MessageNotFound",
  "Message not found on this channel."
)
export class OpportunityNotFound
  extends Schema.TaggedError<OpportunityNotFound>()("OpportunityNotFound", fixedMessage("Opportunity not found."))
{}
export const OpportunityNotFoundResponse = FixedErrorResponse(
  OpportunityNotFound,
  404,
  "OpportunityNotFound",
  "Opportunity not found."
)
export class PipelineNotFound
  extends Schema.TaggedError<PipelineNotFound>()("PipelineNotFound", fixedMessage("Pipeline not found."))
{}
export const PipelineNotFoundResponse = FixedErrorResponse(
  PipelineNotFound,
  404,
  "PipelineNotFound",
  "Pipeline not found."
)
export class StageNotFound
  extends Schema.TaggedError<StageNotFound>()("StageNotFound", fixedMessage("Stage not found."))
{}
export const StageNotFoundResponse = FixedErrorResponse(StageNotFound, 404, "StageNotFound", "Stage not found.")
export class VariableNotFound
  extends Schema.TaggedError<VariableNotFound>()("VariableNotFound", fixedMessage("Variable not found."))
{}
export const VariableNotFoundResponse = FixedErrorResponse(
  VariableNotFound,
  404,
  "VariableNotFound",
  "Variable not found."
)
export class VersionNotFound
  extends Schema.TaggedError<VersionNotFound>()("VersionNotFound", fixedMessage("Version not found."))
{}
export const VersionNotFoundResponse = FixedErrorResponse(VersionNotFound, 404, "VersionNotFound", "Version not found.")
export class WebhookNotFound
  extends Schema.TaggedError<WebhookNotFound>()("WebhookNotFound", fixedMessage("Webhook not found."))
{}
export const WebhookNotFoundResponse = FixedErrorResponse(WebhookNotFound, 404, "WebhookNotFound", "Webhook not found.")
/** Another workspace's id answers like a missing one (docs/api.md), so ids reveal nothing. */
export class WorkspaceNotFound
  extends Schema.TaggedError<WorkspaceNotFound>()("WorkspaceNotFound", fixedMessage("Workspace not found."))
{}
export const WorkspaceNotFoundResponse = FixedErrorResponse(
  WorkspaceNotFound,
  404,
  "WorkspaceNotFound",
  "Workspace not found."
)

/** Any of the named 404s. */
export type NamedNotFound =
  | ActionNotFound
  | ChannelNotFound
  | ConversationNotFound
  | EvalCaseNotFound
  | EvalRunNotFound
  | FollowupNotFound
  | KnowledgeTableNotFound
  | MessageNotFound
  | OpportunityNotFound
  | PipelineNotFound
  | StageNotFound
  | VariableNotFound
  | VersionNotFound
  | WebhookNotFound
  | WorkspaceNotFound
