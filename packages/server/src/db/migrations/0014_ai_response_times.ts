import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The AI's own response time. `conversations.response_seconds_total` / `responses_count` (SPEC.md 2.3
 * `avg_response_time`) count every reply to a contact's message, an operator's too; AI performance
 * (analytics, the MCP tool) must count only the AI's replies. Two more counters, kept by the same
 * trigger, and filled for existing conversations from their messages.
 */
export const backfillAiResponseTimes = `
  update conversations cv set ai_response_seconds_total = s.seconds, ai_responses_count = s.replies
  from (
    select conversation_id, sum(extract(epoch from created_at - previous_at)) as seconds, count(*) as replies
    from (
      select conversation_id, role, is_manual, created_at,
             lag(role) over w as previous_role, lag(created_at) over w as previous_at
      from messages window w as (partition by conversation_id order by created_at, id)
    ) m
    where role = 'assistant' and not is_manual and previous_role = 'user'
    group by conversation_id
  ) s
  where cv.id = s.conversation_id`

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(
    `
    alter table conversations
      add column ai_response_seconds_total double precision not null default 0,
      add column ai_responses_count integer not null default 0;

    create or replace function messages_track_conversation() returns trigger language plpgsql as $$
    declare
      previous_role text;
      previous_at timestamptz;
      answers boolean;
    begin
      if tg_op = 'INSERT' then
        select role, created_at into previous_role, previous_at from messages
          where conversation_id = new.conversation_id and (created_at, id) < (new.created_at, new.id)
          order by created_at desc, id desc limit 1;
        answers := coalesce(new.role = 'assistant' and previous_role = 'user', false);
        update conversations set
          messages_count = messages_count + 1,
          cost_for_user = cost_for_user + new.cost_for_user,
          response_seconds_total = response_seconds_total + case when answers then extract(epoch from new.created_at - previous_at) else 0 end,
          responses_count = responses_count + case when answers then 1 else 0 end,
          ai_response_seconds_total = ai_response_seconds_total
            + case when answers and not new.is_manual then extract(epoch from new.created_at - previous_at) else 0 end,
          ai_responses_count = ai_responses_count + case when answers and not new.is_manual then 1 else 0 end,
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
  ` + ";" + backfillAiResponseTimes
  ))
