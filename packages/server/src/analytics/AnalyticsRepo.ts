import { SqlClient, SqlSchema } from "@effect/sql"
import { MessagingProvider, PipelineId, WorkspaceId } from "@parley/domain"
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

export const MessagingRow = Schema.Struct({
  /** `YYYY-MM-DD`; null on the grand-total row */
  day: Schema.NullOr(Schema.String),
  messages: Schema.Number,
  user_messages: Schema.Number,
  assistant_messages: Schema.Number,
  ai_messages: Schema.Number,
  manual_messages: Schema.Number,
  cost: Schema.Number
})
export type MessagingRow = typeof MessagingRow.Type

/** `AnalyticsScope` as a request. */
const Scope = Schema.Struct({ workspaceIds: Schema.Array(WorkspaceId), includeTest: Schema.Boolean })

/** `MessageFilter` as a request: a handoff filter's fields and the channel's provider. */
const MessageRequest = Schema.Struct({ ...HandoffFilter.fields, provider: Schema.optional(MessagingProvider) })

const Count = Schema.Struct({ n: Schema.Number })

/** Aggregates over tenant data; every query filters on the scope's workspaces. */
export class AnalyticsRepo extends Effect.Service<AnalyticsRepo>()("@parley/server/AnalyticsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const { inWorkspaces, messagesFrom, messageClauses, handoffRequestsFrom, medianTakeSeconds } = analyticsSql(sql)

    /**
     * Handoff figures by pipeline (`p`) and in total: see `handoffRequestsFrom` for what each request is joined with.
     */
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

    const pipelines = SqlSchema.single({
      Request: Scope,
      Result: Count,
      execute: (scope) =>
        sql`select count(*) as n from pipelines where ${inWorkspaces("workspace_id", scope.workspaceIds)}`
    })

    const conversations = SqlSchema.single({
      Request: Scope,
      Result: Count,
      execute: (scope) =>
        sql`
          select count(*) as n from conversations cv
          where ${inWorkspaces("cv.workspace_id", scope.workspaceIds)} ${
          scope.includeTest ? sql`and not cv.is_eval` : sql`and not cv.is_test`
        }`
    })

    const opportunitiesByStatus = SqlSchema.findAll({
      Request: Scope,
      Result: Schema.Struct({ status: Schema.String, n: Schema.Number }),
      execute: (scope) =>
        sql`
          select o.status, count(*) as n from opportunities o
          where ${inWorkspaces("o.workspace_id", scope.workspaceIds)} ${
          scope.includeTest ? sql`and not o.is_eval` : sql`and not o.is_test`
        }
          group by o.status`
    })

    const messagesByRole = SqlSchema.findAll({
      Request: Scope,
      Result: Schema.Struct({ role: Schema.String, n: Schema.Number }),
      execute: (scope) => sql`select m.role, count(*) as n from ${messagesFrom(scope)} group by m.role`
    })

    const messageTotals = SqlSchema.single({
      Request: Scope,
      Result: Schema.Struct({ ai_messages: Schema.Number, manual_messages: Schema.Number, total_cost: Schema.Number }),
      execute: (scope) =>
        sql`
          select count(*) filter (where m.role = 'assistant' and not m.is_manual) as ai_messages,
                 count(*) filter (where m.role = 'assistant' and m.is_manual) as manual_messages,
                 coalesce(sum(m.cost_for_user), 0) as total_cost
          from ${messagesFrom(scope)}`
    })

    const responseTimes = SqlSchema.single({
      Request: Scope,
      Result: Schema.Struct({ seconds: Schema.NullOr(Schema.Number), responses: Schema.Number }),
      execute: (scope) =>
        sql`
          select sum(cv.ai_response_seconds_total) as seconds, coalesce(sum(cv.ai_responses_count), 0) as responses
          from conversations cv
          where ${inWorkspaces("cv.workspace_id", scope.workspaceIds)} ${
          scope.includeTest ? sql`and not cv.is_eval` : sql`and not cv.is_test`
        }`
    })

    const messaging = SqlSchema.findAll({
      Request: MessageRequest,
      Result: MessagingRow,
      execute: (f) =>
        sql`
          select to_char((m.created_at at time zone 'UTC')::date, 'YYYY-MM-DD') as day,
                 count(*) as messages,
                 count(*) filter (where m.role = 'user') as user_messages,
                 count(*) filter (where m.role = 'assistant') as assistant_messages,
                 count(*) filter (where m.role = 'assistant' and not m.is_manual) as ai_messages,
                 count(*) filter (where m.role = 'assistant' and m.is_manual) as manual_messages,
                 coalesce(sum(m.cost_for_user), 0) as cost
          from ${messagesFrom(f)} ${messageClauses(f)}
          group by grouping sets ((m.created_at at time zone 'UTC')::date, ())
          order by 1 nulls first`
    })

    return {
      pipelineIn: (workspaceIds: ReadonlyArray<WorkspaceId>, id: PipelineId) =>
        sql`select 1 from pipelines where id = ${id} and ${inWorkspaces("workspace_id", workspaceIds)}`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),

      pipelines: (scope: AnalyticsScope) => pipelines(scope).pipe(Effect.map((row) => row.n), Effect.orDie),

      conversations: (scope: AnalyticsScope) => conversations(scope).pipe(Effect.map((row) => row.n), Effect.orDie),

      opportunitiesByStatus: (scope: AnalyticsScope) => opportunitiesByStatus(scope).pipe(Effect.orDie),

      messagesByRole: (scope: AnalyticsScope) => messagesByRole(scope).pipe(Effect.orDie),

      /** AI and operator replies and the cost of every message counted. */
      messageTotals: (scope: AnalyticsScope) => messageTotals(scope).pipe(Effect.orDie),

      /** The conversations' response-time counters (kept by the messages trigger), summed. */
      responseTimes: (scope: AnalyticsScope) =>
        responseTimes(scope).pipe(
          Effect.map((row) => ({ seconds: row.seconds ?? 0, responses: row.responses })),
          Effect.orDie
        ),

      /** One row per UTC day with messages, and a grand-total row (`day` null). */
      messaging: (f: MessageFilter) => messaging(f).pipe(Effect.orDie),

      /** Handoff figures per pipeline with a request in the period, and their grand total (`grand`) first. */
      handoffs: (f: HandoffFilter) => handoffs(f).pipe(Effect.orDie)
    }
  })
}) {}
