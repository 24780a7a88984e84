/**
 * The operator commands as data: one schema for both ways a command travels, run on a database the CLI
 * opened, or posted to the running server's loopback admin endpoint. Only `effect` and the domain's
 * schemas, so the CLI decodes and posts a command without loading the server.
 */
import { ChannelKind } from "@parley/domain/Channels"
import { ChannelId, KnowledgeTableId, PipelineId, TokenId, UserId, WorkspaceId } from "@parley/domain/Ids"
import { Schema } from "effect"

const Credits = Schema.Number.pipe(Schema.finite(), Schema.nonNegative())

export const AdminCommand = Schema.Union(
  Schema.TaggedStruct("migrate", {}),
  Schema.TaggedStruct("user.create", {
    email: Schema.String,
    password: Schema.String,
    name: Schema.optional(Schema.String),
    workspaceName: Schema.optional(Schema.String),
    credits: Schema.optional(Credits),
    trainingCredits: Schema.optional(Credits)
  }),
  Schema.TaggedStruct("user.list", {}),
  /** By email or by id. */
  Schema.TaggedStruct("user.show", { email: Schema.optional(Schema.String), id: Schema.optional(UserId) }),
  Schema.TaggedStruct("user.grant-manager", { email: Schema.String, workspaceId: WorkspaceId }),
  Schema.TaggedStruct("user.make-super", { email: Schema.String }),
  Schema.TaggedStruct("workspace.create", {
    email: Schema.String,
    name: Schema.String,
    credits: Schema.optional(Credits),
    trainingCredits: Schema.optional(Credits)
  }),
  Schema.TaggedStruct("workspace.list", {}),
  Schema.TaggedStruct("workspace.show", { workspaceId: WorkspaceId }),
  Schema.TaggedStruct("workspace.set", {
    workspaceId: WorkspaceId,
    credits: Schema.optional(Credits),
    trainingCredits: Schema.optional(Credits),
    subscription: Schema.optional(Schema.Literal("active", "inactive")),
    drafts: Schema.optional(Schema.Literal("on", "off"))
  }),
  Schema.TaggedStruct("token.create", {
    email: Schema.String,
    scopes: Schema.Array(Schema.String),
    name: Schema.optional(Schema.String),
    expiresInDays: Schema.optional(Schema.Number)
  }),
  /** Every token, or one user's; never the token material. */
  Schema.TaggedStruct("token.list", { email: Schema.optional(Schema.String) }),
  Schema.TaggedStruct("token.show", { id: TokenId }),
  Schema.TaggedStruct("token.revoke", { id: TokenId }),
  Schema.TaggedStruct("channel.create", {
    workspaceId: WorkspaceId,
    kind: ChannelKind,
    pipelineId: Schema.optional(PipelineId),
    name: Schema.optional(Schema.String),
    callbackUrl: Schema.optional(Schema.String),
    allowedOrigins: Schema.optional(Schema.Array(Schema.String)),
    allowedIps: Schema.optional(Schema.Array(Schema.String)),
    /** A provider channel's credentials (docs/channels.md), checked by its adapter like the REST API does. */
    credentials: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
  }),
  /** Every channel, or one workspace's; with their web-chat URLs, never their secrets. */
  Schema.TaggedStruct("channel.list", { workspaceId: Schema.optional(WorkspaceId) }),
  Schema.TaggedStruct("channel.show", { id: ChannelId }),
  Schema.TaggedStruct("channel.rotate", { id: ChannelId }),
  Schema.TaggedStruct("pipeline.list", { workspaceId: Schema.optional(WorkspaceId) }),
  /** The pipeline with its stages, as `GET /api/user/pipelines/{id}` answers it. */
  Schema.TaggedStruct("pipeline.show", { id: PipelineId }),
  /** The table's columns (the importer converts CSV cells to their types); unknown table: failure. */
  Schema.TaggedStruct("knowledge.columns", { tableId: KnowledgeTableId }),
  /**
   * One batch of `knowledge import`. A batch that fails validation is not a command failure: the result
   * is `{ rejected: [{field, message}] }` (fields as in the REST 422, `points.<i>.<column>`), so the
   * importer can tell it apart from other failures through the admin endpoint too.
   */
  Schema.TaggedStruct("knowledge.upsert", {
    tableId: KnowledgeTableId,
    points: Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
  })
)
export type AdminCommand = typeof AdminCommand.Type

/**
 * What a workspace still lacks before its agent can reply to a contact (docs/agent.md, "When no reply is
 * made"): an active subscription, credits, an active pipeline with stages, an active channel linked to one.
 */
export const WorkspaceNeeds = ["subscription", "credits", "pipeline", "channel"] as const
export type WorkspaceNeed = typeof WorkspaceNeeds[number]
