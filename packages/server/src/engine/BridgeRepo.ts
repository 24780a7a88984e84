/**
 * The statements of a handoff event's dispatch (HandoffTurnsLive): what the event still asks for, and its
 * bridge message, stored once per event (`messages.handoff_event_id` is unique).
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { MessageTemplate, type TemplateSend } from "@parley/domain"
import { Effect, Option, Schema } from "effect"
import { windowColumns } from "../channels/ServiceWindow.js"
import { joinConversationPipeline } from "../handoff/ConversationPipeline.js"
import * as MessageWrites from "../tables/MessageWrites.js"

/** A handoff event as its dispatch reads it: what it asks for (a bridge, a summary) and whether that is still due. */
export const DueEvent = Schema.Struct({
  id: Schema.Number,
  conversation_id: Schema.Number,
  workspace_id: Schema.Number,
  action: Schema.String,
  bridge: Schema.NullOr(Schema.Literal("first", "second")),
  bridge_mode: Schema.NullOr(Schema.Literal("static", "ai_generated")),
  bridge_text: Schema.NullOr(Schema.String),
  bridge_message: Schema.NullOr(Schema.String),
  /** the pipeline's template for a bridge after a provider's window closed */
  bridge_template: Schema.NullOr(MessageTemplate),
  channel_kind: Schema.NullOr(Schema.String),
  contact_sent_at_ms: Schema.NullOr(Schema.Number),
  service_window_ms: Schema.NullOr(Schema.Number),
  latest: Schema.Boolean,
  summary_due: Schema.Boolean
})
export type DueEvent = typeof DueEvent.Type

/** A bridge message as stored: its text and what producing it cost. */
export interface BridgeMessage {
  readonly id: string
  readonly eventId: number
  readonly text: string
  readonly cost: number
  readonly aiModelId: number | null
  readonly model: string | null
  readonly inputTokens: number
  readonly outputTokens: number
  readonly template: TemplateSend | null
}

export class BridgeRepo extends Effect.Service<BridgeRepo>()("@parley/server/BridgeRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pipelineOfConversation = joinConversationPipeline(sql)

    const dueEvent = SqlSchema.findOne({
      Request: Schema.Number,
      Result: DueEvent,
      execute: (eventId) =>
        sql`
          select e.id, e.conversation_id, e.workspace_id, e.action, e.bridge,
                 -- a request that brings its own text (a failed reply's fallback) says it as written
                 case when e.bridge_text is null then p.handoff_bridge_mode else 'static' end as bridge_mode,
                 coalesce(e.bridge_text, p.handoff_bridge_text) as bridge_text,
                 (select m.id from messages m where m.handoff_event_id = e.id) as bridge_message,
                 p.handoff_bridge_template as bridge_template, ch.kind as channel_kind,
                 ${windowColumns(sql)},
                 -- a bridge for a wait that is over (taken, handed back) would tell the contact the wrong thing
                 not exists (select 1 from handoff_events later where later.conversation_id = e.conversation_id
                             and later.id > e.id) as latest,
                 (e.action = 'request' and c.handoff_state = 'waiting' and c.handoff_summary is null
                  and not exists (select 1 from handoff_events later where later.conversation_id = e.conversation_id
                                  and later.action = 'request' and later.id > e.id)) as summary_due
          from handoff_events e
          join conversations c on c.id = e.conversation_id
            ${pipelineOfConversation}
          where e.id = ${eventId}`
    })

    const bridgeOf = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ id: Schema.String }),
      execute: (eventId) => sql`select id from messages where handoff_event_id = ${eventId}`
    })

    /**
     * The bridge as an agent message of the conversation (its opportunity, stage and channel); the workspace to
     * charge, or nothing when the event is gone (its conversation deleted meanwhile).
     */
    const insertBridge = SqlSchema.findOne({
      Request: Schema.Struct({
        id: Schema.String,
        eventId: Schema.Number,
        text: Schema.String,
        cost: Schema.Number,
        aiModelId: Schema.NullOr(Schema.Number),
        model: Schema.NullOr(Schema.String),
        inputTokens: Schema.Number,
        outputTokens: Schema.Number,
        template: Schema.NullOr(Schema.Unknown)
      }),
      Result: Schema.Struct({ workspace_id: Schema.Number }),
      execute: (b) =>
        sql`
          ${
          MessageWrites.insert(sql, {
            id: b.id,
            workspace_id: sql`c.workspace_id`,
            conversation_id: sql`c.id`,
            opportunity_id: sql`o.id`,
            contact_id: sql`c.contact_id`,
            channel_id: sql`c.channel_id`,
            stage_id: sql`o.stage_id`,
            pipeline_id: sql`coalesce(o.pipeline_id, ch.pipeline_id)`,
            role: "assistant",
            status: "ai_generated",
            message: b.text,
            external_chat_id: sql`c.external_chat_id`,
            call_type: "handoff_bridge",
            is_manual: false,
            cost_for_user: b.cost,
            ai_model_id: b.aiModelId,
            model: b.model,
            input_tokens: b.inputTokens,
            output_tokens: b.outputTokens,
            handoff_event_id: b.eventId,
            template: b.template === null ? null : sql`${JSON.stringify(b.template)}::jsonb`
          })
        }
          from handoff_events e
          join conversations c on c.id = e.conversation_id
          left join channels ch on ch.id = c.channel_id
          left join lateral (
            select o.id, o.stage_id, o.pipeline_id from conversation_opportunity co join opportunities o on o.id = co.opportunity_id
            where co.conversation_id = c.id order by o.created_at desc, o.id desc limit 1
          ) o on true
          where e.id = ${b.eventId}
          returning workspace_id`
    })

    return {
      /** A handoff event with what is still due for it; nothing when the event is gone. */
      dueEvent: (eventId: number) => Effect.orDie(dueEvent(eventId)),
      /**
       * The bridge message already stored for an event, if any (one per event: `messages.handoff_event_id` is unique).
       */
      bridgeOf: (eventId: number) => bridgeOf(eventId).pipe(Effect.map(Option.map((r) => r.id)), Effect.orDie),
      insertBridge: (b: BridgeMessage) =>
        insertBridge(b).pipe(Effect.map(Option.map((r) => r.workspace_id)), Effect.orDie)
    }
  })
}) {}
