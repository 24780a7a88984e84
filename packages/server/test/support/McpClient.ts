/** The MCP SDK's client against the test server, as MCP clients connect. */
import { expect } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import {
  AccountSummary,
  Action,
  ActionResult,
  AgentType,
  AiModel,
  AiPerformance,
  AiProvider,
  ConnectedChannel,
  Contact,
  ConversationDetail,
  ConversationMessage,
  ConversationsPage,
  Dialect,
  EvalRun,
  Followup,
  KnowledgeSource,
  KnowledgeTableId,
  KnowledgeTableWithColumns,
  MessagesPage,
  MessagingStats,
  Opportunity,
  OpportunityId,
  Pipeline,
  PipelineId,
  PipelineModelPool,
  PipelineOptions,
  PipelineVersions,
  PipelineVersionSummary,
  PipelineWithStages,
  SearchResults,
  Stage,
  StageFollowup,
  ValidationIssue,
  Variable,
  VersionDiff
} from "@parley/domain"
import { Effect, Schema, Struct } from "effect"
import { TestServer } from "./TestServer.js"

/** A tool result's text parts, joined. */
export const textOf = (result: CallToolResult) =>
  result.content.map((c) => (c.type === "text" ? c.text : "")).join("\n")

/** A tool result's `structuredContent` as the SDK types it: a JSON object. */
export type Structured = { readonly [key: string]: unknown }

/**
 * A tool result's `structuredContent`, checked against `schema` (the fields the test reads): the test fails
 * on content of another shape. The content itself is returned, not the decoded value, so a field the schema
 * does not name is still there for `toEqual` and `toMatchObject` (as support/Contract.ts's `ok`).
 */
export const structuredAs = <A, I>(result: CallToolResult, schema: Schema.Schema<A, I>): A => {
  const decoded = Schema.decodeUnknownEither(schema)(result.structuredContent)
  if (decoded._tag === "Left") expect.fail(`structuredContent outside its schema: ${decoded.left.message}`)
  return result.structuredContent as A
}

/** What a refused call (`isError: true`) carries as `structuredContent` (packages/mcp Tool.ts `toolError`). */
export const ToolError = Schema.Struct({
  error: Schema.String,
  message: Schema.String,
  validation: Schema.optional(Schema.Array(ValidationIssue)),
  scope: Schema.optional(Schema.String)
})

/** A refused call's `structuredContent`, decoded; the test fails if the call was not refused. */
export const toolError = (result: CallToolResult): typeof ToolError.Type => {
  expect(result.isError).toBe(true)
  return structuredAs(result, ToolError)
}

/** A refused call's validation issues (none: the test fails). */
export const validationOf = (result: CallToolResult): ReadonlyArray<ValidationIssue> => {
  const { validation } = toolError(result)
  if (validation === undefined) return expect.fail(`no validation in ${JSON.stringify(result.structuredContent)}`)
  return validation
}

const nextSteps = { next_steps: Schema.Array(Schema.String) }
/** The arguments of the next page, null on the last (packages/mcp Output.ts `paged`). */
const paged = {
  has_more: Schema.Boolean,
  next_page: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
}
const pageFields = { page: Schema.Int, per_page: Schema.Int, last_page: Schema.Int, total: Schema.Int, ...paged }
const pipelineSaved = Schema.Struct({
  pipeline: PipelineWithStages,
  warning: Schema.NullOr(Schema.String),
  ...nextSteps
})
const evalRun = Schema.Struct({ ...EvalRun.fields, ...nextSteps })

/**
 * What each tool answers as `structuredContent` (packages/mcp src/tools/*.ts): the REST records (the domain's
 * schemas) under the keys the tool puts them. packages/mcp publishes its output schemas as JSON Schema only,
 * with nested records left open, so these say what the tests read. `ok` checks a tool's result against its entry.
 */
export const ToolResults = {
  get_account_summary: AccountSummary,
  get_ai_performance: AiPerformance,
  get_messaging_stats: MessagingStats,
  list_pipelines: Schema.Struct({
    // a row: what tells pipelines apart (packages/mcp tools/Pipelines.ts)
    pipelines: Schema.Array(Schema.Struct(Struct.pick(
      Pipeline.fields,
      "id",
      "name",
      "description",
      "status",
      "is_archived",
      "channel_id",
      "ai_model_id",
      "rag_mode",
      "stages_count",
      "updated_at"
    ))),
    ...paged
  }),
  get_pipeline: Schema.Struct({
    pipeline: PipelineWithStages,
    variables: Schema.Array(Variable),
    actions: Schema.Array(Action),
    followups: Schema.Array(Followup),
    knowledge_table_ids: Schema.Array(KnowledgeTableId)
  }),
  list_pipeline_stages: Schema.Struct({ pipeline_id: PipelineId, stages: Schema.Array(Stage), ...paged }),
  list_model_pool: PipelineModelPool,
  get_pipeline_options: PipelineOptions,
  start_pipeline_journey: Schema.Struct({
    step: Schema.Literal("choose_provider", "configure_pipeline"),
    language_code: Schema.String,
    ai_provider_id: Schema.NullOr(Schema.Int),
    plan: Schema.Struct({ stages: Schema.Array(Schema.Struct({ name: Schema.String, nature: Schema.String })) }),
    options: Schema.Struct({
      ai_providers: Schema.Array(AiProvider),
      ai_models: Schema.Array(AiModel),
      agent_types: Schema.Array(AgentType),
      languages: Schema.Array(Schema.Struct({ id: Schema.Int, code: Schema.String, name: Schema.String })),
      dialects: Schema.Array(Dialect),
      channels: Schema.Array(ConnectedChannel)
    }),
    questions: Schema.Array(Schema.String)
  }),
  create_pipeline: pipelineSaved,
  update_pipeline: pipelineSaved,
  create_stage: Schema.Struct({ stage: Stage, ...nextSteps }),
  update_stage: Schema.Struct({ stage: Stage, ...nextSteps }),
  update_model_pool: PipelineModelPool,
  list_actions: Schema.Struct({ pipeline_id: PipelineId, actions: Schema.Array(Action), ...paged }),
  list_action_results: Schema.Struct({
    pipeline_id: PipelineId,
    results: Schema.Array(ActionResult),
    limit: Schema.Int,
    offset: Schema.Int,
    ...paged
  }),
  list_variables: Schema.Struct({ pipeline_id: PipelineId, variables: Schema.Array(Variable), ...paged }),
  create_variable: Schema.Struct({ variable: Variable, ...nextSteps }),
  update_variable: Schema.Struct({ variable: Variable, ...nextSteps }),
  create_action: Schema.Struct({ action: Action, ...nextSteps }),
  update_action: Schema.Struct({ action: Action, ...nextSteps }),
  get_stage_followup: StageFollowup,
  create_followup: StageFollowup,
  update_followup: StageFollowup,
  list_knowledge_tables: Schema.Struct({ knowledge_tables: Schema.Array(KnowledgeTableWithColumns), ...paged }),
  search_knowledge_table: Schema.Struct({ ...SearchResults.fields, knowledge_table_id: KnowledgeTableId }),
  list_knowledge_points: Schema.Struct({
    knowledge_table_id: Schema.String,
    points: Schema.Array(Schema.Struct({
      point_id: Schema.String,
      default_id: Schema.String,
      data: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
      modified_date: Schema.String
    })),
    next_page_offset: Schema.NullOr(Schema.String),
    ...paged
  }),
  create_knowledge_table: Schema.Struct({ knowledge_table: KnowledgeTableWithColumns, ...nextSteps }),
  upsert_knowledge_points: Schema.Struct({ knowledge_table_id: KnowledgeTableId, upserted: Schema.Int }),
  delete_knowledge_points: Schema.Struct({ knowledge_table_id: KnowledgeTableId, deleted: Schema.Int }),
  add_knowledge_source: Schema.Struct({ knowledge_source: KnowledgeSource, ...nextSteps }),
  list_knowledge_sources: Schema.Struct({
    knowledge_table_id: KnowledgeTableId,
    knowledge_sources: Schema.Array(Schema.Struct(Struct.omit(
      KnowledgeSource.fields,
      "knowledge_table_id",
      "url",
      "created_at",
      "updated_at"
    ))),
    ...paged
  }),
  sync_knowledge_source: Schema.Struct({ knowledge_source: KnowledgeSource }),
  list_contacts: Schema.Struct({ contacts: Schema.Array(Contact), ...pageFields }),
  list_opportunities: Schema.Struct({ opportunities: Schema.Array(Opportunity), ...pageFields }),
  list_messages: Schema.Struct({ ...MessagesPage.fields, ...paged }),
  update_opportunities: Schema.Struct({
    updated: Schema.Array(Opportunity),
    failed: Schema.Array(Schema.Struct({
      id: OpportunityId,
      message: Schema.String,
      validation: Schema.optional(Schema.Array(ValidationIssue))
    }))
  }),
  list_conversations: Schema.Struct({ ...ConversationsPage.fields, ...paged }),
  get_conversation: Schema.Struct({
    conversation: ConversationDetail,
    messages: Schema.Array(ConversationMessage),
    has_more_messages: Schema.Boolean,
    messages_cursor: Schema.NullOr(Schema.String),
    next_page: paged.next_page
  }),
  handoff_conversation: Schema.Struct({ conversation: ConversationDetail }),
  run_evals: evalRun,
  get_eval_run: evalRun,
  publish_pipeline: PipelineVersionSummary,
  list_pipeline_versions: PipelineVersions,
  diff_pipeline_versions: VersionDiff
} satisfies Record<string, Schema.Schema.AnyNoContext>

/** A tool `ToolResults` describes. */
export type ToolName = keyof typeof ToolResults
/** What tool `N` answers, as `ToolResults` types it. */
export type ToolResult<N extends ToolName> = (typeof ToolResults)[N]["Type"]

const isToolName = (name: string): name is ToolName => Object.hasOwn(ToolResults, name)

/** The schema a tool's result is checked against: its `ToolResults` entry, or any JSON object. */
const resultSchema = (name: string): Schema.Schema.AnyNoContext =>
  isToolName(name) ? ToolResults[name] : Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** `structuredContent` checked against the tool's `resultSchema`; returned as it is. */
const checked = (name: string, structured: unknown): unknown => {
  const decoded = Schema.decodeUnknownEither(resultSchema(name))(structured)
  if (decoded._tag === "Left") expect.fail(`${name} answered outside its result schema: ${decoded.left.message}`)
  return structured
}

/**
 * A result of tool `name` (its `structuredContent`), checked against `ToolResults[name]` and typed by it: for
 * results read where the tool is not known statically (a planner that picks tools by itself).
 */
export const toolResult = <N extends ToolName>(name: N, structured: unknown): ToolResult<N> =>
  checked(name, structured) as ToolResult<N>

/** A JSON-RPC error answer, as a test reads it (a raw `POST /mcp`). */
export const RpcError = Schema.Struct({
  error: Schema.Struct({ code: Schema.Int, message: Schema.String, data: Schema.optional(Schema.Unknown) })
})

/** A JSON-RPC answer whose `result` has the given shape (a raw `POST /mcp`). */
export const RpcResult = <A, I>(result: Schema.Schema<A, I>) => Schema.Struct({ result })

/** A JSON Schema as tools/list publishes it: the keywords the tests walk, and any other. */
export interface JsonSchema {
  readonly type?: unknown
  readonly description?: unknown
  readonly default?: unknown
  readonly required?: ReadonlyArray<string>
  readonly properties?: { readonly [name: string]: JsonSchema }
  readonly items?: JsonSchema
  readonly anyOf?: ReadonlyArray<JsonSchema>
  readonly [keyword: string]: unknown
}
const jsonSchemaSchema: Schema.Schema<JsonSchema> = Schema.Struct(
  {
    type: Schema.optionalWith(Schema.Unknown, { exact: true }),
    description: Schema.optionalWith(Schema.Unknown, { exact: true }),
    default: Schema.optionalWith(Schema.Unknown, { exact: true }),
    required: Schema.optionalWith(Schema.Array(Schema.String), { exact: true }),
    properties: Schema.optionalWith(
      Schema.Record({ key: Schema.String, value: Schema.suspend((): Schema.Schema<JsonSchema> => jsonSchemaSchema) }),
      { exact: true }
    ),
    items: Schema.optionalWith(Schema.suspend((): Schema.Schema<JsonSchema> => jsonSchemaSchema), { exact: true }),
    anyOf: Schema.optionalWith(
      Schema.Array(Schema.suspend((): Schema.Schema<JsonSchema> => jsonSchemaSchema)),
      { exact: true }
    )
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)

/** A tool's input (or output) schema, decoded: every keyword kept, the ones above typed. */
export const jsonSchema = Schema.decodeUnknownSync(jsonSchemaSchema)

/** The schema of parameter `name` (the test fails if there is none). */
export const propertyOf = (schema: JsonSchema | undefined, name: string): JsonSchema => {
  const property = schema?.properties?.[name]
  if (property === undefined) return expect.fail(`no parameter ${name} in ${JSON.stringify(schema)}`)
  return property
}

/** The SDK client over Streamable HTTP with the token as a bearer header; closed with the scope. */
export const mcpClient = (token: string) =>
  Effect.flatMap(TestServer, ({ baseUrl }) =>
    Effect.acquireRelease(
      Effect.promise(async () => {
        const client = new Client({ name: "parley-test", version: "1.0.0" })
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
            requestInit: { headers: { Authorization: `Bearer ${token}` } }
          })
        )
        return client
      }),
      (client) => Effect.promise(() => client.close())
    ))

export interface McpSession {
  readonly client: Client
  readonly call: (name: string, args?: Record<string, unknown>) => Effect.Effect<CallToolResult>
  /**
   * A successful call's structuredContent, checked to be the call's only text block as compact JSON; with a
   * schema, also checked against it (see `structuredAs`) and typed by it.
   */
  readonly ok: {
    <A, I>(name: string, args: Record<string, unknown>, schema: Schema.Schema<A, I>): Effect.Effect<A>
    <N extends ToolName>(name: N, args?: Record<string, unknown>): Effect.Effect<ToolResult<N>>
    (name: string, args?: Record<string, unknown>): Effect.Effect<Structured>
  }
}

/**
 * A connected client that has listed the tools, so it checks every result's structuredContent against the
 * tool's outputSchema (the SDK client does once it knows the schemas).
 */
export const mcpSession = (token: string) =>
  Effect.gen(function*() {
    const client = yield* mcpClient(token)
    yield* Effect.promise(() => client.listTools())
    const call = (name: string, args: Record<string, unknown> = {}) =>
      Effect.promise(() => client.callTool({ name, arguments: args }) as Promise<CallToolResult>)
    const succeeded = (name: string, args: Record<string, unknown>) =>
      Effect.map(call(name, args), (result) => {
        if (result.isError) expect(textOf(result)).toBe(`a successful ${name}`)
        expect(result.content).toEqual([{ type: "text", text: JSON.stringify(result.structuredContent) }])
        return result
      })
    function ok<A, I>(name: string, args: Record<string, unknown>, schema: Schema.Schema<A, I>): Effect.Effect<A>
    function ok<N extends ToolName>(name: N, args?: Record<string, unknown>): Effect.Effect<ToolResult<N>>
    function ok(name: string, args?: Record<string, unknown>): Effect.Effect<Structured>
    function ok(name: string, args: Record<string, unknown> = {}, schema?: Schema.Schema.AnyNoContext) {
      return Effect.map(
        succeeded(name, args),
        (result): unknown =>
          schema === undefined ? checked(name, result.structuredContent) : structuredAs(result, schema)
      )
    }
    return { client, call, ok } satisfies McpSession
  })
