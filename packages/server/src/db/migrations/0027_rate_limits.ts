import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Fixed-window attempt counters shared by every api process (limits/RateLimits.ts): sign-in failures,
 * OAuth client registrations and new widget sessions per address. One row per key and window.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create table rate_limits (
      key text primary key,
      window_ends_at timestamptz not null,
      count integer not null
    );
    create index rate_limits_window_idx on rate_limits (window_ends_at);
  `))
