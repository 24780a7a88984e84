import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The operator console's access tokens (docs/console.md): ordinary bearer tokens of the public API,
 * short-lived, each bound to the account session that asked for it, so signing out (or the session
 * running out and being swept) deletes them.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table access_tokens add column account_session_id bigint references account_sessions (id) on delete cascade;
    create index access_tokens_session_idx on access_tokens (account_session_id) where account_session_id is not null;
  `))
