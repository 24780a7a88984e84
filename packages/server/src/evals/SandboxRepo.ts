/**
 * The SQL of a case's sandboxed conversation (docs/evals.md): the contact's messages written as the
 * receiver writes them, whether the engine has anything left to do for the conversation, and what the
 * conversation came to. The contact, opportunity and conversation themselves are OpportunitiesRepo's.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { ConversationId, EvalRecordedAction, EvalTranscriptEntry, OpportunityId, StageId } from "@parley/domain"
import { Effect, Schema } from "effect"
import { ModelRow } from "../engine/TurnRows.js"
import { modelJson } from "../engine/TurnSnapshotSql.js"
import * as MessageWrites from "../tables/MessageWrites.js"
import * as WorkspaceWrites from "../tables/WorkspaceWrites.js"

const World = Schema.Struct({ conversationId: ConversationId, opportunityId: OpportunityId })
export type World = typeof World.Type

export const TranscriptRow = Schema.Struct({ ...EvalTranscriptEntry.fields, id: Schema.String })

export const StateRow = Schema.Struct({
  stage_id: StageId,
  stage_name: Schema.String,
  status: Schema.String,
  handoff_requested: Schema.Boolean
})

export const PipelineModelRow = Schema.Struct({ model: ModelRow, debounce_ms: Schema.Number })

export class SandboxRepo extends Effect.Service<SandboxRepo>()("@parley/server/SandboxRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** A contact message with the conversation's opportunity, stage and pipeline, as the receiver stores one. */
    const contactMessage = (r: { id: string; conversationId: number; text: string }) =>
      sql`
        ${
        MessageWrites.insert(sql, {
          id: r.id,
          workspace_id: sql`c.workspace_id`,
          conversation_id: sql`c.id`,
          opportunity_id: sql`o.id`,
          contact_id: sql`c.contact_id`,
          channel_id: null,
          stage_id: sql`o.stage_id`,
          pipeline_id: sql`o.pipeline_id`,
          role: "user",
          status: "received",
          message: r.text,
          call_type: "eval",
          is_manual: false
        })
      }
        from conversations c
        join conversation_opportunity co on co.conversation_id = c.id join opportunities o on o.id = co.opportunity_id
        where c.id = ${r.conversationId} and c.is_eval`

    /**
     * Nothing left for the engine to do: every contact message handled (replied to, or skipped with a
     * reason), every reply delivered, every stage entry consumed and the conversation entity's requests
     * (opening, handoff, followup) processed, every action run finished, every handoff event dispatched.
     */
    const idle = SqlSchema.single({
      Request: World,
      Result: Schema.Struct({ idle: Schema.Boolean }),
      execute: ({ conversationId: c, opportunityId: o }) =>
        sql`
          select not exists (select 1 from messages where conversation_id = ${c} and role = 'user' and handled_at is null)
             and not exists (select 1 from messages where conversation_id = ${c} and status = 'ai_generated')
             and not exists (select 1 from stage_entries where opportunity_id = ${o} and consumed_at is null)
             and not exists (select 1 from cluster_messages where entity_type = 'Conversation' and entity_id = ${
          String(c)
        } and not processed)
             and not exists (select 1 from action_runs where (opportunity_id = ${o} or conversation_id = ${c}) and status in ('pending', 'sending'))
             and not exists (select 1 from handoff_events where conversation_id = ${c} and dispatched_at is null) as idle`
    })

    const transcript = SqlSchema.findAll({
      Request: Schema.Number,
      Result: TranscriptRow,
      execute: (conversationId) =>
        sql`
          select id, case when role = 'user' then 'contact' when is_manual then 'operator' else 'agent' end as role, message as text,
                 call_type, status, case when role = 'user' and handled_reason <> 'replied' then handled_reason end as no_reply_reason,
                 cost_for_user::float8 as cost, created_at
          from messages where conversation_id = ${conversationId} order by created_at, id`
    })

    const actions = SqlSchema.findAll({
      Request: World,
      Result: EvalRecordedAction,
      execute: ({ conversationId, opportunityId }) =>
        sql`
          select a.name, r.trigger, r.status, r.request_method as method, r.request_url as url,
                 case when r.request_body is null then null
                      when left(ltrim(r.request_body), 1) in ('{', '[') then r.request_body::jsonb
                      else to_jsonb(r.request_body) end as payload, r.reason
          from action_runs r join actions a on a.id = r.action_id
          where r.opportunity_id = ${opportunityId} or r.conversation_id = ${conversationId}
          order by r.id`
    })

    const state = SqlSchema.single({
      Request: World,
      Result: StateRow,
      execute: ({ conversationId, opportunityId }) =>
        sql`
          select o.stage_id, s.name as stage_name, o.status,
                 exists (select 1 from handoff_events e where e.conversation_id = ${conversationId} and e.action = 'request') as handoff_requested
          from opportunities o join stages s on s.id = o.stage_id where o.id = ${opportunityId}`
    })

    /** The pipeline's own model (a judged criterion is scored by it) and its reply debounce. */
    const pipelineModel = SqlSchema.single({
      Request: Schema.Struct({ pipelineId: Schema.Number, override: Schema.Number }),
      Result: PipelineModelRow,
      execute: ({ override, pipelineId }) =>
        sql`
          select ${modelJson(sql)} as model, p.reply_debounce_ms as debounce_ms
          from parley_live_pipeline(${pipelineId}, ${override}) p
          join ai_models am on am.id = p.ai_model_id join ai_providers pr on pr.id = am.ai_provider_id`
    })

    /**
     * A judged criterion's model cost, charged like a reply's: only when the credits cover it (atomic under
     * concurrent charges, which wait for the row's lock and then see the new balance).
     */
    const charge = (workspaceId: number, cost: number) =>
      sql`${WorkspaceWrites.chargeCredits(sql, workspaceId, cost, { coveredOnly: true })} returning id`

    return {
      contactMessage: (r: { id: string; conversationId: number; text: string }) =>
        Effect.orDie(Effect.asVoid(contactMessage(r))),
      idle: (world: World) => Effect.map(Effect.orDie(idle(world)), (r) => r.idle),
      transcript: (conversationId: number) => Effect.orDie(transcript(conversationId)),
      actions: (world: World) => Effect.orDie(actions(world)),
      state: (world: World) => Effect.orDie(state(world)),
      pipelineModel: (pipelineId: number, override: number) => Effect.orDie(pipelineModel({ pipelineId, override })),
      /** Whether the cost was charged (nothing to charge counts as charged). */
      charge: (workspaceId: number, cost: number) =>
        cost <= 0
          ? Effect.succeed(true)
          : Effect.orDie(Effect.map(charge(workspaceId, cost), (rows) => rows.length > 0))
    }
  })
}) {}
