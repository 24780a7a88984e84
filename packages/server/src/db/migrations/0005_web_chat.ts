import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Stored files, external attachments on messages, and the receiver's idempotency keys. */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create table files (
      key text primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      channel_id bigint references channels (id) on delete set null,
      name text not null,
      mimetype text not null,
      size bigint not null,
      created_at timestamptz not null default now()
    );
    create index files_workspace_idx on files (workspace_id);

    alter table messages add column attachments jsonb not null default '[]';

    -- as in 0004, and a message of links only (attachments) previews as [Attachment] too
    create or replace function messages_track_conversation() returns trigger language plpgsql as $$
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

    create table idempotency_keys (
      channel_id bigint not null references channels (id) on delete cascade,
      key text not null,
      message_id text not null,
      created_at timestamptz not null default now(),
      primary key (channel_id, key)
    );
    -- a channel-specific id (web-chat contact_id) names one contact per workspace
    create unique index contacts_identifier_key on contacts (workspace_id, identifier) where identifier is not null;
    create index conversations_channel_chat_idx on conversations (channel_id, external_chat_id);
  `))
