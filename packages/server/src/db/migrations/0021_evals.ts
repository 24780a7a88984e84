import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Evals (docs/evals.md): stored cases of a pipeline, runs, and each case's result. A case runs in a
 * sandboxed contact, opportunity and conversation of the pipeline's workspace, marked `is_eval` (and
 * `is_test`): the reply engine runs on them as on any other, but their replies are recorded instead of
 * delivered, their actions recorded instead of sent (`action_runs.status = 'recorded'`), they raise no
 * event webhooks, and lists, the inbox, the board and analytics leave them out.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table contacts add column is_eval boolean not null default false;
    alter table opportunities add column is_eval boolean not null default false;
    alter table conversations add column is_eval boolean not null default false;

    alter table action_runs drop constraint action_runs_status_check;
    alter table action_runs add constraint action_runs_status_check
      check (status in ('pending', 'sending', 'succeeded', 'failed', 'skipped', 'recorded'));

    create table eval_cases (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      pipeline_id bigint not null references pipelines (id) on delete cascade,
      name text not null,
      definition jsonb not null,
      source text not null default 'api' check (source in ('api', 'conversation')),
      source_conversation_id bigint,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      unique (pipeline_id, name)
    );

    create table eval_runs (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      pipeline_id bigint not null references pipelines (id) on delete cascade,
      version text not null default 'live',
      status text not null default 'running' check (status in ('running', 'passed', 'failed', 'interrupted')),
      concurrency integer not null,
      cases_total integer not null,
      passed integer not null default 0,
      failed integer not null default 0,
      cost numeric(20, 8) not null default 0,
      previous_run_id bigint references eval_runs (id) on delete set null,
      created_by bigint references users (id) on delete set null,
      heartbeat_at timestamptz not null default now(),
      created_at timestamptz not null default now(),
      finished_at timestamptz
    );
    create index eval_runs_pipeline_idx on eval_runs (pipeline_id, id desc);

    create table eval_results (
      id bigint generated always as identity primary key,
      run_id bigint not null references eval_runs (id) on delete cascade,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      position integer not null,
      case_id bigint references eval_cases (id) on delete set null,
      name text not null,
      definition jsonb not null,
      status text not null default 'pending' check (status in ('pending', 'running', 'passed', 'failed', 'error')),
      conversation_id bigint references conversations (id) on delete set null,
      opportunity_id bigint references opportunities (id) on delete set null,
      outcome jsonb,
      verdicts jsonb not null default '[]',
      cost numeric(20, 8) not null default 0,
      error text,
      started_at timestamptz,
      finished_at timestamptz,
      unique (run_id, position)
    );

    -- an eval conversation's messages and handoffs raise no workspace event webhooks
    create or replace function messages_workspace_event() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from conversations c where c.id = new.conversation_id and c.is_eval) then
        return null;
      end if;
      perform workspace_event(new.workspace_id, 'message.created', jsonb_build_object(
        'message_id', new.id,
        'conversation_id', new.conversation_id,
        'role', new.role,
        'sender', case when new.role = 'user' then 'contact' when new.is_manual then 'operator' else 'ai' end,
        'sender_id', case when new.is_manual then new.sender_id end,
        'text', new.message,
        'call_type', new.call_type,
        'created_at', iso_utc(new.created_at)));
      return null;
    end $$;

    create or replace function handoff_workspace_event() returns trigger language plpgsql as $$
    declare
      event_type text := case
        when new.action = 'request' then 'conversation.handoff_requested'
        when new.action in ('take', 'assign') then 'conversation.taken'
        when new.to_state = 'ai' then 'conversation.returned'
      end;
    begin
      if event_type is not null
         and not exists (select 1 from conversations c where c.id = new.conversation_id and c.is_eval) then
        perform workspace_event(new.workspace_id, event_type, jsonb_build_object(
          'conversation_id', new.conversation_id,
          'handoff_event_id', new.id,
          'action', new.action,
          'from_state', new.from_state,
          'to_state', new.to_state,
          'actor', new.actor,
          'user_id', new.user_id,
          'assignee_id', new.assignee_id,
          'reason', new.reason,
          'note', new.note,
          'created_at', iso_utc(new.created_at)));
      end if;
      return null;
    end $$;
  `))
