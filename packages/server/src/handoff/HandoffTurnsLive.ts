/**
 * The entity's side of a handoff event (the `HandoffTurns` port): what the event asks for (a bridge
 * message, a summary), storing the bridge once per event (`messages.handoff_event_id` is unique), and
 * storing the summary (HandoffRepo) on the handoff and in the conversation's notes.
 */
import { SqlClient } from "@effect/sql"
import {
  ConversationTurns,
  DEFAULT_BRIDGE_TEXT,
  DEFAULT_SECOND_BRIDGE_TEXT,
  type HandoffDue,
  HandoffTurns,
  type ReplyDraft,
  ulid
} from "@parley/domain"
import { joinConversationPipeline } from "./ConversationPipeline.js"
import { Effect, Layer, Option } from "effect"
import { HandoffRepo } from "./HandoffRepo.js"

interface EventRow {
  readonly id: number
  readonly conversation_id: number
  readonly workspace_id: number
  readonly action: string
  readonly bridge: "first" | "second" | null
  readonly bridge_mode: "static" | "ai_generated" | null
  readonly bridge_text: string | null
  readonly bridge_message: string | null
  readonly latest: boolean
  readonly summary_due: boolean
}

export const HandoffTurnsLive = Layer.effect(
  HandoffTurns,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pipelineOfConversation = joinConversationPipeline(sql)
    const turns = yield* ConversationTurns
    const repo = yield* HandoffRepo

    const event = (eventId: number) =>
      sql<EventRow>`
        select e.id, e.conversation_id, e.workspace_id, e.action, e.bridge, p.handoff_bridge_mode as bridge_mode,
               p.handoff_bridge_text as bridge_text,
               (select m.id from messages m where m.handoff_event_id = e.id) as bridge_message,
               -- a bridge for a wait that is over (taken, handed back) would tell the contact the wrong thing
               not exists (select 1 from handoff_events later where later.conversation_id = e.conversation_id
                           and later.id > e.id) as latest,
               (e.action = 'request' and c.handoff_state = 'waiting' and c.handoff_summary is null
                and not exists (select 1 from handoff_events later where later.conversation_id = e.conversation_id
                                and later.action = 'request' and later.id > e.id)) as summary_due
        from handoff_events e
        join conversations c on c.id = e.conversation_id
          ${pipelineOfConversation}
        where e.id = ${eventId}`.pipe(Effect.map((rows) => Option.fromNullable(rows[0])), Effect.orDie)

    const due = (eventId: number) =>
      Effect.gen(function*() {
        const found = yield* event(eventId)
        if (Option.isNone(found)) return Option.none<HandoffDue>()
        const e = found.value
        const conversationId = String(e.conversation_id)
        const bridgeDue = e.bridge !== null && e.bridge_message === null && e.latest
        const context = bridgeDue || e.summary_due ? yield* turns.context(conversationId) : Option.none()
        const fallback = e.bridge === "second" ? DEFAULT_SECOND_BRIDGE_TEXT : e.bridge_text ?? DEFAULT_BRIDGE_TEXT
        const bridge: HandoffDue["bridge"] = !bridgeDue
          ? null
          : e.bridge_mode === "ai_generated" && Option.isSome(context)
          ? { kind: "ai_generated", second: e.bridge === "second", fallback, context: context.value }
          : { kind: "static", text: fallback }
        return Option.some<HandoffDue>({ conversationId, bridge, summary: e.summary_due ? Option.getOrNull(context) : null })
      })

    /** The bridge, as an agent message of the conversation (its opportunity, stage and channel), charged like any. */
    const commitBridge = (eventId: number, draft: ReplyDraft) =>
      sql.withTransaction(Effect.gen(function*() {
        const earlier = yield* sql<{ id: string }>`select id from messages where handoff_event_id = ${eventId}`
        if (earlier[0] !== undefined) return earlier[0].id
        const id = ulid()
        yield* sql`
          insert into messages (id, workspace_id, conversation_id, opportunity_id, contact_id, channel_id, stage_id, pipeline_id,
                                role, status, message, external_chat_id, call_type, is_manual, cost_for_user, ai_model_id, model,
                                input_tokens, output_tokens, handoff_event_id)
          select ${id}, c.workspace_id, c.id, o.id, c.contact_id, c.channel_id, o.stage_id, coalesce(o.pipeline_id, ch.pipeline_id),
                 'assistant', 'ai_generated', ${draft.text}, c.external_chat_id, 'handoff_bridge', false, ${draft.cost},
                 ${draft.model?.id ?? null}, ${draft.model?.model ?? null}, ${draft.inputTokens}, ${draft.outputTokens}, ${eventId}
          from handoff_events e
          join conversations c on c.id = e.conversation_id
          left join channels ch on ch.id = c.channel_id
          left join lateral (
            select o.id, o.stage_id, o.pipeline_id from conversation_opportunity co join opportunities o on o.id = co.opportunity_id
            where co.conversation_id = c.id order by o.created_at desc, o.id desc limit 1
          ) o on true
          where e.id = ${eventId}`
        if (draft.cost > 0) {
          yield* sql`update workspaces set credits = credits - ${draft.cost}, updated_at = now()
                     where id = (select workspace_id from handoff_events where id = ${eventId})`
        }
        return id
      })).pipe(Effect.orDie)

    return HandoffTurns.of({ due, commitBridge, storeSummary: repo.storeSummary })
  })
).pipe(Layer.provide(HandoffRepo.Default))
