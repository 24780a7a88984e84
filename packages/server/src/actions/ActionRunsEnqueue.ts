/**
 * Where action runs are written: by their triggers, in the triggering transaction (a stage entry consumed,
 * a reply stored). What happens to a run afterwards is ActionRunsRepo's and ActionRunsLive's.
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"

type Sql = SqlClient.SqlClient

/**
 * Stage-start automations (SPEC.md 3.1): one run per active `stage_started` action of the entered stage
 * and of the pipeline as it runs (docs/versions.md), written in the transaction that consumes the stage entry.
 */
export const enqueueStageStarted = (sql: Sql, entryId: number) =>
  sql`
    insert into action_runs (workspace_id, pipeline_id, action_id, opportunity_id, conversation_id, stage_id, trigger, group_key,
                             source_key, sort_order, config_version_id)
    select a.workspace_id, a.pipeline_id, a.id, e.opportunity_id,
           (select co.conversation_id from conversation_opportunity co where co.opportunity_id = e.opportunity_id
            order by co.created_at desc limit 1),
           e.stage_id, 'stage_started', 'stage-entry:' || e.id, 'stage-entry:' || e.id || ':' || a.id, a.sort_order, cv.config
    from stage_entries e
    join opportunities o on o.id = e.opportunity_id
    -- offset 0 keeps it a subquery, so the configuration is resolved once (pulled up, each use called it again)
    cross join lateral (select parley_config_of(e.pipeline_id, o.config_version_id) as config offset 0) cv
    join lateral parley_live_actions(e.pipeline_id, cv.config) a on a.is_active and a.fixed_trigger = 'stage_started'
      and (a.stage_id is null or a.stage_id = e.stage_id)
    where e.id = ${entryId} and exists (select 1 from actions t where t.id = a.id)
    on conflict (source_key) do nothing`

/**
 * Actions the model called as tools in a reply (`on_user_message`, `custom`): written with the reply,
 * once per action and contact message answered.
 */
export const enqueueToolCalls = (
  sql: Sql,
  target: {
    readonly workspaceId: number
    readonly pipelineId: number | null
    readonly conversationId: number
    readonly opportunityId: number | null
    readonly stageId: number | null
    readonly messageId: string
    /** the configuration the run renders (0 the tables, else a version): the reply's turn's */
    readonly version: number
  },
  calls: ReadonlyArray<{ readonly actionId: number; readonly values: Readonly<Record<string, string>> }>
) =>
  Effect.forEach(calls, (call) =>
    sql`
      insert into action_runs (workspace_id, pipeline_id, action_id, opportunity_id, conversation_id, stage_id, message_id, trigger,
                               group_key, source_key, sort_order, ai_values, config_version_id)
      select a.workspace_id, a.pipeline_id, a.id, ${target.opportunityId}, ${target.conversationId}, ${target.stageId}, ${target.messageId},
             a.fixed_trigger, ${`reply:${target.messageId}`}, ${`reply:${target.messageId}:`} || a.id, a.sort_order, ${
      JSON.stringify(call.values)
    }::jsonb,
             ${target.version}
      from parley_live_actions(${target.pipelineId}, ${target.version}) a
      where a.id = ${call.actionId} and a.workspace_id = ${target.workspaceId}
        and a.is_active and a.fixed_trigger in ('on_user_message', 'custom') and exists (select 1 from actions t where t.id = a.id)
      on conflict (source_key) do nothing`, { discard: true })
