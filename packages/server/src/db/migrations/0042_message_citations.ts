import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Citations (issue 41): a reply records the knowledge points it was given (`messages.citations`: each point's table,
 * `default_id` and, for a point of a source, its title, URL or file name and page), so an operator sees where an
 * answer came from long after the source changed. A pipeline's `cite_sources` ends its replies with the links of
 * the sources they used (docs/agent.md, "Citing sources"). Null on every other message: no backfill.
 */
export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.unsafe(`
    alter table messages add column citations jsonb;
    alter table pipelines add column cite_sources boolean not null default false;
  `))
