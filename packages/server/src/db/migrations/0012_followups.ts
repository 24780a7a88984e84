import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Followups (SPEC.md 4.5): one per stage, and one sequence per stage entry of a stage whose followup is
 * active. A sequence keeps its own copy of the intervals (edits apply to sequences started afterwards),
 * the message after which a contact's message ends it (`anchor_message_id`: the newest message when it
 * started, then each followup it sent) and when its next step is due (`next_due_at`), so a sweep can
 * resume a sequence whose durable wake-up was lost. Followup messages are assistant messages with
 * `call_type = 'followup'` and their sequence and step.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create table followups (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      pipeline_id bigint not null references pipelines (id) on delete cascade,
      stage_id bigint not null references stages (id) on delete cascade,
      is_active boolean not null default false,
      intervals jsonb not null,
      instructions text,
      assets text,
      after_followup_stage_id bigint references stages (id) on delete set null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create unique index followups_stage_key on followups (stage_id);
    create index followups_workspace_idx on followups (workspace_id);

    create table followup_sequences (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      stage_entry_id bigint not null references stage_entries (id) on delete cascade,
      followup_id bigint references followups (id) on delete set null,
      opportunity_id bigint not null references opportunities (id) on delete cascade,
      stage_id bigint not null references stages (id) on delete cascade,
      conversation_id bigint references conversations (id) on delete set null,
      intervals jsonb not null,
      anchor_message_id text,
      steps_done integer not null default 0,
      status text not null default 'running' check (status in ('running', 'completed', 'cancelled')),
      end_reason text,
      next_due_at timestamptz,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create unique index followup_sequences_entry_key on followup_sequences (stage_entry_id);
    create index followup_sequences_due_idx on followup_sequences (next_due_at) where status = 'running';
    create index followup_sequences_conversation_idx on followup_sequences (conversation_id);

    alter table messages
      add column followup_sequence_id bigint references followup_sequences (id) on delete set null,
      add column followup_step integer;
    create index messages_followup_idx on messages (conversation_id) where call_type = 'followup';
  `))
