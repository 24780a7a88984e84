/**
 * What the stage-entry consumer reads (rows typed with SqlSchema). The entries themselves are written by
 * OpportunitiesRepo, the one owner of `stage_entries` (recorded with a stage move, consumed once).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { ConversationId, MessageTemplate } from "@parley/domain"
import { Effect, Schema } from "effect"

/**
 * A stage entry with its stage's opening message settings as the pipeline runs (docs/versions.md), where the
 * opportunity is now and its conversation. None when the running configuration lacks the stage.
 */
export const OpeningEntryRow = Schema.Struct({
  stage_id: Schema.Number,
  cause: Schema.String,
  is_opening_message: Schema.Boolean,
  opening_message_type: Schema.NullOr(Schema.Literal("static", "ai_generated")),
  static_opening_message: Schema.NullOr(Schema.String),
  opening_template: Schema.NullOr(MessageTemplate),
  current_stage_id: Schema.Number,
  conversation_id: Schema.NullOr(Schema.Number)
})

/** The newest conversation of the entry's opportunity. */
const latestConversation = (sql: SqlClient.SqlClient, cast: "" | "::text") =>
  sql`(select co.conversation_id${
    sql.literal(cast)
  } from conversation_opportunity co where co.opportunity_id = e.opportunity_id
       order by co.created_at desc limit 1)`

export class StageEntryRepo extends Effect.Service<StageEntryRepo>()("@parley/server/StageEntryRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const openingEntry = SqlSchema.findOne({
      Request: Schema.Number,
      Result: OpeningEntryRow,
      execute: (entryId) =>
        sql`
          select e.stage_id, e.cause, s.is_opening_message, s.opening_message_type, s.static_opening_message,
                 s.opening_template, o.stage_id as current_stage_id, ${latestConversation(sql, "")} as conversation_id
          from stage_entries e join opportunities o on o.id = e.opportunity_id
          join lateral parley_live_stages(e.pipeline_id, o.config_version_id) s on s.id = e.stage_id
          where e.id = ${entryId}`
    })

    const contactWrote = SqlSchema.findAll({
      Request: Schema.Number,
      Result: Schema.Struct({ one: Schema.Number }),
      execute: (conversationId) =>
        sql`select 1 as one from messages where conversation_id = ${conversationId} and role = 'user' limit 1`
    })

    /** Entries not yet consumed, oldest first, with their opportunity's newest conversation. */
    const unconsumed = SqlSchema.findAll({
      Request: Schema.Number,
      Result: Schema.Struct({ entry_id: Schema.Number, conversation_id: Schema.NullOr(Schema.String) }),
      execute: (limit) =>
        sql`select e.id as entry_id, ${latestConversation(sql, "::text")} as conversation_id
            from stage_entries e where e.consumed_at is null order by e.id limit ${limit}`
    })

    /** The conversations a won or lost entry resolves: those of its opportunity a person was asked for or has. */
    const resolvedConversations = SqlSchema.findAll({
      Request: Schema.Number,
      Result: Schema.Struct({ id: ConversationId }),
      execute: (entryId) =>
        sql`
          select c.id from stage_entries e
          join stages s on s.id = e.stage_id and s.nature in ('won', 'lost')
          join conversation_opportunity co on co.opportunity_id = e.opportunity_id
          join conversations c on c.id = co.conversation_id and c.handoff_state <> 'ai'
          where e.id = ${entryId}`
    })

    return {
      openingEntry: (entryId: number) => Effect.orDie(openingEntry(entryId)),
      contactWrote: (conversationId: number) =>
        Effect.map(Effect.orDie(contactWrote(conversationId)), (rows) => rows.length > 0),
      unconsumed: (limit: number) => Effect.orDie(unconsumed(limit)),
      resolvedConversations: (entryId: number) =>
        Effect.map(Effect.orDie(resolvedConversations(entryId)), (rows) => rows.map((r) => r.id))
    }
  })
}) {}
