import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Ok } from "../Envelope.js"
import { WorkspaceNotFoundResponse } from "../Errors.js"
import { WorkspaceIdFromString, WorkspaceMember } from "../Workspaces.js"
import { Authorized } from "./Auth.js"

/** The workspaces the caller reaches, beside the account (`/api/user/me` lists them). */
export class WorkspacesApi extends HttpApiGroup.make("workspaces")
  .add(
    HttpApiEndpoint.get("members", "/api/user/workspaces/:workspace/members")
      .setPath(Schema.Struct({ workspace: WorkspaceIdFromString }))
      .addSuccess(Ok(Schema.Array(WorkspaceMember)))
      .addError(WorkspaceNotFoundResponse)
      .middleware(Authorized["conversations:read"])
      .annotate(
        OpenApi.Summary,
        "A workspace's members (owner first, then managers by name): the people a conversation can be assigned to"
      )
      .annotate(
        OpenApi.Description,
        "A workspace the caller does not reach answers like a missing one: 404 `Workspace not found.`. Scope `conversations:read`."
      )
  )
  .annotate(OpenApi.Title, "Workspaces")
{}
