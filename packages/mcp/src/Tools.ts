/**
 * The MCP tool catalogue: SPEC.md 4.5's 33 tools in its order (3 analytics, 14 discover, 8 build, 8 update),
 * then the conversation tools of issue 19 and `get_pipeline`. Each input schema is composed from the domain's
 * field schemas (the ones the REST payloads use), so REST and MCP validate alike; tool-only parameters (ids
 * that REST carries in the path, paging) are added by the tool.
 */
import type { Tool } from "./Tool.js"
import { analyticsTools } from "./tools/Analytics.js"
import { automationTools } from "./tools/Automation.js"
import { conversationTools } from "./tools/Conversations.js"
import { evalTools } from "./tools/Evals.js"
import { followupTools } from "./tools/Followups.js"
import { knowledgeTools } from "./tools/Knowledge.js"
import { knowledgeSourceTools } from "./tools/KnowledgeSources.js"
import { opportunityTools } from "./tools/Opportunities.js"
import { pipelineBuildTools } from "./tools/PipelineBuild.js"
import { pipelineReadTools } from "./tools/Pipelines.js"
import { versionTools } from "./tools/Versions.js"

export const ToolNames = [
  "get_account_summary",
  "get_ai_performance",
  "get_messaging_stats",
  "list_pipelines",
  "list_pipeline_stages",
  "list_actions",
  "list_action_results",
  "list_variables",
  "list_contacts",
  "list_opportunities",
  "list_messages",
  "list_knowledge_tables",
  "search_knowledge_table",
  "list_knowledge_points",
  "get_stage_followup",
  "list_model_pool",
  "get_pipeline_options",
  "start_pipeline_journey",
  "create_pipeline",
  "create_stage",
  "create_variable",
  "create_action",
  "create_followup",
  "create_knowledge_table",
  "upsert_knowledge_points",
  "update_pipeline",
  "update_model_pool",
  "update_stage",
  "update_action",
  "update_variable",
  "update_opportunities",
  "update_followup",
  "delete_knowledge_points",
  // beyond SPEC.md 4.5: conversations (issue 19), one pipeline whole (issue 23)
  "list_conversations",
  "get_conversation",
  "handoff_conversation",
  "get_pipeline",
  // evals (issue 24)
  "run_evals",
  "get_eval_run",
  // versions (issue 24)
  "publish_pipeline",
  "list_pipeline_versions",
  "diff_pipeline_versions",
  // knowledge sources (issue 41)
  "add_knowledge_source",
  "list_knowledge_sources",
  "sync_knowledge_source"
] as const

const all = [
  ...analyticsTools,
  ...pipelineReadTools,
  ...pipelineBuildTools,
  ...automationTools,
  ...followupTools,
  ...knowledgeTools,
  ...knowledgeSourceTools,
  ...opportunityTools,
  ...conversationTools,
  ...evalTools,
  ...versionTools
]

export const toolByName: ReadonlyMap<string, Tool> = new Map(all.map((t) => [t.name, t]))

export const Tools: ReadonlyArray<Tool> = ToolNames.map((name) => {
  const found = toolByName.get(name)
  if (found === undefined) throw new Error(`the catalogue lists ${name}, which no tool file defines`)
  return found
})

if (Tools.length !== all.length) throw new Error("a tool file defines a tool the catalogue does not list")
