import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Pipeline versions, continued (docs/versions.md): an action run renders the configuration that was live
 * when it was triggered (`action_runs.config_version_id`: 0 the tables, else a version; null, runs from
 * before, what is live when it is prepared). `on_any_message` fires the live version's actions. An action
 * the draft deleted no longer fires (its runs could not reference it), though the live version still has it.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table action_runs add column config_version_id bigint;

    -- which configuration runs for a pipeline, as a value to store: 0 the tables, else a version's id
    create function parley_config_of(p_pipeline bigint, p_override bigint default null) returns bigint language sql stable as $$
      select coalesce(case when p_override is not null then nullif(p_override, 0)
        else (select p.live_version_id from pipelines p join workspaces w on w.id = p.workspace_id
              where p.id = p_pipeline and w.is_drafts_enabled) end, 0)
    $$;

    create or replace function messages_fire_actions() returns trigger language plpgsql as $$
    declare
      v_config bigint;
    begin
      if new.pipeline_id is null then return null; end if;
      v_config := parley_config_of(new.pipeline_id, (select o.config_version_id from opportunities o where o.id = new.opportunity_id));
      insert into action_runs (workspace_id, pipeline_id, action_id, opportunity_id, conversation_id, stage_id, message_id,
                               trigger, group_key, source_key, sort_order, config_version_id)
      select a.workspace_id, a.pipeline_id, a.id, new.opportunity_id, new.conversation_id, new.stage_id, new.id,
             'on_any_message', 'message:' || new.id, 'message:' || new.id || ':' || a.id, a.sort_order, v_config
      from parley_live_actions(new.pipeline_id, v_config) a
      where a.is_active and a.fixed_trigger = 'on_any_message'
        and (a.stage_id is null or a.stage_id = new.stage_id)
        and exists (select 1 from actions t where t.id = a.id)
      on conflict (source_key) do nothing;
      return null;
    end $$;
  `))
