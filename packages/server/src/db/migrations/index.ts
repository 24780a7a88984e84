import type { Effect } from "effect"
import identity from "./0001_identity.js"
import catalogue from "./0002_catalogue.js"
import pipelinesChannels from "./0003_pipelines_channels.js"
import opportunities from "./0004_opportunities.js"
import webChat from "./0005_web_chat.js"
import deliveries from "./0006_deliveries.js"
import conversationEngine from "./0007_conversation_engine.js"
import agent from "./0008_agent.js"
import knowledge from "./0009_knowledge.js"
import reembedding from "./0010_reembedding.js"
import actions from "./0011_actions.js"
import followups from "./0012_followups.js"
import oauth from "./0013_oauth.js"
import aiResponseTimes from "./0014_ai_response_times.js"
import knowledgeGraph from "./0015_knowledge_graph.js"
import stageEntryInbound from "./0016_stage_entry_inbound.js"
import handoff from "./0017_handoff.js"
import eventWebhooks from "./0018_event_webhooks.js"
import consoleTokens from "./0019_console_tokens.js"
import actionRunsNotifyPerRow from "./0020_action_runs_notify_per_row.js"
import evals from "./0021_evals.js"
import knowledgeGraphLoad from "./0022_knowledge_graph_load.js"
import pipelineVersions from "./0023_pipeline_versions.js"
import versionedActionRuns from "./0024_versioned_action_runs.js"
import cheaperLiveReads from "./0025_cheaper_live_reads.js"
import evalSandboxRetention from "./0026_eval_sandbox_retention.js"
import rateLimits from "./0027_rate_limits.js"
import replyFallback from "./0028_reply_fallback.js"
import knowledgePointUses from "./0029_knowledge_point_uses.js"
import followupSilence from "./0030_followup_silence.js"
import channelAdapters from "./0031_channel_adapters.js"
import messageTemplates from "./0032_message_templates.js"
import messageParts from "./0033_message_parts.js"
import moreChannelKinds from "./0034_more_channel_kinds.js"
import channelEchoes from "./0035_channel_echoes.js"
import mailboxSync from "./0036_mailbox_sync.js"
import channelServiceWindow from "./0037_channel_service_window.js"
import managedModels from "./0038_managed_models.js"
import tableEmbeddingModels from "./0039_table_embedding_models.js"
import knowledgeSources from "./0040_knowledge_sources.js"
import sourceSchedule from "./0041_source_schedule.js"
import messageCitations from "./0042_message_citations.js"
import chunkSettings from "./0043_chunk_settings.js"
import sourceRuns from "./0044_source_runs.js"

/** Keys are `<id>_<name>`, as `Migrator.fromRecord` expects. Never edit a landed migration: add one. */
export const migrations: Record<string, Effect.Effect<unknown, unknown, any>> = {
  "0001_identity": identity,
  "0002_catalogue": catalogue,
  "0003_pipelines_channels": pipelinesChannels,
  "0004_opportunities": opportunities,
  "0005_web_chat": webChat,
  "0006_deliveries": deliveries,
  "0007_conversation_engine": conversationEngine,
  "0008_agent": agent,
  "0009_knowledge": knowledge,
  "0010_reembedding": reembedding,
  "0011_actions": actions,
  "0012_followups": followups,
  "0013_oauth": oauth,
  "0014_ai_response_times": aiResponseTimes,
  "0015_knowledge_graph": knowledgeGraph,
  "0016_stage_entry_inbound": stageEntryInbound,
  "0017_handoff": handoff,
  "0018_event_webhooks": eventWebhooks,
  "0019_console_tokens": consoleTokens,
  "0020_action_runs_notify_per_row": actionRunsNotifyPerRow,
  "0021_evals": evals,
  "0022_knowledge_graph_load": knowledgeGraphLoad,
  "0023_pipeline_versions": pipelineVersions,
  "0024_versioned_action_runs": versionedActionRuns,
  "0025_cheaper_live_reads": cheaperLiveReads,
  "0026_eval_sandbox_retention": evalSandboxRetention,
  "0027_rate_limits": rateLimits,
  "0028_reply_fallback": replyFallback,
  "0029_knowledge_point_uses": knowledgePointUses,
  "0030_followup_silence": followupSilence,
  "0031_channel_adapters": channelAdapters,
  "0032_message_templates": messageTemplates,
  "0033_message_parts": messageParts,
  "0034_more_channel_kinds": moreChannelKinds,
  "0035_channel_echoes": channelEchoes,
  "0036_mailbox_sync": mailboxSync,
  "0037_channel_service_window": channelServiceWindow,
  "0038_managed_models": managedModels,
  "0039_table_embedding_models": tableEmbeddingModels,
  "0040_knowledge_sources": knowledgeSources,
  "0041_source_schedule": sourceSchedule,
  "0042_message_citations": messageCitations,
  "0043_chunk_settings": chunkSettings,
  "0044_source_runs": sourceRuns
}
