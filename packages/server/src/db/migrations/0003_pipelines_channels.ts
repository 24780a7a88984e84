import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create table pipelines (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      name text not null,
      description text,
      persona text,
      instructions text,
      status text not null default 'active' check (status in ('active', 'inactive')),
      is_archived boolean not null default false,
      agent_type_id bigint not null references agent_types (id),
      ai_model_id bigint not null references ai_models (id),
      language_id bigint not null references languages (id),
      dialect_id bigint references dialects (id),
      rag_mode text not null default 'none' check (rag_mode in ('none', 'vector', 'hybrid')),
      model_temperature double precision not null default 0.7,
      no_of_relevant_points integer not null default 5,
      agent_memory_window integer not null default 20,
      context_message_count integer not null default 10,
      max_conversation_cost double precision,
      max_conversation_messages integer,
      followup_limit integer not null default 6,
      is_unknown_contacts_enabled boolean not null default true,
      is_model_routing_enabled boolean not null default false,
      model_pool jsonb not null default '[]',
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create unique index pipelines_workspace_name_key on pipelines (workspace_id, lower(name));

    create table stages (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      pipeline_id bigint not null references pipelines (id) on delete cascade,
      name text not null,
      nature text not null check (nature in ('neutral', 'won', 'lost')),
      sort_order integer not null,
      description text,
      ai_persona text,
      instructions text,
      notes text,
      enter_condition text,
      parent_id bigint references stages (id) on delete set null,
      is_opening_message boolean not null default false,
      opening_message_type text check (opening_message_type in ('ai_generated', 'static')),
      static_opening_message text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create index stages_pipeline_idx on stages (pipeline_id, sort_order);

    create table channels (
      id bigint generated always as identity primary key,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      kind text not null check (kind in ('web', 'widget', 'whatsapp', 'messenger', 'instagram', 'linkedin')),
      name text not null,
      pipeline_id bigint references pipelines (id) on delete set null,
      is_active boolean not null default true,
      client_id text,
      secret_ciphertext text,
      callback_url text,
      allowed_origins text[] not null default '{}',
      allowed_ips text[] not null default '{}',
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create unique index channels_client_id_key on channels (client_id);
    create index channels_workspace_idx on channels (workspace_id);
    create index channels_pipeline_idx on channels (pipeline_id);
  `))
