/**
 * The delivery log (`webhook_deliveries`, the one writer of that table): one row per attempt to send a message
 * through its channel, whatever the kind, written before the call so an attempt a crash cut short is in the log too
 * (marked interrupted when the next attempt is made); then the attempt's outcome together with the message's own
 * columns, in one statement.
 */
import { SqlClient } from "@effect/sql"
import type { ChannelId, WorkspaceId } from "@parley/domain"
import { Effect } from "effect"
import * as MessagePartWrites from "../tables/MessagePartWrites.js"
import * as MessageWrites from "../tables/MessageWrites.js"
import { IN_PROGRESS, INTERRUPTED } from "./AttemptLog.js"

/** What an attempt changes on its message: `status` null leaves the status and error as they are. */
export interface MessageOutcome {
  readonly status: string | null
  readonly error: string | null
  readonly providerId: string | null
  /** an operator's message keeps `created_manually` until it is sent or fails (SPEC.md 3.4) */
  readonly keepManual?: boolean
  /** parts of a split message sent so far, when some were */
  readonly partsSent?: number
  /** the ids of the parts this attempt sent, the first being part `from` */
  readonly parts?: { readonly channelId: ChannelId; readonly from: number; readonly ids: ReadonlyArray<string> }
}

export interface AttemptRecord {
  readonly status: number | null
  readonly durationMs: number
  readonly error: string | null
  readonly excerpt: string | null
  /** when the workflow's next attempt is due (RetrySweep resumes it should its wake-up be lost) */
  readonly retryInMs: number | null
  readonly message: MessageOutcome | null
}

export const makeDeliveryLog = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  /** Logs attempt `attempt` of run `run` as in progress; an earlier attempt's due retry is cleared. */
  const begin = (
    m: { readonly id: string; readonly workspace_id: WorkspaceId; readonly channel_id: ChannelId },
    run: number,
    attempt: number,
    url: string
  ) =>
    sql<{ id: string }>`
      with earlier as (
        update webhook_deliveries
        set retry_at = null,
            error = case when status_code is null and error = ${IN_PROGRESS} then ${INTERRUPTED} else error end
        where message_id = ${m.id} and run = ${run} and (retry_at is not null or (status_code is null and error = ${IN_PROGRESS}))
      )
      insert into webhook_deliveries (workspace_id, channel_id, message_id, run, attempt, url, status_code, duration_ms, error)
      values (${m.workspace_id}, ${m.channel_id}, ${m.id}, ${run}, ${attempt}, ${url}, null, 0, ${IN_PROGRESS})
      returning id::text`.pipe(Effect.map((rows) => rows[0]!.id))

  /** The attempt's row and the message's columns in one statement. */
  const record = (logId: string, messageId: string, r: AttemptRecord) => {
    const m = r.message
    return sql`
      with logged as (
        update webhook_deliveries
        set status_code = ${r.status}, duration_ms = ${r.durationMs}, error = ${r.error}, response_excerpt = ${r.excerpt},
            retry_at = ${r.retryInMs === null ? null : sql`now() + make_interval(secs => ${r.retryInMs / 1000})`}
        where id = ${logId}
      ), parts as (
        ${m?.parts === undefined ? sql`select 1` : MessagePartWrites.insertParts(sql, { messageId, ...m.parts })}
      )
      ${
      m === null
        ? sql`select 1`
        : MessageWrites.update(sql, {
          ...(m.status === null ? {} : {
            status: m.keepManual === true
              ? sql`case when status = 'created_manually' then status else ${m.status} end`
              : m.status,
            error: m.error
          }),
          external_message_id: sql`coalesce(${m.providerId}::text, external_message_id)`,
          ...(m.partsSent === undefined ? {} : { provider_parts_sent: m.partsSent }),
          updated_at: sql`now()`
        }, sql`where id = ${messageId}`)
    }`
  }

  return { begin, record }
})
