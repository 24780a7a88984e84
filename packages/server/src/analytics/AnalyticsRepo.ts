import { SqlClient, SqlSchema } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import { type MessagingProvider, PipelineId, WorkspaceId } from "@parley/domain"
import { Effect, Schema } from "effect"

/** What is counted: these workspaces, with or without test opportunities and conversations. */
export interface AnalyticsScope {
  readonly workspaceIds: ReadonlyArray<WorkspaceId>
  readonly includeTest: boolean
}

/** `created_at >= start`, and `created_at <= end` or `< end` when exclusive (a bare end date means the day after it, exclusive). */
export interface Period {
  readonly start?: Date | undefined
  readonly end?: { readonly at: Date; readonly exclusive: boolean } | undefined
}

export interface MessageFilter extends AnalyticsScope, Period {
  readonly pipelineId?: PipelineId | undefined
  readonly provider?: MessagingProvider | undefined
}

/** Which `request` events count: these workspaces, one pipeline, a period. */
export const HandoffFilter = Schema.Struct({
  workspaceIds: Schema.Array(WorkspaceId),
  includeTest: Schema.Boolean,
  pipelineId: Schema.optional(PipelineId),
  start: Schema.optional(Schema.DateFromSelf),
  end: Schema.optional(Schema.Struct({ at: Schema.DateFromSelf, exclusive: Schema.Boolean }))
})
export type HandoffFilter = typeof HandoffFilter.Type

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

    const inWorkspaces = (column: string, ids: ReadonlyArray<number>) => sql`${sql.literal(column)} in ${sql.in(ids)}`

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

    const periodClauses = (column: string, p: Period) => {
      const clauses: Array<Statement.Fragment> = []
      if (p.start !== undefined) clauses.push(sql`${sql.literal(column)} >= ${p.start}`)
      if (p.end !== undefined) {
        clauses.push(p.end.exclusive ? sql`${sql.literal(column)} < ${p.end.at}` : sql`${sql.literal(column)} <= ${p.end.at}`)
      }
      return clauses
    }

    const messageClauses = (f: MessageFilter) => {
      const clauses: Array<Statement.Fragment> = []
      if (f.pipelineId !== undefined) clauses.push(sql`m.pipeline_id = ${f.pipelineId}`)
      if (f.provider !== undefined) {
        clauses.push(sql`m.channel_id in (select ch.id from channels ch
                                          where ch.kind = ${f.provider} and ${inWorkspaces("ch.workspace_id", f.workspaceIds)})`)
      }
      clauses.push(...periodClauses("m.created_at", f))
      return clauses.length === 0 ? sql`` : sql`and ${sql.and(clauses)}`
    }

    /**
     * Each `request` event (`r`) with the conversation's pipeline (its newest opportunity's, else its channel's),
     * the event that ended its wait or takeover (`x`: the first later one that gave the agent the conversation back)
     * and its first `take` or `assign` before that end (`t`). Events are ordered by id, the order they were made in.
     */
    const handoffs = SqlSchema.findAll({
      Request: HandoffFilter,
      Result: HandoffRow,
      execute: (f) => {
        const where = [
          sql`r.action = 'request'`,
          inWorkspaces("r.workspace_id", f.workspaceIds),
          ...periodClauses("r.created_at", f),
          ...(f.includeTest ? [] : [sql`not cv.is_test`, sql`not coalesce(o.is_test, false)`]),
          ...(f.pipelineId === undefined ? [] : [sql`coalesce(o.pipeline_id, ch.pipeline_id) = ${f.pipelineId}`])
        ]
        return sql`
          select grouping(p.id) = 1 as grand, p.id as pipeline_id, p.name as pipeline_name,
                 count(*)::int as requested,
                 count(t.id)::int as taken,
                 round((percentile_cont(0.5) within group (order by extract(epoch from t.created_at - r.created_at)))::numeric, 2)
                   as median_take_seconds,
                 count(*) filter (where x.action in ('return', 'timeout'))::int as handed_back,
                 count(*) filter (where x.action = 'resolve')::int as resolved
          from handoff_events r
          join conversations cv on cv.id = r.conversation_id
          left join channels ch on ch.id = cv.channel_id
          left join lateral (
            select op.pipeline_id, op.is_test from conversation_opportunity co join opportunities op on op.id = co.opportunity_id
            where co.conversation_id = cv.id order by op.created_at desc, op.id desc limit 1
          ) o on true
          left join pipelines p on p.id = coalesce(o.pipeline_id, ch.pipeline_id)
          left join lateral (
            select e.id, e.action from handoff_events e
            where e.conversation_id = r.conversation_id and e.id > r.id and e.to_state = 'ai' order by e.id limit 1
          ) x on true
          left join lateral (
            select e.id, e.created_at from handoff_events e
            where e.conversation_id = r.conversation_id and e.id > r.id and e.action in ('take', 'assign')
              and (x.id is null or e.id < x.id)
            order by e.id limit 1
          ) t on true
          where ${sql.and(where)}
          group by grouping sets ((p.id, p.name), ())
          order by grand desc, p.id nulls last`
      }
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
          order by 1 nulls first`.pipe(Effect.orDie),

      /** Handoff figures per pipeline with a request in the period, and their grand total (`grand`) first. */
      handoffs: (f: HandoffFilter) => handoffs(f).pipe(Effect.orDie)
    }
  })
}) {}
