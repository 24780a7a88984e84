import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A failed reply is never silence (docs/handoff.md, "When a reply cannot be made"): the pipeline's
 * `fallback_message` (null: the default text) goes to the contact as the bridge of a handoff the failure
 * asks for, unless `handoff_on_failure` is off. The request's event carries the text it sends
 * (`bridge_text`; null: the pipeline's bridge message).
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table pipelines
      add column fallback_message text,
      add column handoff_on_failure boolean not null default true;
    alter table handoff_events add column bridge_text text;
  `))
