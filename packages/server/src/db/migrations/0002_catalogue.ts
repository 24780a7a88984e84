import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The model catalogue: providers, models with list prices in USD per million tokens (what cost and
 * credits are computed from), agent types, languages and dialects. Ids are fixed so clients can rely on them.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create table ai_providers (
      id bigint primary key,
      slug text not null unique,
      name text not null
    );
    create table ai_models (
      id bigint primary key,
      ai_provider_id bigint not null references ai_providers (id),
      name text not null,
      model text not null,
      input_price_per_million numeric(12, 4) not null,
      output_price_per_million numeric(12, 4) not null,
      context_window integer not null,
      unique (ai_provider_id, model)
    );
    create table agent_types (
      id bigint primary key,
      name text not null,
      description text not null
    );
    create table languages (
      id bigint primary key,
      code text not null unique,
      name text not null
    );
    create table dialects (
      id bigint primary key,
      language_id bigint not null references languages (id),
      code text not null unique,
      name text not null
    );

    insert into ai_providers (id, slug, name) values
      (1, 'local', 'Parley local model'),
      (2, 'openai', 'OpenAI'),
      (3, 'anthropic', 'Anthropic');

    insert into ai_models (id, ai_provider_id, name, model, input_price_per_million, output_price_per_million, context_window) values
      (1, 1, 'Parley Local', 'parley-local', 0, 0, 32000),
      (10, 2, 'GPT-4.1', 'gpt-4.1', 2.00, 8.00, 1047576),
      (11, 2, 'GPT-4.1 mini', 'gpt-4.1-mini', 0.40, 1.60, 1047576),
      (12, 2, 'GPT-4.1 nano', 'gpt-4.1-nano', 0.10, 0.40, 1047576),
      (13, 2, 'GPT-4o', 'gpt-4o', 2.50, 10.00, 128000),
      (14, 2, 'GPT-4o mini', 'gpt-4o-mini', 0.15, 0.60, 128000),
      (15, 2, 'o4-mini', 'o4-mini', 1.10, 4.40, 200000),
      (20, 3, 'Claude Opus 4', 'claude-opus-4-20250514', 15.00, 75.00, 200000),
      (21, 3, 'Claude Sonnet 4', 'claude-sonnet-4-20250514', 3.00, 15.00, 200000),
      (22, 3, 'Claude 3.5 Haiku', 'claude-3-5-haiku-20241022', 0.80, 4.00, 200000);

    insert into agent_types (id, name, description) values
      (1, 'Sales', 'Qualifies leads, answers product questions and moves deals towards a close.'),
      (2, 'Support', 'Resolves customer questions from the knowledge base and hands over when it cannot.'),
      (3, 'Appointment setter', 'Finds a suitable time and books meetings or calls.'),
      (4, 'Lead qualification', 'Asks the qualifying questions and records the answers before a human takes over.'),
      (5, 'General assistant', 'Answers questions about the business in a friendly, concise way.');

    insert into languages (id, code, name) values
      (1, 'en', 'English'),
      (2, 'es', 'Spanish'),
      (3, 'pt', 'Portuguese'),
      (4, 'fr', 'French'),
      (5, 'de', 'German'),
      (6, 'it', 'Italian'),
      (7, 'nl', 'Dutch'),
      (8, 'ar', 'Arabic');

    insert into dialects (id, language_id, code, name) values
      (1, 1, 'en-US', 'American English'),
      (2, 1, 'en-GB', 'British English'),
      (3, 1, 'en-AU', 'Australian English'),
      (4, 2, 'es-ES', 'Castilian Spanish'),
      (5, 2, 'es-MX', 'Mexican Spanish'),
      (6, 2, 'es-AR', 'Rioplatense Spanish'),
      (7, 3, 'pt-BR', 'Brazilian Portuguese'),
      (8, 3, 'pt-PT', 'European Portuguese'),
      (9, 4, 'fr-FR', 'French (France)'),
      (10, 4, 'fr-CA', 'Canadian French'),
      (11, 5, 'de-DE', 'German (Germany)'),
      (12, 5, 'de-CH', 'Swiss German'),
      (13, 6, 'it-IT', 'Italian (Italy)'),
      (14, 7, 'nl-NL', 'Dutch (Netherlands)'),
      (15, 7, 'nl-BE', 'Flemish'),
      (16, 8, 'ar-SA', 'Gulf Arabic'),
      (17, 8, 'ar-EG', 'Egyptian Arabic');
  `))
