import { Schema } from "effect"
import { ErrorResponse, humanise, summarise, ValidationIssue } from "./Envelope.js"

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
 * 404s named for what is missing. Each answers as `NotFound` (the status and envelope every endpoint
 * declares) with SPEC.md's message for it, so the wire does not change; code fails with the name.
 */
const notFound = (message: string) =>
  class extends NotFound {
    constructor() {
      super({ message })
    }
  }
export class ActionNotFound extends notFound("Action not found.") {}
export class ChannelNotFound extends notFound("Channel not found.") {}
export class ConversationNotFound extends notFound("Conversation not found.") {}
export class EvalCaseNotFound extends notFound("Eval case not found.") {}
export class EvalRunNotFound extends notFound("Eval run not found.") {}
export class FollowupNotFound extends notFound("This stage has no followup.") {}
export class KnowledgeTableNotFound extends notFound("Knowledge table not found.") {}
export class MessageNotFound extends notFound("Message not found on this channel.") {}
export class OpportunityNotFound extends notFound("Opportunity not found.") {}
export class PipelineNotFound extends notFound("Pipeline not found.") {}
export class StageNotFound extends notFound("Stage not found.") {}
export class VariableNotFound extends notFound("Variable not found.") {}
export class VersionNotFound extends notFound("Version not found.") {}
export class WebhookNotFound extends notFound("Webhook not found.") {}
/** Another workspace's id answers like a missing one (docs/api.md), so ids reveal nothing. */
export class WorkspaceNotFound extends notFound("Workspace not found.") {}
