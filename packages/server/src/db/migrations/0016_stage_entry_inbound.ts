import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A stage entry made by the contact's own arrival through web chat (their first message, or Initiate
 * just before it) is `inbound`, no longer `created`: such an entry sends no opening message once the
 * contact wrote (their message gets the agent's reply instead), while a REST create always sends it
 * (SPEC.md 3.1, 4.1 rule 3). Existing entries of opportunities web chat created are reclassified.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table stage_entries drop constraint stage_entries_cause_check;
    alter table stage_entries add constraint stage_entries_cause_check check (cause in ('created', 'inbound', 'moved'));
    update stage_entries e set cause = 'inbound'
    from opportunities o
    where o.id = e.opportunity_id and e.cause = 'created' and o.source = 'web';
  `))
