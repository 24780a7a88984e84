import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Contacts, tags, opportunities, conversations and their messages, and the stage-entry outbox.
 * Phone and email identify a contact within a workspace (SPEC.md 4.1 matches on them), so they are unique there.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create table contacts (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      name text,
      email text,
      phone text,
      identifier text,
      priority text not null default 'medium' check (priority in ('low', 'medium', 'high')),
      custom_name text,
      custom_email text,
      custom_phone text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create unique index contacts_workspace_phone_key on contacts (workspace_id, phone) where phone is not null;
    create unique index contacts_workspace_email_key on contacts (workspace_id, lower(email)) where email is not null;
    create index contacts_workspace_identifier_idx on contacts (workspace_id, identifier);
    create index contacts_workspace_created_idx on contacts (workspace_id, created_at desc, id desc);

    create table tags (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      name text not null,
      created_at timestamptz not null default now()
    );
    create unique index tags_workspace_name_key on tags (workspace_id, lower(name));

    create table opportunities (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      pipeline_id bigint not null references pipelines (id) on delete cascade,
      stage_id bigint not null references stages (id),
      contact_id bigint not null references contacts (id) on delete cascade,
      status text not null default 'active' check (status in ('pending', 'active', 'paused', 'won', 'lost')),
      name text,
      notes text,
      context jsonb,
      is_test boolean not null default false,
      source text,
      source_id text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create index opportunities_workspace_created_idx on opportunities (workspace_id, created_at desc, id desc);
    create index opportunities_contact_pipeline_idx on opportunities (contact_id, pipeline_id, created_at desc, id desc);
    create index opportunities_stage_idx on opportunities (stage_id);

    create table opportunity_tags (
      opportunity_id bigint not null references opportunities (id) on delete cascade,
      tag_id bigint not null references tags (id) on delete cascade,
      primary key (opportunity_id, tag_id)
    );
    create index opportunity_tags_tag_idx on opportunity_tags (tag_id);

    create table conversations (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      contact_id bigint not null references contacts (id) on delete cascade,
      channel_id bigint references channels (id) on delete set null,
      status text not null default 'active' check (status in ('active', 'paused')),
      is_test boolean not null default false,
      notes text[] not null default '{}',
      external_chat_id text,
      last_message_at timestamptz,
      last_message_content text,
      -- kept by the messages trigger below, so a summary costs no scan of the messages
      messages_count integer not null default 0,
      cost_for_user numeric(20, 8) not null default 0,
      response_seconds_total double precision not null default 0,
      responses_count integer not null default 0,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create index conversations_contact_channel_idx on conversations (contact_id, channel_id);

    create table conversation_opportunity (
      opportunity_id bigint not null references opportunities (id) on delete cascade,
      conversation_id bigint not null references conversations (id) on delete cascade,
      created_at timestamptz not null default now(),
      primary key (opportunity_id, conversation_id)
    );
    create index conversation_opportunity_conversation_idx on conversation_opportunity (conversation_id);

    create table messages (
      id text primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      conversation_id bigint not null references conversations (id) on delete cascade,
      opportunity_id bigint references opportunities (id) on delete set null,
      contact_id bigint references contacts (id) on delete set null,
      channel_id bigint references channels (id) on delete set null,
      stage_id bigint references stages (id) on delete set null,
      pipeline_id bigint references pipelines (id) on delete set null,
      role text not null check (role in ('user', 'assistant')),
      status text not null,
      message text,
      files jsonb not null default '[]',
      attachments jsonb not null default '[]',
      cost_for_user numeric(20, 8) not null default 0,
      external_chat_id text,
      external_message_id text,
      call_type text,
      is_manual boolean not null default false,
      sender_id bigint references users (id) on delete set null,
      error text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create index messages_conversation_created_idx on messages (conversation_id, created_at, id);
    create index messages_workspace_created_idx on messages (workspace_id, created_at);

    -- SPEC.md 2.3 summary fields, maintained with every message: count, cost, last message, and the
    -- response time of each assistant message that answers a contact's message (time since that message).
    -- Messages are written as they happen (created_at = now()), so each insert is the newest of its
    -- conversation; the app never deletes single messages (a deleted conversation takes its messages along).
    create function messages_track_conversation() returns trigger language plpgsql as $$
    declare
      previous_role text;
      previous_at timestamptz;
    begin
      if tg_op = 'INSERT' then
        select role, created_at into previous_role, previous_at from messages
          where conversation_id = new.conversation_id and (created_at, id) < (new.created_at, new.id)
          order by created_at desc, id desc limit 1;
        update conversations set
          messages_count = messages_count + 1,
          cost_for_user = cost_for_user + new.cost_for_user,
          response_seconds_total = response_seconds_total + case
            when new.role = 'assistant' and previous_role = 'user' then extract(epoch from new.created_at - previous_at) else 0 end,
          responses_count = responses_count + case when new.role = 'assistant' and previous_role = 'user' then 1 else 0 end,
          last_message_at = greatest(last_message_at, new.created_at),
          last_message_content = case when last_message_at is null or new.created_at >= last_message_at
            then coalesce(nullif(new.message, ''),
                          case when jsonb_array_length(new.files) > 0 or jsonb_array_length(new.attachments) > 0 then '[Attachment]' end)
            else last_message_content end
        where id = new.conversation_id;
      elsif tg_op = 'UPDATE' then
        update conversations set cost_for_user = cost_for_user + new.cost_for_user - old.cost_for_user
        where id = new.conversation_id;
      else
        update conversations set messages_count = messages_count - 1, cost_for_user = cost_for_user - old.cost_for_user
        where id = old.conversation_id;
      end if;
      return null;
    end $$;
    create trigger messages_track_conversation after insert or update of cost_for_user or delete on messages
      for each row execute function messages_track_conversation();

    -- Outbox: one row each time an opportunity enters a stage, written in the same transaction.
    -- The stage-start automations consume each row exactly once (consumed_at).
    create table stage_entries (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      opportunity_id bigint not null references opportunities (id) on delete cascade,
      pipeline_id bigint not null references pipelines (id) on delete cascade,
      stage_id bigint not null references stages (id) on delete cascade,
      previous_stage_id bigint references stages (id) on delete set null,
      cause text not null check (cause in ('created', 'moved')),
      created_at timestamptz not null default now(),
      consumed_at timestamptz
    );
    create index stage_entries_pending_idx on stage_entries (id) where consumed_at is null;
    create index stage_entries_opportunity_idx on stage_entries (opportunity_id);
  `))
