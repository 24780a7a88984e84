/**
 * What a turn's handoff rules read (docs/handoff.md): the pipeline's failure rule with the conversation's
 * recent failed replies, and the texts of the contact messages a turn answers.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, flow, Schema } from "effect"

/**
 * The pipeline's failure settings: `handoff_on_failure` with its `fallback_message`, and
 * `handoff_after_failures` with how many of that many newest AI replies failed.
 */
export const FailureRule = Schema.Struct({
  on_failure: Schema.Boolean,
  fallback_message: Schema.NullOr(Schema.String),
  limit: Schema.NullOr(Schema.Number),
  failed: Schema.Number
})
export type FailureRule = typeof FailureRule.Type

export class HandoffRulesRepo extends Effect.Service<HandoffRulesRepo>()("@parley/server/HandoffRulesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** None unless the conversation is with the agent (`handoff_state = 'ai'`) on a channel with a pipeline. */
    const failureRule = SqlSchema.findOne({
      Request: Schema.String,
      Result: FailureRule,
      execute: (conversationId) =>
        sql`
        select p.handoff_on_failure as on_failure, p.fallback_message, p.handoff_after_failures as limit,
               (select count(*)::int from (
                  select status from messages where conversation_id = c.id and role = 'assistant' and call_type = 'ai'
                  order by created_at desc, id desc limit coalesce(p.handoff_after_failures, 0)) recent
                where recent.status = 'failed') as failed
        from conversations c join channels ch on ch.id = c.channel_id
        join lateral parley_live_pipeline(ch.pipeline_id) p on true
        where c.id = ${conversationId} and c.handoff_state = 'ai'`
    })

    /** The unhandled contact messages up to `upTo`. */
    const turnTexts = SqlSchema.findAll({
      Request: Schema.Struct({ conversationId: Schema.String, upTo: Schema.String }),
      Result: Schema.Struct({ message: Schema.NullOr(Schema.String) }),
      execute: ({ conversationId, upTo }) =>
        sql`
      select message from messages
      where conversation_id = ${conversationId} and role = 'user' and handled_at is null
        and (created_at, id) <= (select created_at, id from messages where id = ${upTo})`
    })

    return {
      failureRule: flow(failureRule, Effect.orDie),
      turnTexts: (conversationId: string, upTo: string) =>
        turnTexts({ conversationId, upTo }).pipe(Effect.map((rows) => rows.map((r) => r.message)), Effect.orDie)
    }
  })
}) {}
