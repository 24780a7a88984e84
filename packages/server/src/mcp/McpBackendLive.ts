import { HttpServerRequest } from "@effect/platform"
import { CurrentActor, PublicBaseUrl, RequestUrl } from "@parley/domain"
import { McpBackend } from "@parley/mcp"
import { Effect } from "effect"
import { Automation } from "../actions/Automation.js"
import { Analytics } from "../analytics/Analytics.js"
import { Catalogue } from "../catalogue/Catalogue.js"
import { AppConfig, publicBaseUrl } from "../config/AppConfig.js"
import { Conversations } from "../conversations/Conversations.js"
import { EvalRuns } from "../evals/EvalRuns.js"
import { Followups } from "../followups/Followups.js"
import { Knowledge } from "../knowledge/Knowledge.js"
import { Sources } from "../knowledge/Sources.js"
import { Messages } from "../messages/Messages.js"
import { Opportunities } from "../opportunities/Opportunities.js"
import { Pipelines } from "../pipelines/Pipelines.js"
import { Versions } from "../pipelines/Versions.js"

/**
 * The MCP tools' port over the same services the REST handlers call (one line each, like a handler).
 * Built per request: the paginated lists take their links from the request, signed file links its public base URL.
 */
export const makeMcpBackend = Effect.gen(function*() {
  const analytics = yield* Analytics
  const automation = yield* Automation
  const catalogue = yield* Catalogue
  const conversations = yield* Conversations
  const evals = yield* EvalRuns
  const followups = yield* Followups
  const knowledge = yield* Knowledge
  const sources = yield* Sources
  const messages = yield* Messages
  const opportunities = yield* Opportunities
  const pipelines = yield* Pipelines
  const versions = yield* Versions
  const request = yield* HttpServerRequest.HttpServerRequest
  const base = publicBaseUrl(yield* AppConfig, request.headers)
  const withRequest = Effect.provideService(RequestUrl, new URL(request.url, base))
  const withBaseUrl = Effect.provideService(PublicBaseUrl, base)
  const everyWorkspace = { include_test: false }

  return McpBackend.of({
    accountSummary: () => analytics.summary(everyWorkspace),
    aiPerformance: () => analytics.aiPerformance(everyWorkspace),
    messagingStats: (query) => analytics.messagingStats(query),

    pipelineOptions: (query) => Effect.flatMap(CurrentActor, (actor) => catalogue.options(actor, query)),
    listPipelines: () => pipelines.list(),
    getPipeline: (id) => pipelines.get(id),
    createPipeline: (input) => pipelines.create(input),
    updatePipeline: (id, input) => pipelines.update(id, input),
    listStages: (id) => pipelines.listStages(id),
    createStage: (id, input) => pipelines.createStage(id, input),
    updateStage: (id, input) => pipelines.updateStage(id, input),
    modelPool: (id) => pipelines.modelPool(id),
    updateModelPool: (id, input) => pipelines.updateModelPool(id, input),

    stageFollowup: (stageId) => followups.get(stageId),
    saveFollowup: (stageId, input) => followups.save(stageId, input),

    listVariables: (pipelineId, q) => automation.listVariables(pipelineId, q),
    createVariable: (pipelineId, input) => automation.createVariable(pipelineId, input),
    updateVariable: (id, input) => automation.updateVariable(id, input),
    listActions: (pipelineId, stageId) => automation.listActions(pipelineId, stageId),
    createAction: (pipelineId, input) => automation.createAction(pipelineId, input),
    updateAction: (id, input) => automation.updateAction(id, input),
    actionResults: (pipelineId, query) => automation.results(pipelineId, query),

    listContacts: (query) => withRequest(opportunities.listContacts(query)),
    listOpportunities: (query) => withRequest(opportunities.list(query)),
    updateOpportunity: (id, input) => opportunities.update(String(id), undefined, input),
    listMessages: (filter) => messages.list(filter),

    listConversations: (query) => conversations.list(query),
    getConversation: (id) => conversations.get(id),
    conversationMessages: (id, query) => withBaseUrl(conversations.messages(id, query)),
    handoffConversation: (id, command) => conversations.move(id, command),

    listKnowledgeTables: () => knowledge.list(),
    createKnowledgeTable: (input) => knowledge.create(input),
    knowledgePoints: (id, perPage, cursor) => knowledge.points(id, perPage, cursor),
    searchKnowledge: (id, input) => knowledge.search(id, input),
    upsertPoints: (id, points) => knowledge.upsert(id, points),
    deletePoints: (id, ids) => knowledge.remove(id, ids),
    listKnowledgeSources: (id) => sources.list(id),
    addKnowledgeSource: (id, input) => sources.create(id, input),
    syncKnowledgeSource: (id, source) => sources.sync(id, source),

    startEvalRun: (pipelineId, input) => evals.start(pipelineId, input),
    getEvalRun: (id) => evals.get(id),

    publishPipeline: (pipelineId) => versions.publish(pipelineId),
    rollbackPipeline: (pipelineId, input) => versions.rollback(pipelineId, input),
    listPipelineVersions: (pipelineId) => versions.list(pipelineId),
    diffPipelineVersions: (pipelineId, query) => versions.diff(pipelineId, query)
  })
})
