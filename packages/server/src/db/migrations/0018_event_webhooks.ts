import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Workspace event webhooks (docs/handoff.md, "Events"): each workspace may register endpoints for
 * `message.created` and the handoff events, signed the Standard Webhooks way. Events are written by
 * triggers in the transaction that makes them (a message's insert, a handoff event's insert), only for
 * workspaces with an active webhook, into `workspace_events`; a sender fans each out to the workspace's
 * subscribed webhooks (`event_deliveries`, one row per webhook and event) and posts them, retrying with
 * backoff. Every attempt is logged.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create table event_webhooks (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      url text not null,
      description text,
      secret_ciphertext text not null,
      events text[] not null default '{}',
      is_active boolean not null default true,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create index event_webhooks_workspace_idx on event_webhooks (workspace_id);

    create table workspace_events (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      type text not null,
      payload jsonb not null,
      fanned_out_at timestamptz,
      created_at timestamptz not null default now()
    );
    create index workspace_events_pending_idx on workspace_events (id) where fanned_out_at is null;

    create table event_deliveries (
      id bigint generated always as identity primary key,
      webhook_id bigint not null references event_webhooks (id) on delete cascade,
      event_id bigint not null references workspace_events (id) on delete cascade,
      status text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
      attempts integer not null default 0,
      next_attempt_at timestamptz not null default now(),
      last_status_code integer,
      last_error text,
      delivered_at timestamptz,
      created_at timestamptz not null default now(),
      unique (webhook_id, event_id)
    );
    create index event_deliveries_due_idx on event_deliveries (next_attempt_at) where status = 'pending';

    create table event_delivery_attempts (
      id bigint generated always as identity primary key,
      delivery_id bigint not null references event_deliveries (id) on delete cascade,
      attempt integer not null,
      status_code integer,
      error text,
      duration_ms integer not null,
      created_at timestamptz not null default now()
    );
    create index event_delivery_attempts_delivery_idx on event_delivery_attempts (delivery_id, attempt);

    create function iso_utc(t timestamptz) returns text language sql stable as $$
      select to_char(t at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
    $$;

    create function workspace_event(workspace bigint, event_type text, body jsonb) returns void language plpgsql as $$
    begin
      if exists (select 1 from event_webhooks w where w.workspace_id = workspace and w.is_active
                 and (cardinality(w.events) = 0 or event_type = any (w.events))) then
        insert into workspace_events (workspace_id, type, payload) values (workspace, event_type, body);
        perform pg_notify('parley_workspace_events', '');
      end if;
    end $$;

    create function messages_workspace_event() returns trigger language plpgsql as $$
    begin
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
    create trigger messages_workspace_event after insert on messages
      for each row execute function messages_workspace_event();

    create function handoff_workspace_event() returns trigger language plpgsql as $$
    declare
      event_type text := case
        when new.action = 'request' then 'conversation.handoff_requested'
        when new.action in ('take', 'assign') then 'conversation.taken'
        when new.to_state = 'ai' then 'conversation.returned'
      end;
    begin
      if event_type is not null then
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
    create trigger handoff_workspace_event after insert on handoff_events
      for each row execute function handoff_workspace_event();
  `))
