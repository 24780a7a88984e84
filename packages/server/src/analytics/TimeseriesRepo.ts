import { SqlClient, SqlSchema } from "@effect/sql"
import { TimeseriesStageCount } from "@parley/domain"
import { Effect, Schema } from "effect"
import { analyticsSql, HandoffFilter } from "./AnalyticsSql.js"

/** A time series' filter: the handoffs' (scope, pipeline, period) and the UTC days it has entries for. */
export const TimeseriesFilter = Schema.Struct({
  ...HandoffFilter.fields,
  firstDay: Schema.String,
  lastDay: Schema.String
})
export type TimeseriesFilter = typeof TimeseriesFilter.Type

export class TimeseriesRow extends Schema.Class<TimeseriesRow>("TimeseriesRow")({
  date: Schema.String,
  contact_messages: Schema.Number,
  ai_messages: Schema.Number,
  operator_messages: Schema.Number,
  ai_cost: Schema.Number,
  median_ai_response_seconds: Schema.NullOr(Schema.Number),
  handoffs_requested: Schema.Number,
  median_take_seconds: Schema.NullOr(Schema.Number),
  won: Schema.Number,
  lost: Schema.Number,
  // a json column: parsed by one driver, text from another
  closed_by_stage: Schema.Union(
    Schema.Array(TimeseriesStageCount),
    Schema.parseJson(Schema.Array(TimeseriesStageCount))
  )
}) {}

const utcDay = (column: string) => `(${column} at time zone 'UTC')::date`

/**
 * Per-day figures, one row for every UTC day from `firstDay` to `lastDay`; every query filters on the scope's
 * workspaces.
 */
export class TimeseriesRepo extends Effect.Service<TimeseriesRepo>()("@parley/server/TimeseriesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { handoffRequestsFrom, inWorkspaces, medianTakeSeconds, messageClauses, messagesFrom, periodClauses } =
      analyticsSql(sql)

    const series = SqlSchema.findAll({
      Request: TimeseriesFilter,
      Result: TimeseriesRow,
      execute: (f) => {
        const entries = [
          inWorkspaces("e.workspace_id", f.workspaceIds),
          sql`s.nature in ('won', 'lost')`,
          ...periodClauses("e.created_at", f),
          ...(f.includeTest ? [sql`not o.is_eval`] : [sql`not o.is_test`]),
          ...(f.pipelineId === undefined ? [] : [sql`e.pipeline_id = ${f.pipelineId}`])
        ]
        return sql`
          with days as (
            select d::date as day from generate_series(${f.firstDay}::date, ${f.lastDay}::date, interval '1 day') d
          ),
          sent as (
            select ${sql.literal(utcDay("m.created_at"))} as day,
                   count(*) filter (where m.role = 'user') as contact,
                   count(*) filter (where m.role = 'assistant' and not m.is_manual) as ai,
                   count(*) filter (where m.role = 'assistant' and m.is_manual) as operator,
                   sum(m.cost_for_user) filter (where m.role = 'assistant' and not m.is_manual) as cost
            from ${messagesFrom(f)} ${messageClauses(f)}
            group by 1
          ),
          -- an AI reply answers the message right before it when that is the contact's (migration 0014's trigger)
          replies as (
            select ${sql.literal(utcDay("a.created_at"))} as day,
                   round((percentile_cont(0.5) within group (order by extract(epoch from a.created_at - q.created_at)))::numeric, 2) as median
            from (
              select m.id, m.conversation_id, m.created_at from ${messagesFrom(f)} ${messageClauses(f)}
                and m.role = 'assistant' and not m.is_manual
            ) a
            join lateral (
              select b.role, b.created_at from messages b
              where b.conversation_id = a.conversation_id and (b.created_at, b.id) < (a.created_at, a.id)
              order by b.created_at desc, b.id desc limit 1
            ) q on q.role = 'user'
            group by 1
          ),
          handoffs as (
            select ${sql.literal(utcDay("r.created_at"))} as day, count(*) as requested, ${medianTakeSeconds} as median
            from ${handoffRequestsFrom(f)}
            group by 1
          ),
          entered as (
            select ${
          sql.literal(utcDay("e.created_at"))
        } as day, e.opportunity_id, s.id as stage_id, s.name as stage_name, s.nature
            from stage_entries e
            join stages s on s.id = e.stage_id
            join opportunities o on o.id = e.opportunity_id
            where ${sql.and(entries)}
          ),
          closed as (
            select day,
                   count(distinct opportunity_id) filter (where nature = 'won') as won,
                   count(distinct opportunity_id) filter (where nature = 'lost') as lost
            from entered
            group by 1
          ),
          by_stage as (
            select day,
                   json_agg(json_build_object('stage_id', stage_id, 'stage_name', stage_name, 'nature', nature, 'count', count)
                            order by stage_id) as stages
            from (
              select day, stage_id, stage_name, nature, count(distinct opportunity_id)::int as count
              from entered
              group by 1, 2, 3, 4
            ) per_stage
            group by 1
          )
          select to_char(days.day, 'YYYY-MM-DD') as date,
                 coalesce(sent.contact, 0)::int as contact_messages,
                 coalesce(sent.ai, 0)::int as ai_messages,
                 coalesce(sent.operator, 0)::int as operator_messages,
                 round(coalesce(sent.cost, 0), 8)::float8 as ai_cost,
                 replies.median::float8 as median_ai_response_seconds,
                 coalesce(handoffs.requested, 0)::int as handoffs_requested,
                 handoffs.median::float8 as median_take_seconds,
                 coalesce(closed.won, 0)::int as won,
                 coalesce(closed.lost, 0)::int as lost,
                 coalesce(by_stage.stages, '[]'::json) as closed_by_stage
          from days
          left join sent using (day)
          left join replies using (day)
          left join handoffs using (day)
          left join closed using (day)
          left join by_stage using (day)
          order by days.day`
      }
    })

    return { series: (f: TimeseriesFilter) => series(f).pipe(Effect.orDie) }
  })
}) {}
