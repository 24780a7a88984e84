/**
 * Keeps evals' sandboxes bounded (docs/evals.md): every case plays in a contact, opportunity and
 * conversation of its own (`is_eval`), with their messages, stage entries and recorded actions, and a
 * pipeline checked on every change leaves thousands of them. A sandbox whose case finished more than
 * EVAL_SANDBOX_RETENTION_MS ago (30 days by default) is deleted with its contact, in batches, by one runner
 * at most hourly: the run keeps the case's transcript, actions and verdicts in its result (`outcome`), and
 * the result's `conversation_id` and `opportunity_id` become null. A sandbox whose case is still playing is
 * never touched, however old; one whose run's process stopped mid-case goes when its run stopped beating.
 */
import { SqlClient } from "@effect/sql"
import { type Duration, Effect, Metric } from "effect"
import { retentionSweep } from "../db/RetentionSweep.js"

const BATCH = 500

/**
 * A case that has not finished keeps its sandbox while its run's heartbeat (every 10 s) is this recent; a run
 * whose process stopped stops beating, and its cases' sandboxes go once the retention has passed as well.
 */
const RUN_ALIVE_MS = 120_000

const deleted = Metric.counter("parley_eval_sandboxes_deleted_total", {
  description:
    "Eval sandboxes (contact, opportunity, conversation and what hangs off them) deleted past their retention",
  incremental: true
})

export const EvalSandboxRetentionLive = (retention: Duration.DurationInput) =>
  retentionSweep({
    name: "Parley/eval-sandbox-retention",
    retention,
    batchSize: BATCH,
    deleted,
    // the contact goes, and with it (on delete cascade) its opportunities, conversations and their rows
    deleteBatch: (retentionMs) =>
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.map(
          sql<{ n: number }>`
          with old as (
            delete from contacts where id in (
              select c.id from contacts c
              where c.is_eval and c.created_at < now() - make_interval(secs => ${retentionMs / 1000})
                and not exists (
                  select 1 from opportunities o
                  join eval_results r on r.opportunity_id = o.id join eval_runs er on er.id = r.run_id
                  where o.contact_id = c.id
                    and (r.finished_at >= now() - make_interval(secs => ${retentionMs / 1000})
                         or (r.finished_at is null
                             and er.heartbeat_at >= now() - make_interval(secs => ${
            Math.max(retentionMs, RUN_ALIVE_MS) / 1000
          }))))
              order by c.id limit ${BATCH}
            ) returning id
          )
          select count(*)::int as n from old`,
          (rows) => rows[0]?.n ?? 0
        ))
  })
