import { SqlClient } from "@effect/sql"
import { ConversationTurns } from "@parley/domain"
import { Effect, Layer, Option } from "effect"

/** What the conversation entity reads and writes, over the messages table. */
export const ConversationTurnsLive = Layer.effect(
  ConversationTurns,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const pending = (conversationId: string) =>
      sql<{ id: string; created_at: string; reply_debounce_ms: number | null }>`
        select m.id, m.created_at, p.reply_debounce_ms
        from messages m left join pipelines p on p.id = m.pipeline_id
        where m.conversation_id = ${conversationId} and m.role = 'user' and m.handled_at is null
        order by m.created_at desc, m.id desc limit 1`.pipe(
        Effect.map((rows) =>
          Option.map(Option.fromNullable(rows[0]), (row) => ({
            latestMessageId: row.id,
            latestAt: new Date(row.created_at),
            debounceMs: row.reply_debounce_ms ?? 0
          }))
        ),
        Effect.orDie
      )

    /** Every unanswered contact message up to `upToMessageId` is taken by this turn. */
    const take = (conversationId: string, upToMessageId: string) =>
      sql`
        update messages set handled_at = now()
        where conversation_id = ${conversationId} and role = 'user' and handled_at is null
          and (created_at, id) <= (select created_at, id from messages where id = ${upToMessageId})`.pipe(Effect.orDie)

    const orphaned = (olderThanMs: number) =>
      sql<{ conversation_id: string; message_id: string }>`
        select conversation_id::text as conversation_id, max(id) as message_id
        from messages
        where role = 'user' and handled_at is null and created_at < now() - make_interval(secs => ${olderThanMs / 1000})
        group by conversation_id limit 500`.pipe(
        Effect.map((rows) => rows.map((r) => ({ conversationId: r.conversation_id, messageId: r.message_id }))),
        Effect.orDie
      )

    return ConversationTurns.of({ pending, respond: take, orphaned })
  })
)
