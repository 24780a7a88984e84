import { Schema } from "effect"
import { TokenId, UserId, WorkspaceId } from "./Ids.js"
import { Timestamp } from "./Schemas.js"
import { Scope } from "./Scopes.js"

export const MembershipRole = Schema.Literal("owner", "manager")

export class WorkspaceSummary extends Schema.Class<WorkspaceSummary>("WorkspaceSummary")({
  id: WorkspaceId,
  name: Schema.String,
  role: MembershipRole,
  is_subscription_active: Schema.Boolean,
  credits: Schema.Number,
  training_credits: Schema.Number
}) {}

export class Me extends Schema.Class<Me>("Me")({
  user: Schema.Struct({
    id: UserId,
    email: Schema.String,
    name: Schema.NullOr(Schema.String),
    is_super_user: Schema.Boolean
  }),
  acting_as: Schema.NullOr(UserId).annotations({ description: "Set when a super user sends X-Act-As-User" }),
  token: Schema.Struct({
    id: TokenId,
    name: Schema.String,
    scopes: Schema.Array(Scope),
    expires_at: Schema.NullOr(Timestamp)
  }),
  workspaces: Schema.Array(WorkspaceSummary)
}) {}
