import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Evals' sandboxes are deleted past their retention (evals/SandboxRetention.ts): the sweep finds them by age
 * among eval contacts only, which a partial index keeps small, whatever the size of the contacts table.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    create index contacts_eval_created_idx on contacts (created_at, id) where is_eval;
  `))
