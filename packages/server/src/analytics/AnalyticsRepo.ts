import { SqlClient, SqlSchema } from "@effect/sql"
import { PipelineId, type WorkspaceId } from "@parley/domain"
import { Effect, Schema } from "effect"
import { type AnalyticsScope, analyticsSql, HandoffFilter, type MessageFilter } from "./AnalyticsSql.js"

/** One pipeline's handoff figures, or the grand total (`grand` true, `pipeline_id` null). */
export class HandoffRow extends Schema.Class<HandoffRow>("HandoffRow")({
  grand: Schema.Boolean,
  pipeline_id: Schema.NullOr(PipelineId),
  pipeline_name: Schema.NullOr(Schema.String),
  requested: Schema.Number,
  taken: Schema.Number,
  median_take_seconds: Schema.NullOr(Schema.Number),
  handed_back: Schema.Number,
  resolved: Schema.Number
}) {}

export interface MessagingRow {
  /** `YYYY-MM-DD`; null on the grand-total row */
  readonly day: string | null
  readonly messages: number
  readonly user_messages: number
  readonly assistant_messages: number
  readonly ai_messages: number
  readonly manual_messages: number
  readonly cost: number
}

/** Aggregates over tenant data; every query filters on the scope's workspaces. */
export class AnalyticsRepo extends Effect.Service<AnalyticsRepo>()("@parley/server/AnalyticsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const { inWorkspaces, messagesFrom, messageClauses, handoffRequestsFrom, medianTakeSeconds } = analyticsSql(sql)

    /** Handoff figures by pipeline (`p`) and in total: see `handoffRequestsFrom` for what each request is joined with. */
    const handoffs = SqlSchema.findAll({
      Request: HandoffFilter,
      Result: HandoffRow,
      execute: (f) =>
        sql`
          select grouping(p.id) = 1 as grand, p.id as pipeline_id, p.name as pipeline_name,
                 count(*)::int as requested,
                 count(t.id)::int as taken,
                 ${medianTakeSeconds} as median_take_seconds,
                 count(*) filter (where x.action in ('return', 'timeout'))::int as handed_back,
                 count(*) filter (where x.action = 'resolve')::int as resolved
          from ${handoffRequestsFrom(f)}
          group by grouping sets ((p.id, p.name), ())
          order by grand desc, p.id nulls last`
    })

    const count = (rows: ReadonlyArray<{ n: number | null }>) => Number(rows[0]?.n ?? 0)

    return {
      pipelineIn: (workspaceIds: ReadonlyArray<WorkspaceId>, id: PipelineId) =>
        sql`select 1 from pipelines where id = ${id} and ${inWorkspaces("workspace_id", workspaceIds)}`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),

      pipelines: (scope: AnalyticsScope) =>
        sql<{ n: number }>`select count(*) as n from pipelines where ${inWorkspaces("workspace_id", scope.workspaceIds)}`.pipe(
          Effect.map(count),
          Effect.orDie
        ),

      conversations: (scope: AnalyticsScope) =>
        sql<{ n: number }>`
          select count(*) as n from conversations cv
          where ${inWorkspaces("cv.workspace_id", scope.workspaceIds)} ${scope.includeTest ? sql`and not cv.is_eval` : sql`and not cv.is_test`}`.pipe(
          Effect.map(count),
          Effect.orDie
        ),

      opportunitiesByStatus: (scope: AnalyticsScope) =>
        sql<{ status: string; n: number }>`
          select o.status, count(*) as n from opportunities o
          where ${inWorkspaces("o.workspace_id", scope.workspaceIds)} ${scope.includeTest ? sql`and not o.is_eval` : sql`and not o.is_test`}
          group by o.status`.pipe(Effect.orDie),

      messagesByRole: (scope: AnalyticsScope) =>
        sql<{ role: string; n: number }>`select m.role, count(*) as n from ${messagesFrom(scope)} group by m.role`.pipe(Effect.orDie),

      /** AI and operator replies and the cost of every message counted. */
      messageTotals: (scope: AnalyticsScope) =>
        sql<{ ai_messages: number; manual_messages: number; total_cost: number }>`
          select count(*) filter (where m.role = 'assistant' and not m.is_manual) as ai_messages,
                 count(*) filter (where m.role = 'assistant' and m.is_manual) as manual_messages,
                 coalesce(sum(m.cost_for_user), 0) as total_cost
          from ${messagesFrom(scope)}`.pipe(Effect.map((rows) => rows[0]!), Effect.orDie),

      /** The conversations' response-time counters (kept by the messages trigger), summed. */
      responseTimes: (scope: AnalyticsScope) =>
        sql<{ seconds: number | null; responses: number }>`
          select sum(cv.ai_response_seconds_total) as seconds, coalesce(sum(cv.ai_responses_count), 0) as responses
          from conversations cv
          where ${inWorkspaces("cv.workspace_id", scope.workspaceIds)} ${scope.includeTest ? sql`and not cv.is_eval` : sql`and not cv.is_test`}`.pipe(
          Effect.map((rows) => ({ seconds: Number(rows[0]?.seconds ?? 0), responses: Number(rows[0]?.responses ?? 0) })),
          Effect.orDie
        ),

      /** One row per UTC day with messages, and a grand-total row (`day` null). */
      messaging: (f: MessageFilter) =>
        sql<MessagingRow>`
          select to_char((m.created_at at time zone 'UTC')::date, 'YYYY-MM-DD') as day,
                 count(*) as messages,
                 count(*) filter (where m.role = 'user') as user_messages,
                 count(*) filter (where m.role = 'assistant') as assistant_messages,
                 count(*) filter (where m.role = 'assistant' and not m.is_manual) as ai_messages,
                 count(*) filter (where m.role = 'assistant' and m.is_manual) as manual_messages,
                 coalesce(sum(m.cost_for_user), 0) as cost
          from ${messagesFrom(f)} ${messageClauses(f)}
          group by grouping sets ((m.created_at at time zone 'UTC')::date, ())
          order by 1 nulls first`.pipe(Effect.orDie),

      /** Handoff figures per pipeline with a request in the period, and their grand total (`grand`) first. */
      handoffs: (f: HandoffFilter) => handoffs(f).pipe(Effect.orDie)
    }
  })
}) {}
