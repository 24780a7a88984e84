import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * `parley_action_runs` only when a run was written. The statement trigger fired for every insert
 * statement, and every stored message runs one (`messages_fire_actions`, usually inserting nothing), so
 * each message woke the action dispatcher for a read that found nothing: two wasted statements per
 * reply. Per row, it fires only for real runs; Postgres folds identical notifications of a transaction
 * into one.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    drop trigger action_runs_notify on action_runs;
    create trigger action_runs_notify after insert on action_runs
      for each row execute function action_runs_notify();
  `))
