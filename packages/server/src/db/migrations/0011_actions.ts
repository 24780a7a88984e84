import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Variables and actions (SPEC.md 4.5 create_variable, create_action) and every run of an action.
 *
 * A run is written in the transaction of what triggers it (a stage entry consumed, a message stored,
 * an AI reply committed), `pending` and not yet `dispatched_at`; runs of one trigger share a `group_key`
 * and run one after the other in action order, as one durable workflow. `source_key` makes each trigger
 * fire an action at most once. `on_any_message` runs are written by a trigger on `messages`, so no
 * message path (contact, AI, operator) is missed.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create table variables (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      pipeline_id bigint not null references pipelines (id) on delete cascade,
      name text not null,
      value text not null,
      type text not null check (type in ('fixed', 'from_system', 'from_action', 'from_ai')),
      data_type text not null default 'string' check (data_type in ('string', 'integer', 'boolean', 'float')),
      is_required boolean not null default false,
      description text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      constraint variables_pipeline_name_key unique (pipeline_id, name)
    );

    create table actions (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      pipeline_id bigint not null references pipelines (id) on delete cascade,
      stage_id bigint references stages (id) on delete cascade,
      name text not null,
      description text,
      method text not null check (method in ('GET', 'POST', 'PUT', 'PATCH', 'DELETE')),
      url text not null,
      headers jsonb not null default '{}',
      payload jsonb,
      instructions text,
      is_active boolean not null,
      fixed_trigger text not null check (fixed_trigger in ('stage_started', 'on_any_message', 'on_user_message', 'custom')),
      max_fires integer check (max_fires >= 1),
      retries integer not null default 3 check (retries between 1 and 10),
      sort_order integer not null default 1 check (sort_order >= 1),
      response_example jsonb,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      constraint actions_pipeline_name_key unique (pipeline_id, name)
    );
    create index actions_trigger_idx on actions (pipeline_id, fixed_trigger) where is_active;

    create table action_runs (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      pipeline_id bigint not null references pipelines (id) on delete cascade,
      action_id bigint not null references actions (id) on delete cascade,
      opportunity_id bigint references opportunities (id) on delete set null,
      conversation_id bigint references conversations (id) on delete set null,
      stage_id bigint references stages (id) on delete set null,
      message_id text,
      trigger text not null,
      group_key text not null,
      source_key text not null unique,
      sort_order integer not null,
      -- values the model gave for from_ai variables when it called the action as a tool
      ai_values jsonb not null default '{}',
      status text not null default 'pending' check (status in ('pending', 'sending', 'succeeded', 'failed', 'skipped')),
      reason text,
      request_method text,
      request_url text,
      request_headers jsonb,
      request_body text,
      response_status integer,
      response_body text,
      attempts integer not null default 0,
      max_attempts integer,
      dispatched_at timestamptz,
      finished_at timestamptz,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create index action_runs_undispatched_idx on action_runs (id) where dispatched_at is null;
    create index action_runs_group_idx on action_runs (group_key, sort_order, id);
    create index action_runs_pipeline_idx on action_runs (pipeline_id, created_at desc, id desc);
    create index action_runs_fires_idx on action_runs (action_id, opportunity_id);

    create table action_attempts (
      id bigint generated always as identity primary key,
      run_id bigint not null references action_runs (id) on delete cascade,
      attempt integer not null,
      status_code integer,
      duration_ms integer not null,
      error text,
      response_excerpt text,
      -- when the next attempt is due (cleared by it): a sweep resumes runs whose wake-up was lost
      retry_at timestamptz,
      created_at timestamptz not null default now(),
      unique (run_id, attempt)
    );
    create index action_attempts_retry_idx on action_attempts (retry_at) where retry_at is not null;

    create function action_runs_notify() returns trigger language plpgsql as $$
    begin
      perform pg_notify('parley_action_runs', '');
      return null;
    end $$;
    create trigger action_runs_notify after insert on action_runs
      for each statement execute function action_runs_notify();

    -- on_any_message: every stored message (contact, AI, operator) fires the active actions of its
    -- pipeline (pipeline-level, or of the message's stage), in the message's own transaction
    create function messages_fire_actions() returns trigger language plpgsql as $$
    begin
      if new.pipeline_id is null then return null; end if;
      insert into action_runs (workspace_id, pipeline_id, action_id, opportunity_id, conversation_id, stage_id, message_id,
                               trigger, group_key, source_key, sort_order)
      select a.workspace_id, a.pipeline_id, a.id, new.opportunity_id, new.conversation_id, new.stage_id, new.id,
             'on_any_message', 'message:' || new.id, 'message:' || new.id || ':' || a.id, a.sort_order
      from actions a
      where a.pipeline_id = new.pipeline_id and a.is_active and a.fixed_trigger = 'on_any_message'
        and (a.stage_id is null or a.stage_id = new.stage_id)
      on conflict (source_key) do nothing;
      return null;
    end $$;
    create trigger messages_fire_actions after insert on messages
      for each row execute function messages_fire_actions();
  `))
