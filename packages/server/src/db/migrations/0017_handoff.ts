import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Human handoff (docs/handoff.md). Each conversation carries its handoff state (`ai`, `waiting`, `human`)
 * beside SPEC.md's `status`, which follows it (`human` is `paused`). Every transition is a row of
 * `handoff_events`, written in the transaction that changes the state; the events are also an outbox:
 * a consumer hands each to the conversation's entity (bridge message, summary) and to the operators'
 * socket channel, once (`dispatched_at`). `conversation_reads` keeps each user's read marker. Pipelines
 * and stages say when the agent should ask for a person and what the contact is told meanwhile.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table conversations
      add column handoff_state text not null default 'ai' check (handoff_state in ('ai', 'waiting', 'human')),
      add column handoff_requested_at timestamptz,
      add column handoff_requested_by text check (handoff_requested_by in ('contact', 'ai', 'operator', 'rule')),
      add column handoff_reason text,
      add column handoff_summary text,
      add column handoff_assignee_id bigint references users (id) on delete set null,
      add column handoff_taken_at timestamptz,
      add column handoff_returned_at timestamptz,
      add column handoff_return_note text,
      -- the newest contact message when an operator handed back: rules never hand off again for it
      add column handoff_returned_upto text,
      -- while waiting: when the pipeline's handoff_timeout runs out (null: no timeout, or already fired)
      add column handoff_due_at timestamptz;
    -- a conversation paused before handoffs existed is an operator's
    update conversations set handoff_state = 'human', handoff_taken_at = updated_at where status = 'paused';
    create index conversations_activity_idx on conversations (workspace_id, (coalesce(last_message_at, created_at)) desc, id desc);
    create index conversations_handoff_due_idx on conversations (handoff_due_at) where handoff_due_at is not null;

    create table handoff_events (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      conversation_id bigint not null references conversations (id) on delete cascade,
      action text not null check (action in ('request', 'take', 'assign', 'return', 'timeout', 'resolve')),
      from_state text not null,
      to_state text not null,
      actor text not null check (actor in ('contact', 'ai', 'operator', 'rule', 'system')),
      user_id bigint references users (id) on delete set null,
      assignee_id bigint references users (id) on delete set null,
      reason text,
      note text,
      -- whether the bridge message is still to be written (by the entity) when the event is dispatched
      bridge text check (bridge in ('first', 'second')),
      dispatched_at timestamptz,
      created_at timestamptz not null default now()
    );
    create index handoff_events_conversation_idx on handoff_events (conversation_id, id);
    create index handoff_events_undispatched_idx on handoff_events (id) where dispatched_at is null;

    create function handoff_events_notify() returns trigger language plpgsql as $$
    begin
      perform pg_notify('parley_handoff_events', '');
      return null;
    end $$;
    create trigger handoff_events_notify after insert on handoff_events
      for each statement execute function handoff_events_notify();

    -- a bridge message is written once per event (a repeat after a crash finds it stored)
    alter table messages add column handoff_event_id bigint references handoff_events (id) on delete set null;
    create unique index messages_handoff_event_idx on messages (handoff_event_id) where handoff_event_id is not null;

    create table conversation_reads (
      user_id bigint not null references users (id) on delete cascade,
      conversation_id bigint not null references conversations (id) on delete cascade,
      read_at timestamptz not null,
      primary key (user_id, conversation_id)
    );

    alter table pipelines
      add column handoff_instructions text,
      add column handoff_bridge_mode text not null default 'static' check (handoff_bridge_mode in ('static', 'ai_generated')),
      add column handoff_bridge_text text,
      add column handoff_timeout_seconds integer check (handoff_timeout_seconds > 0),
      add column handoff_timeout_action text not null default 'return' check (handoff_timeout_action in ('return', 'second_bridge')),
      add column handoff_keywords text[] not null default '{}',
      add column handoff_after_failures integer check (handoff_after_failures > 0);
    alter table stages add column handoff_instructions text;
  `))
