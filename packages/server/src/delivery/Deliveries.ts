import { SqlClient } from "@effect/sql"
import type { WorkflowEngine } from "@effect/workflow"
import { type ChannelId, ChannelNotFound, CurrentActor, Delivery, MessageNotFound, Replay } from "@parley/domain"
import { DeliverReply } from "@parley/worker"
import { Effect, Schema } from "effect"
import { AppConfig } from "../config/AppConfig.js"

const decodeDeliveries = Schema.decodeUnknown(Schema.Array(Delivery))

/** Starting, listing and replaying reply-webhook deliveries (the work itself is the DeliverReply workflow). */
export class Deliveries extends Effect.Service<Deliveries>()("@parley/server/Deliveries", {
  dependencies: [AppConfig.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig

    /** Durable from here on: the workflow is stored before this returns. */
    const start = (messageId: string, run = 0): Effect.Effect<void, never, WorkflowEngine.WorkflowEngine> =>
      DeliverReply.execute({ messageId, run, retryDelayMs: config.webhookRetryDelayMs }, { discard: true }).pipe(
        Effect.asVoid,
        Effect.withSpan("Deliveries.start", { attributes: { messageId, run } })
      )

    /**
     * The attempts after the first, durably, once the first was made inline and failed in a way worth retrying
     * (`attempts` in all: 2 for a reply webhook, more for a provider's rate limits).
     */
    const startRetry = (
      messageId: string,
      attempts = 2,
      retryAfterMs?: number
    ): Effect.Effect<void, never, WorkflowEngine.WorkflowEngine> =>
      DeliverReply.execute({
        messageId,
        run: 0,
        retryDelayMs: config.webhookRetryDelayMs,
        retryOnly: true,
        attempts,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs })
      }, { discard: true }).pipe(
        Effect.asVoid,
        Effect.withSpan("Deliveries.startRetry", { attributes: { messageId } })
      )

    const ownChannel = (channelId: ChannelId) =>
      Effect.gen(function*() {
        const actor = yield* CurrentActor
        const rows = yield* sql`select 1 from channels where id = ${channelId} and workspace_id in ${
          sql.in(actor.workspaceIds)
        }`
          .pipe(Effect.orDie)
        if (rows.length === 0) return yield* new ChannelNotFound()
      })

    const list = Effect.fn("Deliveries.list")(
      function*(channelId: ChannelId, query: { message_id?: string | undefined; limit: number }) {
        yield* ownChannel(channelId)
        const rows = yield* sql`
        select id, message_id, run, attempt, url, status_code, duration_ms, error, response_excerpt, created_at
        from webhook_deliveries
        where channel_id = ${channelId} ${
          query.message_id === undefined ? sql`` : sql`and message_id = ${query.message_id}`
        }
        order by created_at desc, id desc limit ${query.limit}`.pipe(Effect.orDie)
        return yield* decodeDeliveries(rows).pipe(Effect.orDie)
      }
    )

    const replay = Effect.fn("Deliveries.replay")(function*(channelId: ChannelId, messageId: string) {
      yield* ownChannel(channelId)
      const rows = yield* sql<{ runs: number }>`
        select coalesce((select max(run) from webhook_deliveries where message_id = m.id), 0)::int as runs
        from messages m where m.id = ${messageId} and m.channel_id = ${channelId} and m.role = 'assistant'`.pipe(
        Effect.orDie
      )
      if (rows.length === 0) return yield* new MessageNotFound()
      const run = rows[0]!.runs + 1
      yield* start(messageId, run)
      return new Replay({ message_id: messageId, run })
    })

    return { start, startRetry, list, replay }
  })
}) {}
