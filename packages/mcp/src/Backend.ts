/**
 * The port the MCP tools call: what a tool can read and change, in the domain's own types. The server
 * implements it with its services; every method acts as the `CurrentActor` the request authenticated.
 */
import type {
  AccountSummary,
  Action,
  ActionId,
  ActionResult,
  ActionResultsQuery,
  AiPerformance,
  BadRequest,
  Contact,
  ConversationDetail,
  ConversationId,
  ConversationMessagesPage,
  ConversationMessagesQuery,
  ConversationsPage,
  CreateAction,
  CreateKnowledgeTable,
  CreatePipeline,
  CreateStage,
  CreateVariable,
  CreateWebSource,
  CurrentActor,
  DiffQuery,
  EvalRun,
  EvalRunId,
  Forbidden,
  HandoffCommand,
  HandoffConflict,
  KnowledgeSource,
  KnowledgeSourceId,
  KnowledgeSourceNotFound,
  KnowledgeTableId,
  KnowledgeTableWithColumns,
  ListContactsQuery,
  ListConversationsQuery,
  ListOpportunitiesQuery,
  MessagesFilter,
  MessagesPage,
  MessagingStats,
  MessagingStatsQuery,
  NamedNotFound,
  NotFound,
  Opportunity,
  OpportunityId,
  Page,
  Pipeline,
  PipelineId,
  PipelineModelPool,
  PipelineOptions,
  PipelineVersion,
  PipelineVersions,
  PipelineWithStages,
  PointsPage,
  PublishGated,
  Rollback,
  SaveFollowup,
  SearchKnowledge,
  SearchResults,
  Stage,
  StageFollowup,
  StageId,
  StartEvalRun,
  Unprocessable,
  UpdateAction,
  UpdateModelPool,
  UpdateOpportunity,
  UpdatePipeline,
  UpdateStage,
  UpdateVariable,
  Variable,
  VariableId,
  VersionDiff,
  WithWarning
} from "@parley/domain"
import { Context, type Effect } from "effect"

/** What a backend call may fail with: the REST errors, each becoming a tool error with its message. */
export type BackendFailure =
  | NotFound
  | NamedNotFound
  | KnowledgeSourceNotFound
  | Unprocessable
  | BadRequest
  | Forbidden
  | HandoffConflict
  | PublishGated

export type Op<A> = Effect.Effect<A, BackendFailure, CurrentActor>

export interface McpBackendShape {
  // analytics
  readonly accountSummary: () => Op<AccountSummary>
  readonly aiPerformance: () => Op<AiPerformance>
  readonly messagingStats: (query: MessagingStatsQuery) => Op<MessagingStats>
  // pipelines, stages, model pool, catalogue
  readonly pipelineOptions: (
    query: { readonly language_code: string; readonly ai_provider_id?: number | undefined }
  ) => Op<PipelineOptions>
  readonly listPipelines: () => Op<ReadonlyArray<Pipeline>>
  readonly getPipeline: (id: PipelineId) => Op<PipelineWithStages>
  /** `warning`: the pipeline's model cannot be called in this server (no provider key) */
  readonly createPipeline: (input: CreatePipeline) => Op<WithWarning<PipelineWithStages>>
  readonly updatePipeline: (id: PipelineId, input: UpdatePipeline) => Op<WithWarning<PipelineWithStages>>
  readonly listStages: (pipelineId: PipelineId) => Op<ReadonlyArray<Stage>>
  readonly createStage: (pipelineId: PipelineId, input: CreateStage) => Op<Stage>
  readonly updateStage: (id: StageId, input: UpdateStage) => Op<Stage>
  readonly modelPool: (pipelineId: PipelineId) => Op<PipelineModelPool>
  readonly updateModelPool: (pipelineId: PipelineId, input: UpdateModelPool) => Op<PipelineModelPool>
  // followups
  readonly stageFollowup: (stageId: StageId) => Op<StageFollowup>
  readonly saveFollowup: (stageId: StageId, input: SaveFollowup) => Op<StageFollowup>
  // variables and actions
  readonly listVariables: (pipelineId: PipelineId, q: string | undefined) => Op<ReadonlyArray<Variable>>
  readonly createVariable: (pipelineId: PipelineId, input: CreateVariable) => Op<Variable>
  readonly updateVariable: (id: VariableId, input: UpdateVariable) => Op<Variable>
  readonly listActions: (pipelineId: PipelineId, stageId: number | undefined) => Op<ReadonlyArray<Action>>
  readonly createAction: (pipelineId: PipelineId, input: CreateAction) => Op<Action>
  readonly updateAction: (id: ActionId, input: UpdateAction) => Op<Action>
  readonly actionResults: (pipelineId: PipelineId, query: ActionResultsQuery) => Op<ReadonlyArray<ActionResult>>
  // opportunities, contacts, messages
  readonly listContacts: (query: ListContactsQuery) => Op<Page<Contact>>
  readonly listOpportunities: (query: ListOpportunitiesQuery) => Op<Page<Opportunity>>
  readonly updateOpportunity: (id: OpportunityId, input: UpdateOpportunity) => Op<Opportunity>
  readonly listMessages: (filter: MessagesFilter) => Op<MessagesPage>
  // conversations and handoff (issue 19)
  readonly listConversations: (query: ListConversationsQuery) => Op<ConversationsPage>
  readonly getConversation: (id: ConversationId) => Op<ConversationDetail>
  readonly conversationMessages: (id: ConversationId, query: ConversationMessagesQuery) => Op<ConversationMessagesPage>
  readonly handoffConversation: (id: ConversationId, command: HandoffCommand) => Op<ConversationDetail>
  // knowledge
  readonly listKnowledgeTables: () => Op<ReadonlyArray<KnowledgeTableWithColumns>>
  readonly createKnowledgeTable: (input: CreateKnowledgeTable) => Op<KnowledgeTableWithColumns>
  readonly knowledgePoints: (id: KnowledgeTableId, perPage: number, cursor: string | undefined) => Op<PointsPage>
  readonly searchKnowledge: (id: KnowledgeTableId, input: SearchKnowledge) => Op<SearchResults>
  readonly upsertPoints: (
    id: KnowledgeTableId,
    points: ReadonlyArray<Record<string, unknown>>
  ) => Op<{ readonly upserted: number }>
  readonly deletePoints: (id: KnowledgeTableId, ids: ReadonlyArray<string | number>) => Op<{ readonly deleted: number }>
  // knowledge sources (issue 41): web ones only, a file does not travel in a tool call's JSON
  readonly listKnowledgeSources: (id: KnowledgeTableId) => Op<ReadonlyArray<KnowledgeSource>>
  readonly addKnowledgeSource: (id: KnowledgeTableId, input: CreateWebSource) => Op<KnowledgeSource>
  readonly syncKnowledgeSource: (id: KnowledgeTableId, source: KnowledgeSourceId) => Op<KnowledgeSource>
  // evals (docs/evals.md)
  readonly startEvalRun: (pipelineId: PipelineId, input: StartEvalRun) => Op<EvalRun>
  readonly getEvalRun: (id: EvalRunId) => Op<EvalRun>
  // versions (docs/versions.md)
  readonly publishPipeline: (pipelineId: PipelineId) => Op<PipelineVersion>
  readonly rollbackPipeline: (pipelineId: PipelineId, input: Rollback) => Op<PipelineVersion>
  readonly listPipelineVersions: (pipelineId: PipelineId) => Op<PipelineVersions>
  readonly diffPipelineVersions: (pipelineId: PipelineId, query: DiffQuery) => Op<VersionDiff>
}

export class McpBackend extends Context.Tag("@parley/mcp/McpBackend")<McpBackend, McpBackendShape>() {}
