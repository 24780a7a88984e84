import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The agent's replies: which model answered with how many tokens, which contact message a reply
 * answers (unique, so a turn repeated after a crash stores its reply once), why a contact message got
 * no reply, and two more local models so Smart Routing tiers can be told apart without a provider key.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table messages
      add column ai_model_id bigint references ai_models (id),
      add column model text,
      add column input_tokens integer,
      add column output_tokens integer,
      add column in_reply_to text,
      add column handled_reason text;
    create unique index messages_in_reply_to_idx on messages (in_reply_to) where in_reply_to is not null;
    create index messages_undelivered_idx on messages (conversation_id) where status = 'ai_generated';

    -- wakes the stage-entry consumer at once (it also polls, slowly, in case a notification is missed)
    create function stage_entries_notify() returns trigger language plpgsql as $$
    begin
      perform pg_notify('parley_stage_entries', '');
      return null;
    end $$;
    create trigger stage_entries_notify after insert on stage_entries
      for each statement execute function stage_entries_notify();

    insert into ai_models (id, ai_provider_id, name, model, input_price_per_million, output_price_per_million, context_window) values
      (2, 1, 'Parley Local Mini', 'parley-local-mini', 0, 0, 32000),
      (3, 1, 'Parley Local Max', 'parley-local-max', 0, 0, 32000);
  `))
