import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import {
  AccountSummary,
  AiPerformance,
  AnalyticsQuery,
  HandoffStats,
  HandoffStatsQuery,
  MessagingStats,
  MessagingStatsQuery,
  Timeseries,
  TimeseriesQuery
} from "../Analytics.js"
import { Ok } from "../Envelope.js"
import { PipelineNotFoundResponse, UnprocessableResponse, WorkspaceNotFoundResponse } from "../Errors.js"
import { Authorized } from "./Auth.js"

const scopeNote =
  "Counts every workspace the token reaches, or only `workspace_id` (404 `Workspace not found.` for one it does not reach). Test opportunities and test conversations (`is_test`) and their messages are left out unless `include_test=true`. Scope `opportunities:read`."

/** REST twins of the MCP analytics tools (SPEC.md 4.5). */
export class AnalyticsApi extends HttpApiGroup.make("analytics")
  .add(
    HttpApiEndpoint.get("summary", "/api/user/analytics/summary")
      .setUrlParams(AnalyticsQuery)
      .addSuccess(Ok(AccountSummary))
      .addError(WorkspaceNotFoundResponse)
      .middleware(Authorized["opportunities:read"])
      .annotate(OpenApi.Summary, "Pipelines, opportunities, conversations and messages counted (get_account_summary)")
      .annotate(OpenApi.Description, scopeNote)
  )
  .add(
    HttpApiEndpoint.get("aiPerformance", "/api/user/analytics/ai-performance")
      .setUrlParams(AnalyticsQuery)
      .addSuccess(Ok(AiPerformance))
      .addError(WorkspaceNotFoundResponse)
      .middleware(Authorized["opportunities:read"])
      .annotate(OpenApi.Summary, "AI messages, average response time and total cost (get_ai_performance)")
      .annotate(OpenApi.Description, scopeNote)
  )
  .add(
    HttpApiEndpoint.get("messagingStats", "/api/user/analytics/messaging-stats")
      .setUrlParams(MessagingStatsQuery)
      .addSuccess(Ok(MessagingStats))
      .addError(PipelineNotFoundResponse)
      .addError(WorkspaceNotFoundResponse)
      .middleware(Authorized["opportunities:read"])
      .annotate(
        OpenApi.Summary,
        "Message totals and a per-day series, filtered by date, pipeline and provider (get_messaging_stats)"
      )
      .annotate(
        OpenApi.Description,
        `\`start_date\` and \`end_date\` (ISO 8601) bound messages' \`created_at\`, both inclusive; a bare end date includes that whole UTC day. \`provider\` is the kind of the message's channel. A \`pipeline_id\` outside the counted workspaces is 404 \`Pipeline not found.\`. ${scopeNote}`
      )
  )
  .add(
    HttpApiEndpoint.get("handoffs", "/api/user/analytics/handoffs")
      .setUrlParams(HandoffStatsQuery)
      .addSuccess(Ok(HandoffStats))
      .addError(PipelineNotFoundResponse)
      .addError(WorkspaceNotFoundResponse)
      .middleware(Authorized["opportunities:read"])
      .annotate(OpenApi.Summary, "Handoffs requested, median time to take and the share handed back, by pipeline")
      .annotate(
        OpenApi.Description,
        `Over the \`request\` events made between \`start_date\` and \`end_date\` (ISO 8601, both inclusive; a bare end date includes that whole UTC day); what followed a request counts even when it came later. A conversation belongs to its newest opportunity's pipeline, else its channel's. A \`pipeline_id\` outside the counted workspaces is 404 \`Pipeline not found.\`. ${scopeNote}`
      )
  )
  .add(
    HttpApiEndpoint.get("timeseries", "/api/user/analytics/timeseries")
      .setUrlParams(TimeseriesQuery)
      .addSuccess(Ok(Timeseries))
      .addError(PipelineNotFoundResponse)
      .addError(WorkspaceNotFoundResponse)
      .addError(UnprocessableResponse)
      .middleware(Authorized["opportunities:read"])
      .annotate(
        OpenApi.Summary,
        "Per-day messages by sender, AI cost and response time, handoffs, won and lost opportunities"
      )
      .annotate(
        OpenApi.Description,
        `One entry per UTC day from \`start_date\` to \`end_date\` (default: the 30 days to today), at most 366 days (else 422 on \`end_date\`), days without data as zeros. The parameters and the handoff figures are the handoffs endpoint's; the response time is ai-performance's. ${scopeNote}`
      )
  )
  .annotate(OpenApi.Title, "Analytics")
{}
