import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Cheaper reads of what runs (docs/versions.md), for the reply path:
 * - the `parley_live_*` functions as two arms, the table's rows or the version's, each guarded by which
 *   configuration runs as a one-time filter (no lateral join per call), and `parley_live_pipeline` so a
 *   pipeline that runs its tables (drafts off, the common case) is a plain row rather than copied through
 *   `jsonb_populate_record` on every turn;
 * - `parley_config_of` in PL/pgSQL: a SQL function with a subquery is not inlined and plans its body on
 *   every call, where PL/pgSQL keeps the plan for the session;
 * - the `on_any_message` trigger (every message insert) resolves the configuration in one cached query, and
 *   while the tables run inserts from `actions` as before 0024 (the inlined function cost 0.6 ms a message).
 */
/** Which configuration runs (0023's rule) as an expression: null the tables, else a version's id. */
const version = `(case when p_override is not null then nullif(p_override, 0)
  else (select p.live_version_id from pipelines p join workspaces w on w.id = p.workspace_id
        where p.id = p_pipeline and w.is_drafts_enabled) end)`

const state =
  "array['id', 'workspace_id', 'status', 'is_archived', 'live_version_id', 'is_publish_gated', 'created_at', 'updated_at']"

/** A table's rows as they run: one arm reads the table, the other the version; each arm's test is a one-time filter. */
const liveRows = (name: string, table: string, key: string) => `
    create or replace function parley_live_${name}(p_pipeline bigint, p_override bigint default null)
    returns setof ${table} language sql stable as $$
      select t.* from ${table} t where t.pipeline_id = p_pipeline and ${version} is null
      union all
      select x.* from pipeline_versions v cross join lateral jsonb_populate_recordset(null::${table}, v.config -> '${key}') x
      where v.id = ${version} and v.pipeline_id = p_pipeline
    $$;`

const liveFunctions = `
    create or replace function parley_live_pipeline(p_pipeline bigint, p_override bigint default null)
    returns setof pipelines language sql stable as $$
      select p.* from pipelines p where p.id = p_pipeline and ${version} is null
      union all
      select x.* from pipelines p
      join pipeline_versions v on v.id = ${version} and v.pipeline_id = p.id
      cross join lateral jsonb_populate_record(p, (v.config -> 'pipeline') - ${state}) x
      where p.id = p_pipeline
    $$;
    ${liveRows("stages", "stages", "stages")}
    ${liveRows("variables", "variables", "variables")}
    ${liveRows("actions", "actions", "actions")}
    ${liveRows("followups", "followups", "followups")}
    ${liveRows("knowledge_tables", "pipeline_knowledge_tables", "knowledge_tables")}`

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
${liveFunctions}

    create or replace function parley_config_of(p_pipeline bigint, p_override bigint default null) returns bigint
    language plpgsql stable as $$
    begin
      if p_override is not null then return p_override; end if;
      return coalesce((select p.live_version_id from pipelines p join workspaces w on w.id = p.workspace_id
                       where p.id = p_pipeline and w.is_drafts_enabled), 0);
    end $$;

    create or replace function messages_fire_actions() returns trigger language plpgsql as $$
    declare
      v_config bigint;
    begin
      if new.pipeline_id is null then return null; end if;
      select coalesce(case when o.config_version_id is not null then o.config_version_id when w.is_drafts_enabled then p.live_version_id end, 0)
        into v_config
      from pipelines p join workspaces w on w.id = p.workspace_id left join opportunities o on o.id = new.opportunity_id
      where p.id = new.pipeline_id;
      if v_config = 0 then
        -- the tables run (drafts off, the common case): the plain statement, cheap to plan
        insert into action_runs (workspace_id, pipeline_id, action_id, opportunity_id, conversation_id, stage_id, message_id,
                                 trigger, group_key, source_key, sort_order, config_version_id)
        select a.workspace_id, a.pipeline_id, a.id, new.opportunity_id, new.conversation_id, new.stage_id, new.id,
               'on_any_message', 'message:' || new.id, 'message:' || new.id || ':' || a.id, a.sort_order, 0
        from actions a
        where a.pipeline_id = new.pipeline_id and a.is_active and a.fixed_trigger = 'on_any_message'
          and (a.stage_id is null or a.stage_id = new.stage_id)
        on conflict (source_key) do nothing;
      else
        insert into action_runs (workspace_id, pipeline_id, action_id, opportunity_id, conversation_id, stage_id, message_id,
                                 trigger, group_key, source_key, sort_order, config_version_id)
        select a.workspace_id, a.pipeline_id, a.id, new.opportunity_id, new.conversation_id, new.stage_id, new.id,
               'on_any_message', 'message:' || new.id, 'message:' || new.id || ':' || a.id, a.sort_order, v_config
        from parley_live_actions(new.pipeline_id, v_config) a
        where a.is_active and a.fixed_trigger = 'on_any_message'
          and (a.stage_id is null or a.stage_id = new.stage_id)
          and exists (select 1 from actions t where t.id = a.id)
        on conflict (source_key) do nothing;
      end if;
      return null;
    end $$;
  `))
