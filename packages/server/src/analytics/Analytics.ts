import {
  AccountSummary,
  type Actor,
  AiPerformance,
  type AnalyticsQuery,
  CurrentActor,
  HandoffStats,
  type HandoffStatsQuery,
  HandoffTotals,
  MAX_SERIES_DAYS,
  MessageRoleCounts,
  MessagingDay,
  MessagingStats,
  type MessagingStatsQuery,
  MessagingTotals,
  OpportunityStatusCounts,
  parseIsoDate,
  PipelineHandoffs,
  PipelineNotFound,
  Timeseries,
  TimeseriesDay,
  type TimeseriesQuery,
  Unprocessable,
  WorkspaceNotFound
} from "@parley/domain"
import { Clock, Effect } from "effect"
import { AnalyticsRepo, type HandoffRow, type MessagingRow } from "./AnalyticsRepo.js"
import type { AnalyticsScope, Period } from "./AnalyticsSql.js"
import { TimeseriesRepo } from "./TimeseriesRepo.js"

const DAY_MS = 86_400_000

/** Money is numeric(20, 8) in the database; a sum is kept to that precision. */
const money = (n: number) => Math.round(n * 1e8) / 1e8

const byKey = <K extends string>(
  rows: ReadonlyArray<{ readonly n: number }>,
  key: (row: any) => string,
  keys: ReadonlyArray<K>
) => {
  const out = Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>
  for (const row of rows) if ((keys as ReadonlyArray<string>).includes(key(row))) out[key(row) as K] = Number(row.n)
  return out
}

const countsOf = (row: MessagingRow | undefined) => ({
  messages: Number(row?.messages ?? 0),
  user_messages: Number(row?.user_messages ?? 0),
  assistant_messages: Number(row?.assistant_messages ?? 0),
  ai_messages: Number(row?.ai_messages ?? 0),
  manual_messages: Number(row?.manual_messages ?? 0),
  cost: money(Number(row?.cost ?? 0))
})

/** A query's dates as bounds: a bare end date includes that whole UTC day. */
const periodOf = (
  query: { readonly start_date?: string | undefined; readonly end_date?: string | undefined }
): Period => {
  const start = query.start_date === undefined ? undefined : parseIsoDate(query.start_date)
  const end = query.end_date === undefined ? undefined : parseIsoDate(query.end_date)
  return {
    start: start?.date,
    end: end === undefined
      ? undefined
      : end.dateOnly
      ? { at: new Date(end.date.getTime() + DAY_MS), exclusive: true }
      : { at: end.date, exclusive: false }
  }
}

/** A row's figures (zeros without one); the share is of the requests that ended: handed back rather than resolved. */
const handoffFigures = (row: HandoffRow | undefined) => {
  const requested = row?.requested ?? 0
  const handedBack = row?.handed_back ?? 0
  const resolved = row?.resolved ?? 0
  return {
    requested,
    taken: row?.taken ?? 0,
    median_take_seconds: row?.median_take_seconds ?? null,
    handed_back: handedBack,
    resolved,
    open: requested - handedBack - resolved,
    handed_back_share: handedBack + resolved === 0
      ? null
      : Math.round((handedBack / (handedBack + resolved)) * 10_000) / 10_000
  }
}

/** Every day from the first to the last with messages; days without any are zeros. */
const denseSeries = (days: ReadonlyArray<MessagingRow>) => {
  if (days.length === 0) return []
  const byDay = new Map(days.map((d) => [d.day!, d]))
  const first = Date.parse(`${days[0]!.day}T00:00:00Z`)
  const last = Date.parse(`${days[days.length - 1]!.day}T00:00:00Z`)
  const series: Array<MessagingDay> = []
  for (let t = first; t <= last; t += DAY_MS) {
    const date = new Date(t).toISOString().slice(0, 10)
    series.push(new MessagingDay({ date, ...countsOf(byDay.get(date)) }))
  }
  return series
}

const dayOf = (t: number) => new Date(t).toISOString().slice(0, 10)

/**
 * A series' period and its first and last UTC days: the query's bounds, else the 30 days to today (`now`).
 * Fails with 422 on `end_date` past MAX_SERIES_DAYS days or before the first day.
 */
const seriesPeriod = (query: TimeseriesQuery, now: number) => {
  const given = periodOf(query)
  const today = Date.parse(`${dayOf(now)}T00:00:00Z`)
  const end = given.end ?? { at: new Date(today + DAY_MS), exclusive: true }
  const lastDay = Date.parse(`${dayOf(end.exclusive ? end.at.getTime() - 1 : end.at.getTime())}T00:00:00Z`)
  const start = given.start ?? new Date(lastDay - 29 * DAY_MS)
  const firstDay = Date.parse(`${dayOf(start.getTime())}T00:00:00Z`)
  const days = (lastDay - firstDay) / DAY_MS + 1
  if (days < 1) {
    return Effect.fail(
      Unprocessable.of([{ field: "end_date", message: "must be a date after or equal to start_date" }])
    )
  }
  if (days > MAX_SERIES_DAYS) {
    return Effect.fail(
      Unprocessable.of([{ field: "end_date", message: `must be at most ${MAX_SERIES_DAYS} days from start_date` }])
    )
  }
  return Effect.succeed({ start, end, firstDay: dayOf(firstDay), lastDay: dayOf(lastDay) })
}

/** Account analytics over the caller's workspaces (SPEC.md 4.5 analytics tools). */
export class Analytics extends Effect.Service<Analytics>()("@parley/server/Analytics", {
  dependencies: [AnalyticsRepo.Default, TimeseriesRepo.Default],
  effect: Effect.gen(function*() {
    const repo = yield* AnalyticsRepo
    const timeseriesRepo = yield* TimeseriesRepo

    const scopeOf = (actor: Actor, query: AnalyticsQuery): Effect.Effect<AnalyticsScope, WorkspaceNotFound> => {
      const workspaceId = query.workspace_id
      if (workspaceId === undefined) {
        return Effect.succeed({ workspaceIds: actor.workspaceIds, includeTest: query.include_test })
      }
      return actor.workspaceIds.includes(workspaceId)
        ? Effect.succeed({ workspaceIds: [workspaceId], includeTest: query.include_test })
        : Effect.fail(new WorkspaceNotFound())
    }

    const summary = Effect.fn("Analytics.summary")(function*(query: AnalyticsQuery) {
      const scope = yield* scopeOf(yield* CurrentActor, query)
      const [pipelines, conversations, statuses, roles] = yield* Effect.all([
        repo.pipelines(scope),
        repo.conversations(scope),
        repo.opportunitiesByStatus(scope),
        repo.messagesByRole(scope)
      ])
      const opportunities = byKey(statuses, (r) => r.status, ["pending", "active", "paused", "won", "lost"] as const)
      const messages = byKey(roles, (r) => r.role, ["user", "assistant"] as const)
      return new AccountSummary({
        pipelines,
        opportunities: Object.values(opportunities).reduce((a, b) => a + b, 0),
        conversations,
        messages: messages.user + messages.assistant,
        opportunities_by_status: new OpportunityStatusCounts(opportunities),
        messages_by_role: new MessageRoleCounts(messages)
      })
    })

    const aiPerformance = Effect.fn("Analytics.aiPerformance")(function*(query: AnalyticsQuery) {
      const scope = yield* scopeOf(yield* CurrentActor, query)
      const [totals, times] = yield* Effect.all([repo.messageTotals(scope), repo.responseTimes(scope)])
      return new AiPerformance({
        ai_messages: Number(totals.ai_messages),
        manual_messages: Number(totals.manual_messages),
        responses: times.responses,
        average_response_seconds: times.responses === 0
          ? null
          : Math.round((times.seconds / times.responses) * 100) / 100,
        total_cost: money(Number(totals.total_cost))
      })
    })

    const messagingStats = Effect.fn("Analytics.messagingStats")(function*(query: MessagingStatsQuery) {
      const scope = yield* scopeOf(yield* CurrentActor, query)
      if (query.pipeline_id !== undefined && !(yield* repo.pipelineIn(scope.workspaceIds, query.pipeline_id))) {
        return yield* new PipelineNotFound()
      }
      const rows = yield* repo.messaging({
        ...scope,
        ...periodOf(query),
        pipelineId: query.pipeline_id,
        provider: query.provider
      })
      return new MessagingStats({
        totals: new MessagingTotals(countsOf(rows.find((r) => r.day === null))),
        series: denseSeries(rows.filter((r) => r.day !== null))
      })
    })

    const handoffs = Effect.fn("Analytics.handoffs")(function*(query: HandoffStatsQuery) {
      const scope = yield* scopeOf(yield* CurrentActor, query)
      if (query.pipeline_id !== undefined && !(yield* repo.pipelineIn(scope.workspaceIds, query.pipeline_id))) {
        return yield* new PipelineNotFound()
      }
      const rows = yield* repo.handoffs({ ...scope, ...periodOf(query), pipelineId: query.pipeline_id })
      return new HandoffStats({
        totals: new HandoffTotals(handoffFigures(rows.find((r) => r.grand))),
        pipelines: rows.filter((r) => !r.grand).map((r) =>
          new PipelineHandoffs({ pipeline_id: r.pipeline_id, pipeline_name: r.pipeline_name, ...handoffFigures(r) })
        )
      })
    })

    const timeseries = Effect.fn("Analytics.timeseries")(function*(query: TimeseriesQuery) {
      const scope = yield* scopeOf(yield* CurrentActor, query)
      if (query.pipeline_id !== undefined && !(yield* repo.pipelineIn(scope.workspaceIds, query.pipeline_id))) {
        return yield* new PipelineNotFound()
      }
      const period = yield* seriesPeriod(query, yield* Clock.currentTimeMillis)
      const rows = yield* timeseriesRepo.series({ ...scope, ...period, pipelineId: query.pipeline_id })
      return new Timeseries({
        start_date: period.firstDay,
        end_date: period.lastDay,
        series: rows.map((row) => new TimeseriesDay({ ...row, ai_cost: money(row.ai_cost) }))
      })
    })

    return { summary, aiPerformance, messagingStats, handoffs, timeseries }
  })
}) {}
