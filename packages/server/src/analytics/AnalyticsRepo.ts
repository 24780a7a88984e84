import { SqlClient } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import type { MessagingProvider, PipelineId, WorkspaceId } from "@parley/domain"
import { Effect } from "effect"

/** What is counted: these workspaces, with or without test opportunities and conversations. */
export interface AnalyticsScope {
  readonly workspaceIds: ReadonlyArray<WorkspaceId>
  readonly includeTest: boolean
}

export interface MessageFilter extends AnalyticsScope {
  readonly pipelineId?: PipelineId | undefined
  readonly provider?: MessagingProvider | undefined
  readonly start?: Date | undefined
  /** `created_at <= end`, or `created_at < end` when exclusive (a bare end date means the day after it, exclusive) */
  readonly end?: { readonly at: Date; readonly exclusive: boolean } | undefined
}

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

    const inWorkspaces = (column: string, ids: ReadonlyArray<WorkspaceId>) => sql`${sql.literal(column)} in ${sql.in(ids)}`

    /**
     * Messages counted for a scope (`m`, joined with its conversation `cv`): a message is test data when its
     * conversation is a test conversation or it belongs to a test opportunity.
     */
    const messagesFrom = (scope: AnalyticsScope) =>
      scope.includeTest
        ? sql`messages m where ${inWorkspaces("m.workspace_id", scope.workspaceIds)}`
        : sql`messages m
              join conversations cv on cv.id = m.conversation_id
              left join opportunities mo on mo.id = m.opportunity_id
              where ${inWorkspaces("m.workspace_id", scope.workspaceIds)} and not cv.is_test and not coalesce(mo.is_test, false)`

    const messageClauses = (f: MessageFilter) => {
      const clauses: Array<Statement.Fragment> = []
      if (f.pipelineId !== undefined) clauses.push(sql`m.pipeline_id = ${f.pipelineId}`)
      if (f.provider !== undefined) {
        clauses.push(sql`m.channel_id in (select ch.id from channels ch
                                          where ch.kind = ${f.provider} and ${inWorkspaces("ch.workspace_id", f.workspaceIds)})`)
      }
      if (f.start !== undefined) clauses.push(sql`m.created_at >= ${f.start}`)
      if (f.end !== undefined) clauses.push(f.end.exclusive ? sql`m.created_at < ${f.end.at}` : sql`m.created_at <= ${f.end.at}`)
      return clauses.length === 0 ? sql`` : sql`and ${sql.and(clauses)}`
    }

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
          where ${inWorkspaces("cv.workspace_id", scope.workspaceIds)} ${scope.includeTest ? sql`` : sql`and not cv.is_test`}`.pipe(
          Effect.map(count),
          Effect.orDie
        ),

      opportunitiesByStatus: (scope: AnalyticsScope) =>
        sql<{ status: string; n: number }>`
          select o.status, count(*) as n from opportunities o
          where ${inWorkspaces("o.workspace_id", scope.workspaceIds)} ${scope.includeTest ? sql`` : sql`and not o.is_test`}
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
          where ${inWorkspaces("cv.workspace_id", scope.workspaceIds)} ${scope.includeTest ? sql`` : sql`and not cv.is_test`}`.pipe(
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
          order by 1 nulls first`.pipe(Effect.orDie)
    }
  })
}) {}
