/**
 * Keeps @effect/cluster's message storage bounded. The cluster never deletes a processed message or its
 * replies (0.60 clears only durable-clock addresses), so `cluster_messages` and `cluster_replies` grew
 * with every workflow, retry, followup step and stage entry, and the storage read every runner makes
 * slowed as they grew. Processed messages older than CLUSTER_RETENTION_MS (7 days by default) go, with
 * their replies, in batches; unprocessed ones (pending work, suspended workflows) are never touched.
 * A message's age is its id's: ids are snowflakes, milliseconds since the cluster's epoch in the high bits.
 * The retention also bounds deduplication: a persisted message sent again with the primary key of one
 * deleted would run again, so it must be far longer than any retry or re-send (minutes).
 */
import { MachineId, Snowflake } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { type Duration, Effect, Metric } from "effect"
import { retentionSweep } from "../db/RetentionSweep.js"

const BATCH = 5_000

const deleted = Metric.counter("parley_cluster_messages_deleted_total", {
  description: "Processed cluster messages deleted past their retention, with their replies",
  incremental: true
})

export const ClusterRetentionLive = (retention: Duration.DurationInput) =>
  retentionSweep({
    name: "Parley/cluster-retention",
    retention,
    batchSize: BATCH,
    deleted,
    deleteBatch: (retentionMs) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const cutoff = String(
          Snowflake.make({ machineId: MachineId.make(0), sequence: 0, timestamp: Date.now() - retentionMs })
        )
        const rows = yield* sql<{ n: number }>`
          with old as (
            delete from cluster_messages where id in (
              select id from cluster_messages where processed and id < ${cutoff}::bigint order by id limit ${BATCH}
            ) returning id, request_id
          ), replies as (
            delete from cluster_replies where request_id in (select id from old union select request_id from old)
          )
          select count(*)::int as n from old`
        return rows[0]?.n ?? 0
      })
  })
