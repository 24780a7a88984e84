import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create extension if not exists vector;

    create table users (
      id bigint generated always as identity primary key,
      email text not null,
      name text,
      password_hash text not null,
      is_super_user boolean not null default false,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create unique index users_email_key on users (lower(email));

    create table workspaces (
      id bigint generated always as identity primary key,
      name text not null,
      is_subscription_active boolean not null default true,
      credits numeric(20, 6) not null default 0,
      training_credits numeric(20, 6) not null default 0,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );

    create table memberships (
      user_id bigint not null references users (id) on delete cascade,
      workspace_id bigint not null references workspaces (id) on delete cascade,
      role text not null check (role in ('owner', 'manager')),
      created_at timestamptz not null default now(),
      primary key (user_id, workspace_id)
    );
    create index memberships_workspace_idx on memberships (workspace_id);

    create table access_tokens (
      id bigint generated always as identity primary key,
      user_id bigint not null references users (id) on delete cascade,
      name text not null,
      token_hash text not null,
      token_hint text not null,
      scopes text[] not null,
      expires_at timestamptz,
      last_used_at timestamptz,
      revoked_at timestamptz,
      oauth_client_id text,
      created_at timestamptz not null default now()
    );
    create unique index access_tokens_hash_key on access_tokens (token_hash);
    create index access_tokens_user_idx on access_tokens (user_id);
  `))
