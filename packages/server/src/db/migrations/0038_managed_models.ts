import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Model providers and models as data (docs/agent.md, "Models and providers"): an operator adds a provider (its
 * protocol, base URL, key and headers, both encrypted) server-wide or for one workspace, and its models with their
 * prices and capabilities. The seeded rows keep their ids (clients rely on them) and their keys from the environment;
 * new rows take ids from 100 (providers) and 1000 (models), clear of the seeded ones.
 *
 * A reply keeps its history when the model that wrote it is deleted (`messages.ai_model_id` set null; `model` keeps
 * the name). A pipeline names a fallback model (a provider error after retries), a model that describes images
 * for a model without vision, and one that transcribes voice notes.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create sequence ai_providers_id_seq start 100 owned by ai_providers.id;
    create sequence ai_models_id_seq start 1000 owned by ai_models.id;
    alter table ai_providers
      alter column id set default nextval('ai_providers_id_seq'),
      add column kind text not null default 'openai_compatible',
      add column base_url text,
      add column api_key_ciphertext text,
      add column headers_ciphertext text,
      add column timeout_ms integer,
      add column workspace_id bigint references workspaces (id) on delete cascade,
      add column charge_credits boolean not null default true,
      add column is_seeded boolean not null default false,
      add column created_at timestamptz not null default now(),
      add column updated_at timestamptz not null default now();
    update ai_providers set kind = slug, is_seeded = true where id in (1, 2, 3);
    create index ai_providers_workspace_idx on ai_providers (workspace_id);

    alter table ai_models
      alter column id set default nextval('ai_models_id_seq'),
      add column capabilities text[] not null default '{}',
      add column created_at timestamptz not null default now(),
      add column updated_at timestamptz not null default now();
    update ai_models set capabilities = '{tools}' where ai_provider_id = 1;
    update ai_models set capabilities = '{tools,vision}' where ai_provider_id in (2, 3);

    alter table messages drop constraint messages_ai_model_id_fkey;
    alter table messages add constraint messages_ai_model_id_fkey
      foreign key (ai_model_id) references ai_models (id) on delete set null;

    alter table pipelines
      add column fallback_model_id bigint references ai_models (id),
      add column vision_model_id bigint references ai_models (id),
      add column transcription_model_id bigint references ai_models (id);
  `))
