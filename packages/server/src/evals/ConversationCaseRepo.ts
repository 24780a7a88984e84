/**
 * What "save as eval case" reads of a real conversation: the contact's messages, who the contact is
 * (to anonymise), where the opportunity started and where it is, its context, the actions that fired and
 * whether a person was asked for. One statement.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"

export const ConversationCaseRow = Schema.Struct({
  conversation_id: Schema.Number,
  workspace_id: Schema.Number,
  is_eval: Schema.Boolean,
  opportunity_id: Schema.NullOr(Schema.Number),
  pipeline_id: Schema.NullOr(Schema.Number),
  first_stage_id: Schema.NullOr(Schema.Number),
  stage_name: Schema.NullOr(Schema.String),
  status: Schema.NullOr(Schema.String),
  context: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  contact_name: Schema.NullOr(Schema.String),
  contact_email: Schema.NullOr(Schema.String),
  contact_phone: Schema.NullOr(Schema.String),
  handoff_requested: Schema.Boolean,
  actions: Schema.Array(Schema.String),
  messages: Schema.Array(Schema.String)
})
export type ConversationCaseRow = typeof ConversationCaseRow.Type

export class ConversationCaseRepo
  extends Effect.Service<ConversationCaseRepo>()("@parley/server/ConversationCaseRepo", {
    effect: Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const read = SqlSchema.findOne({
        Request: Schema.Struct({ workspaceIds: Schema.Array(Schema.Number), id: Schema.Number }),
        Result: ConversationCaseRow,
        execute: ({ id, workspaceIds }) =>
          sql`
          select c.id as conversation_id, c.workspace_id, c.is_eval, o.id as opportunity_id, o.pipeline_id,
                 coalesce((select e.stage_id from stage_entries e where e.opportunity_id = o.id order by e.id limit 1), o.stage_id) as first_stage_id,
                 s.name as stage_name, o.status, o.context,
                 coalesce(ct.custom_name, ct.name) as contact_name, coalesce(ct.custom_email, ct.email) as contact_email,
                 coalesce(ct.custom_phone, ct.phone) as contact_phone,
                 exists (select 1 from handoff_events h where h.conversation_id = c.id and h.action = 'request') as handoff_requested,
                 coalesce((select json_agg(distinct a.name) from action_runs r join actions a on a.id = r.action_id
                           where r.opportunity_id = o.id and r.status = 'succeeded'), '[]') as actions,
                 coalesce((select json_agg(m.message order by m.created_at, m.id) from messages m
                           where m.conversation_id = c.id and m.role = 'user' and coalesce(m.message, '') <> ''), '[]') as messages
          from conversations c
          join contacts ct on ct.id = c.contact_id
          left join lateral (
            select o.* from conversation_opportunity co join opportunities o on o.id = co.opportunity_id
            where co.conversation_id = c.id order by o.created_at desc, o.id desc limit 1
          ) o on true
          left join stages s on s.id = o.stage_id
          where c.id = ${id} and c.workspace_id in ${sql.in(workspaceIds)}`
      })

      return { read: (workspaceIds: ReadonlyArray<number>, id: number) => Effect.orDie(read({ workspaceIds, id })) }
    })
  })
{}
