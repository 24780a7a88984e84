import type { SqlClient } from "@effect/sql"
import type * as Statement from "@effect/sql/Statement"
import { type MessagingProvider, PipelineId, WorkspaceId } from "@parley/domain"
import { Schema } from "effect"

/** What is counted: these workspaces, with or without test opportunities and conversations. */
export interface AnalyticsScope {
  readonly workspaceIds: ReadonlyArray<WorkspaceId>
  readonly includeTest: boolean
}

/**
 * `created_at >= start`, and `created_at <= end` or `< end` when exclusive (a bare end date means the day after it,
 * exclusive).
 */
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

/** What the fragments read of a filter; ids unbranded, as `SqlSchema` hands a request to `execute` encoded. */
interface FragmentFilter extends Period {
  readonly workspaceIds: ReadonlyArray<number>
  readonly includeTest: boolean
  readonly pipelineId?: number | undefined
  readonly provider?: MessagingProvider | undefined
}

/**
 * The fragments every analytics query is built from, so each rule (scope, test data, a handoff's course) is written
 * once.
 */
export const analyticsSql = (sql: SqlClient.SqlClient) => {
  const inWorkspaces = (column: string, ids: ReadonlyArray<number>) => sql`${sql.literal(column)} in ${sql.in(ids)}`

  /**
   * Messages counted for a scope (`m`, joined with its conversation `cv`): a message is test data when its
   * conversation is a test conversation or it belongs to a test opportunity.
   */
  const messagesFrom = (scope: FragmentFilter) =>
    scope.includeTest
      ? sql`messages m join conversations cv on cv.id = m.conversation_id
            where ${inWorkspaces("m.workspace_id", scope.workspaceIds)} and not cv.is_eval`
      : sql`messages m
            join conversations cv on cv.id = m.conversation_id
            left join opportunities mo on mo.id = m.opportunity_id
            where ${
        inWorkspaces("m.workspace_id", scope.workspaceIds)
      } and not cv.is_test and not coalesce(mo.is_test, false)`

  const periodClauses = (column: string, p: Period) => {
    const clauses: Array<Statement.Fragment> = []
    if (p.start !== undefined) clauses.push(sql`${sql.literal(column)} >= ${p.start}`)
    if (p.end !== undefined) {
      clauses.push(
        p.end.exclusive ? sql`${sql.literal(column)} < ${p.end.at}` : sql`${sql.literal(column)} <= ${p.end.at}`
      )
    }
    return clauses
  }

  /** `and ...` after `messagesFrom`: pipeline, provider and period. */
  const messageClauses = (f: FragmentFilter) => {
    const clauses: Array<Statement.Fragment> = []
    if (f.pipelineId !== undefined) clauses.push(sql`m.pipeline_id = ${f.pipelineId}`)
    if (f.provider !== undefined) {
      clauses.push(sql`m.channel_id in (select ch.id from channels ch
                                        where ch.kind = ${f.provider} and ${
        inWorkspaces("ch.workspace_id", f.workspaceIds)
      })`)
    }
    clauses.push(...periodClauses("m.created_at", f))
    return clauses.length === 0 ? sql`` : sql`and ${sql.and(clauses)}`
  }

  /**
   * Each `request` event (`r`) with the conversation's pipeline `p` (its newest opportunity's, else its channel's),
   * the event that ended its wait or takeover (`x`: the first later one that gave the agent the conversation back)
   * and its first `take` or `assign` before that end (`t`). Events are ordered by id, the order they were made in.
   */
  const handoffRequestsFrom = (f: FragmentFilter) => {
    const where = [
      sql`r.action = 'request'`,
      inWorkspaces("r.workspace_id", f.workspaceIds),
      ...periodClauses("r.created_at", f),
      ...(f.includeTest ? [sql`not cv.is_eval`] : [sql`not cv.is_test`, sql`not coalesce(o.is_test, false)`]),
      ...(f.pipelineId === undefined ? [] : [sql`coalesce(o.pipeline_id, ch.pipeline_id) = ${f.pipelineId}`])
    ]
    return sql`handoff_events r
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
      where ${sql.and(where)}`
  }

  /** The median time from each taken request (`r`) to its take (`t`), in seconds to two decimals. */
  const medianTakeSeconds =
    sql`round((percentile_cont(0.5) within group (order by extract(epoch from t.created_at - r.created_at)))::numeric, 2)`

  return { inWorkspaces, messagesFrom, periodClauses, messageClauses, handoffRequestsFrom, medianTakeSeconds }
}
