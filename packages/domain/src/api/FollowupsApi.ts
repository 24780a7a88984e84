import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Ok } from "../Envelope.js"
import { FollowupNotFoundResponse, StageNotFoundResponse, UnprocessableResponse } from "../Errors.js"
import { FollowupDeleted, SaveFollowup, StageFollowup } from "../Followups.js"
import { StageIdFromString } from "../Ids.js"
import { Authorized } from "./Auth.js"

const stagePath = Schema.Struct({ stage: StageIdFromString })

/** A stage's followup sequence (SPEC.md 4.5 `create_followup`, `get_stage_followup`, `update_followup`). */
export class FollowupsApi extends HttpApiGroup.make("followups")
  .add(
    HttpApiEndpoint.get("get", "/api/user/stages/:stage/followup")
      .setPath(stagePath)
      .addSuccess(Ok(StageFollowup))
      .addError(StageNotFoundResponse)
      .middleware(Authorized["pipelines:read"])
      .annotate(OpenApi.Summary, "Get a stage's followup")
      .annotate(
        OpenApi.Description,
        "`has_followup` and the `followup` (null when the stage has none). Scope `pipelines:read`."
      )
  )
  .add(
    HttpApiEndpoint.put("save", "/api/user/stages/:stage/followup")
      .setPath(stagePath)
      .setPayload(SaveFollowup)
      .addSuccess(Ok(StageFollowup, { message: "Followup saved successfully." }))
      .addError(StageNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Create or update a stage's followup")
      .annotate(
        OpenApi.Description,
        "Creates the stage's followup (`is_active` and `intervals` required) or changes the fields sent. " +
          "Changes apply to sequences started afterwards; a running sequence stops when its followup is deactivated or deleted. " +
          "Scope `pipelines:write`."
      )
  )
  .add(
    HttpApiEndpoint.del("delete", "/api/user/stages/:stage/followup")
      .setPath(stagePath)
      .addSuccess(Ok(FollowupDeleted, { message: "Followup deleted successfully." }))
      .addError(FollowupNotFoundResponse)
      .addError(StageNotFoundResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Delete a stage's followup; its running sequences stop")
  )
  .annotate(OpenApi.Title, "Followups")
  .annotate(OpenApi.Description, "One followup sequence per stage. Scopes `pipelines:read` and `pipelines:write`.")
{}
