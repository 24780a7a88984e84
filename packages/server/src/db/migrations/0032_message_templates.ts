import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Message templates (docs/channels.md, "The window and templates"): once a provider's service window closed, a
 * stage's opening message, a followup and the handoff bridge go as the approved template they name (name, language,
 * body parameters with `{{variables}}`), and a message sent as a template keeps it (resolved) so every attempt sends
 * the same; a message sent in parts keeps how many went out, so a retry after a failure in the middle sends only the
 * rest. Configuration columns reach pipeline versions as every column does; older snapshots read null (none).
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table stages add column opening_template jsonb;
    alter table followups add column template jsonb;
    alter table pipelines add column handoff_bridge_template jsonb;
    alter table messages add column template jsonb;
    -- of a message sent in parts (a text over the provider's limit), those sent: a retry sends only the rest
    alter table messages add column provider_parts_sent integer not null default 0;
  `))
