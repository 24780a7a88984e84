import type { SqlClient } from "@effect/sql"

/**
 * Joins `p`, the pipeline of conversation `c` as it runs (docs/versions.md): its newest opportunity's, else
 * its channel's (as a turn decides which agent answers). Also binds `ch` (the channel) and `o` (that
 * opportunity's pipeline id and configuration override).
 */
export const joinConversationPipeline = (sql: SqlClient.SqlClient) =>
  sql`
  left join channels ch on ch.id = c.channel_id
  left join lateral (
    select o.pipeline_id, o.config_version_id from conversation_opportunity co join opportunities o on o.id = co.opportunity_id
    where co.conversation_id = c.id order by o.created_at desc, o.id desc limit 1
  ) o on true
  left join lateral parley_live_pipeline(coalesce(o.pipeline_id, ch.pipeline_id), o.config_version_id) p on true`
