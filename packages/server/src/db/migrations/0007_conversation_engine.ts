import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The conversation entity's bookkeeping: which contact messages a turn has taken (`handled_at`), the
 * pipeline's debounce window, and when a failed first webhook attempt is due again (`retry_at`, cleared
 * by the second attempt), so overdue retries can be found and resumed.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table pipelines add column reply_debounce_ms integer not null default 3000
      check (reply_debounce_ms between 0 and 60000);

    alter table messages add column handled_at timestamptz;
    update messages set handled_at = created_at where role = 'user';
    create index messages_unhandled_idx on messages (conversation_id, created_at, id)
      where role = 'user' and handled_at is null;

    alter table webhook_deliveries add column retry_at timestamptz;
    create index webhook_deliveries_retry_idx on webhook_deliveries (retry_at) where retry_at is not null;
  `))
