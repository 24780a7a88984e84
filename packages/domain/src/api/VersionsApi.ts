/**
 * Pipeline versions (docs/versions.md): the workspace's `drafts` setting, publish, rollback, the list of
 * versions, one version's snapshot and a diff. Reading needs `pipelines:read`; changing `pipelines:write`.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Ok } from "../Envelope.js"
import {
  PipelineNotFoundResponse,
  UnprocessableResponse,
  VersionNotFoundResponse,
  WorkspaceNotFoundResponse
} from "../Errors.js"
import { PipelineIdFromString } from "../Ids.js"
import {
  DiffQuery,
  PipelineVersion,
  PipelineVersions,
  PublishGate,
  PublishGatedResponse,
  Rollback,
  UpdateWorkspaceSettings,
  VersionDiff,
  VersionNumber,
  WorkspaceSettings
} from "../Versions.js"
import { WorkspaceIdFromString } from "../Workspaces.js"
import { Authorized } from "./Auth.js"

const pipelinePath = Schema.Struct({ pipeline: PipelineIdFromString })
const workspacePath = Schema.Struct({ workspace: WorkspaceIdFromString })
const VersionNumberFromString = Schema.compose(Schema.NumberFromString, VersionNumber)

export class VersionsApi extends HttpApiGroup.make("versions")
  .add(
    HttpApiEndpoint.get("settings", "/api/user/workspaces/:workspace/settings")
      .setPath(workspacePath)
      .addSuccess(Ok(WorkspaceSettings))
      .addError(WorkspaceNotFoundResponse)
      .middleware(Authorized["pipelines:read"])
      .annotate(OpenApi.Summary, "A workspace's settings (`drafts`)")
  )
  .add(
    HttpApiEndpoint.patch("updateSettings", "/api/user/workspaces/:workspace/settings")
      .setPath(workspacePath)
      .setPayload(UpdateWorkspaceSettings)
      .addSuccess(Ok(WorkspaceSettings, { message: "Settings updated successfully." }))
      .addError(WorkspaceNotFoundResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Turn drafts on or off")
      .annotate(
        OpenApi.Description,
        "`drafts` on: a published pipeline runs its live version and edits change its draft until `publish`; a pipeline never published is live as edited. Off (the default): every edit is live at once. Scope `pipelines:write`."
      )
  )
  .add(
    HttpApiEndpoint.get("list", "/api/user/pipelines/:pipeline/versions")
      .setPath(pipelinePath)
      .addSuccess(Ok(PipelineVersions))
      .addError(PipelineNotFoundResponse)
      .middleware(Authorized["pipelines:read"])
      .annotate(OpenApi.Summary, "A pipeline's versions, newest first, and which is live")
  )
  .add(
    HttpApiEndpoint.get("diff", "/api/user/pipelines/:pipeline/versions/diff")
      .setPath(pipelinePath)
      .setUrlParams(DiffQuery)
      .addSuccess(Ok(VersionDiff))
      .addError(PipelineNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:read"])
      .annotate(OpenApi.Summary, "What changed between two versions, or a version and the draft")
      .annotate(
        OpenApi.Description,
        "`from` and `to`: `draft`, `live` or a version number (defaults `live` and `draft`)."
      )
  )
  .add(
    HttpApiEndpoint.get("get", "/api/user/pipelines/:pipeline/versions/:number")
      .setPath(Schema.Struct({ pipeline: PipelineIdFromString, number: VersionNumberFromString }))
      .addSuccess(Ok(PipelineVersion))
      .addError(PipelineNotFoundResponse)
      .addError(VersionNotFoundResponse)
      .middleware(Authorized["pipelines:read"])
      .annotate(OpenApi.Summary, "A version with its configuration snapshot")
  )
  .add(
    HttpApiEndpoint.post("publish", "/api/user/pipelines/:pipeline/publish")
      .setPath(pipelinePath)
      .addSuccess(Ok(PipelineVersion, { status: 201, message: "Pipeline published successfully." }))
      .addError(PipelineNotFoundResponse)
      .addError(UnprocessableResponse)
      .addError(PublishGatedResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Publish the draft as a new live version")
      .annotate(
        OpenApi.Description,
        "Atomic. 422 when the live version has a stage the draft removed that still holds opportunities; 409 `PublishGated` when the pipeline is gated and the draft has no passing eval run since it last changed."
      )
  )
  .add(
    HttpApiEndpoint.post("rollback", "/api/user/pipelines/:pipeline/rollback")
      .setPath(pipelinePath)
      .setPayload(Rollback)
      .addSuccess(Ok(PipelineVersion, { status: 201, message: "Pipeline rolled back successfully." }))
      .addError(PipelineNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Republish an earlier version as a new live version (the draft is left as it is)")
  )
  .add(
    HttpApiEndpoint.put("publishGate", "/api/user/pipelines/:pipeline/publish-gate")
      .setPath(pipelinePath)
      .setPayload(PublishGate)
      .addSuccess(Ok(PipelineVersions, { message: "Publish gate updated successfully." }))
      .addError(PipelineNotFoundResponse)
      .middleware(Authorized["pipelines:write"])
      .annotate(OpenApi.Summary, "Require a passing eval run of the draft before publish")
  )
  .annotate(OpenApi.Title, "Pipeline versions")
  .annotate(
    OpenApi.Description,
    "Publish a pipeline's draft, roll back, compare versions. Scopes `pipelines:read` and `pipelines:write`."
  )
{}
