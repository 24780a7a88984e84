/** The requests and rows of OpportunitiesRepo's statements. */
import {
  ChannelId,
  ContactId,
  ConversationId,
  ConversationStatus,
  OpportunityOnContact,
  OpportunityStatus,
  PipelineId,
  Priority,
  StageId,
  WorkspaceId
} from "@parley/domain"
import { Schema } from "effect"

export const NewOpportunity = Schema.Struct({
  workspace_id: WorkspaceId,
  pipeline_id: PipelineId,
  stage_id: StageId,
  contact_id: ContactId,
  status: OpportunityStatus,
  name: Schema.NullOr(Schema.String),
  notes: Schema.NullOr(Schema.String),
  context: Schema.Unknown,
  is_test: Schema.Boolean,
  source: Schema.NullOr(Schema.String),
  source_id: Schema.NullOr(Schema.String),
  /** an eval's sandboxed opportunity (docs/evals.md) */
  is_eval: Schema.optional(Schema.Boolean),
  /** what an eval's opportunity runs (docs/versions.md): 0 the draft, else a pipeline version's id */
  config_version_id: Schema.optional(Schema.Number)
})
export type NewOpportunity = typeof NewOpportunity.Type

export interface OpportunityChanges {
  readonly stage_id?: StageId | undefined
  readonly name?: string | null | undefined
  readonly notes?: string | null | undefined
  readonly status?: OpportunityStatus | undefined
  /** `null` clears; an object is merged into what is stored */
  readonly context?: Record<string, unknown> | null | undefined
}

export const NewContact = Schema.Struct({
  workspace_id: WorkspaceId,
  name: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  phone: Schema.NullOr(Schema.String),
  priority: Priority,
  is_eval: Schema.optional(Schema.Boolean)
})

export const NewConversation = Schema.Struct({
  workspace_id: WorkspaceId,
  contact_id: ContactId,
  channel_id: Schema.NullOr(ChannelId),
  is_test: Schema.Boolean,
  is_eval: Schema.optional(Schema.Boolean)
})

// lookups take ids as plain numbers: a request is encoded before it runs, and a number that is no id finds nothing
export const InWorkspaces = Schema.Struct({ workspaceIds: Schema.Array(WorkspaceId), id: Schema.Number })
export const InWorkspace = <F extends Schema.Struct.Fields>(fields: F) =>
  Schema.Struct({ workspaceId: Schema.Number, ...fields })
export const IdRow = <A, I>(id: Schema.Schema<A, I>) => Schema.Struct({ id })
export const ConversationRow = Schema.Struct({ id: ConversationId, status: ConversationStatus })
/** An opportunity's own columns, without what is joined to it. */
export const OpportunityRow = Schema.Struct(OpportunityOnContact.fields).omit("conversation")
