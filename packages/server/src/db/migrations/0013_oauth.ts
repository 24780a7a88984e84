import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * OAuth 2.1 for MCP clients and the account pages (SPEC.md 5.2). Registered clients (RFC 7591; the
 * secret of a confidential client only as SHA-256), authorization codes (single use, stored as SHA-256,
 * bound to client, redirect URI and PKCE challenge), grants (what one user approved for one client:
 * every access and refresh token issued from it is revoked with it), refresh tokens (rotating; a reused
 * one revokes its grant) and browser sessions (the cookie only as SHA-256). Access tokens stay in
 * `access_tokens`, with their client and grant.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create table oauth_clients (
      id text primary key,
      secret_hash text,
      client_name text,
      client_uri text,
      redirect_uris text[] not null,
      grant_types text[] not null,
      token_endpoint_auth_method text not null
        check (token_endpoint_auth_method in ('none', 'client_secret_post', 'client_secret_basic')),
      scope text,
      created_at timestamptz not null default now(),
      check ((token_endpoint_auth_method = 'none') = (secret_hash is null))
    );

    create table oauth_grants (
      id bigint generated always as identity primary key,
      user_id bigint not null references users (id) on delete cascade,
      client_id text not null references oauth_clients (id) on delete cascade,
      scopes text[] not null,
      resource text,
      created_at timestamptz not null default now(),
      revoked_at timestamptz
    );
    create index oauth_grants_user_idx on oauth_grants (user_id, client_id);

    create table oauth_codes (
      id bigint generated always as identity primary key,
      code_hash text not null,
      client_id text not null references oauth_clients (id) on delete cascade,
      user_id bigint not null references users (id) on delete cascade,
      redirect_uri text not null,
      code_challenge text not null,
      scopes text[] not null,
      resource text,
      expires_at timestamptz not null,
      used_at timestamptz,
      grant_id bigint references oauth_grants (id) on delete set null,
      created_at timestamptz not null default now()
    );
    create unique index oauth_codes_hash_key on oauth_codes (code_hash);

    create table oauth_refresh_tokens (
      id bigint generated always as identity primary key,
      token_hash text not null,
      grant_id bigint not null references oauth_grants (id) on delete cascade,
      expires_at timestamptz not null,
      used_at timestamptz,
      revoked_at timestamptz,
      created_at timestamptz not null default now()
    );
    create unique index oauth_refresh_tokens_hash_key on oauth_refresh_tokens (token_hash);
    create index oauth_refresh_tokens_grant_idx on oauth_refresh_tokens (grant_id);

    alter table access_tokens add column oauth_grant_id bigint references oauth_grants (id) on delete cascade;
    create index access_tokens_grant_idx on access_tokens (oauth_grant_id) where oauth_grant_id is not null;

    create table account_sessions (
      id bigint generated always as identity primary key,
      session_hash text not null,
      user_id bigint not null references users (id) on delete cascade,
      expires_at timestamptz not null,
      created_at timestamptz not null default now()
    );
    create unique index account_sessions_hash_key on account_sessions (session_hash);
    create index account_sessions_user_idx on account_sessions (user_id);
  `))
