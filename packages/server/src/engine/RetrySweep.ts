/**
 * A guard around a race in @effect/cluster 0.60's workflow engine: when a durable clock fires while
 * its workflow is still storing the "suspended" result of the same run, the wake-up finds nothing to
 * resume and is lost. Every failed first attempt records when its retry is due (`retry_at`, cleared by
 * the second attempt); this sweep (one runner of the cluster runs it) resumes any delivery whose retry
 * is overdue. Resuming a workflow that is not suspended does nothing, so a false alarm is harmless.
 */
import { Singleton } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { DeliverReply } from "@parley/worker"
import { Duration, Effect, Option, Schedule } from "effect"
import { ChannelProviders } from "../channels/Providers.js"

/**
 * Every `everyMs`, resumes deliveries whose retry is overdue by more than `everyMs`; a workflow it starts has the
 * attempts and the backoff its channel's adapter gives (`retryDelayMs`: WEBHOOK_RETRY_DELAY_MS).
 */
export const RetrySweepLive = (everyMs: number, retryDelayMs: number) =>
  Singleton.make(
    "DeliverReply/retry-sweep",
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const providers = yield* ChannelProviders
      const sweep = Effect.gen(function*() {
        const overdue = yield* sql<{ message_id: string; run: number; kind: string | null }>`
        select d.message_id, d.run, ch.kind from webhook_deliveries d left join channels ch on ch.id = d.channel_id
        where d.retry_at is not null and d.retry_at < now() - make_interval(secs => ${everyMs / 1000})
        order by d.retry_at limit 200`
        for (const { kind, message_id, run } of overdue) {
          yield* Effect.logWarning("Resuming an overdue webhook retry").pipe(
            Effect.annotateLogs({ messageId: message_id, run })
          )
          // the execution id derives from the idempotency key (message and run) alone
          const attempts = Option.match(providers.forKind(kind ?? ""), {
            onNone: () => 2,
            onSome: (entry) => entry.provider.rules.delivery.attempts
          })
          const payload = { messageId: message_id, run, retryDelayMs, retryOnly: true, attempts }
          const executionId = yield* DeliverReply.executionId(payload)
          // the conversation entity makes attempt 1 itself and starts the workflow only for the retry; should
          // it have died in between, this starts it (a workflow that exists is not started twice)
          if (run === 0) yield* DeliverReply.execute(payload, { discard: true })
          yield* DeliverReply.resume(executionId)
        }
      }).pipe(Effect.catchAllCause(Effect.logWarning))
      yield* Effect.repeat(sweep, Schedule.spaced(Duration.millis(everyMs)))
    })
  )
