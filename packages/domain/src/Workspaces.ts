/** A workspace's people (`GET /api/user/workspaces/{workspace}/members`): who an operator can assign to. */
import { Schema } from "effect"
import { MembershipRole } from "./Identity.js"
import { IdFromString, UserId, WorkspaceId } from "./Ids.js"

export const WorkspaceIdFromString = IdFromString(WorkspaceId)

export class WorkspaceMember extends Schema.Class<WorkspaceMember>("WorkspaceMember")({
  id: UserId,
  name: Schema.NullOr(Schema.String),
  email: Schema.String,
  role: MembershipRole.annotations({ description: "`owner` of the workspace, or a `manager` granted access to it" })
}) {}
