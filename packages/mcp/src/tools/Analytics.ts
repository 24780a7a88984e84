/** SPEC.md 4.5 Analytics: account totals, AI performance and messaging statistics. */
import {
  AccountSummary,
  AiPerformance,
  endNotBeforeStart,
  MessagingStats,
  MessagingStatsQuery,
  PipelineId
} from "@parley/domain"
import { Effect, Schema, Struct } from "effect"
import { McpBackend } from "../Backend.js"
import { resultOf } from "../Output.js"
import { type Tool, tool } from "../Tool.js"
import { optional } from "../ToolFields.js"

const none = Schema.Struct({})

export const analyticsTools: ReadonlyArray<Tool> = [
  tool({
    name: "get_account_summary",
    title: "Account summary",
    group: "analytics",
    scope: "opportunities:read",
    description: "Account totals: pipelines, opportunities by status, conversations, messages by role.",
    input: none,
    output: resultOf(AccountSummary),
    run: () => Effect.flatMap(McpBackend, (b) => b.accountSummary()).pipe(Effect.map((s) => ({ ...s })))
  }),
  tool({
    name: "get_ai_performance",
    title: "AI performance",
    group: "analytics",
    scope: "opportunities:read",
    description: "AI-written and operator messages, average AI response time (seconds) and total cost.",
    input: none,
    output: resultOf(AiPerformance),
    run: () => Effect.flatMap(McpBackend, (b) => b.aiPerformance()).pipe(Effect.map((p) => ({ ...p })))
  }),
  tool({
    name: "get_messaging_stats",
    title: "Messaging statistics",
    group: "analytics",
    scope: "opportunities:read",
    description: "Messages and cost per day over a period, optionally for one pipeline or channel kind.",
    input: Schema.Struct({
      ...Struct.pick(MessagingStatsQuery.from.fields, "start_date", "end_date"),
      pipeline_id: optional(PipelineId, "Only this pipeline's messages"),
      provider: optional(MessagingStatsQuery.from.fields.provider.from, "Only messages on channels of this kind")
    }).pipe(Schema.filter((q) => endNotBeforeStart(q))),
    output: resultOf(MessagingStats),
    run: (input) =>
      Effect.flatMap(McpBackend, (b) => b.messagingStats({ ...input, include_test: false })).pipe(
        Effect.map((s) => ({ ...s }))
      )
  })
]
