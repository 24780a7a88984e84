/**
 * The handoff columns of `conversations` and the `handoff_events` history (migration 0017): their only
 * writer. A move reads the conversation `for update`, so two operators taking the same conversation at
 * once are serialised, and the second is told it no longer applies.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import {
  ConversationId,
  HandoffActor,
  HandoffEvent,
  HandoffEventAction,
  type HandoffRequester,
  HandoffState,
  HandoffTimeoutAction,
  UserId,
  WorkspaceId
} from "@parley/domain"
import { Effect, Option, Schema } from "effect"
import * as ConversationWrites from "../tables/ConversationWrites.js"
import { joinConversationPipeline } from "./ConversationPipeline.js"

/** A conversation's handoff as a move reads it, with its pipeline's settings. */
export const Locked = Schema.Struct({
  id: Schema.Number,
  workspace_id: Schema.Number,
  state: HandoffState,
  assignee_id: Schema.NullOr(UserId),
  timeout_seconds: Schema.NullOr(Schema.Number),
  timeout_action: HandoffTimeoutAction,
  /** the newest contact message: a hand-back records it so no rule hands off again for it */
  newest_contact_message: Schema.NullOr(Schema.String)
})
export type Locked = typeof Locked.Type

/** The columns a move sets; `undefined` leaves one as it is. */
export interface HandoffColumns {
  readonly state: HandoffState
  readonly status: "active" | "paused"
  readonly requested_at?: "now" | null
  readonly requested_by?: HandoffRequester | null
  readonly reason?: string | null
  readonly summary?: string | null
  readonly assignee_id?: number | null
  readonly taken_at?: "now" | null
  readonly returned_at?: "now" | null
  readonly return_note?: string | null
  readonly returned_upto?: string | null
  /** seconds from now, or null to clear */
  readonly due_in_seconds?: number | null
}

/** A transition as `insertEvent` writes it to `handoff_events`. */
export const EventRow = Schema.Struct({
  workspace_id: Schema.Number,
  conversation_id: Schema.Number,
  action: HandoffEventAction,
  from_state: HandoffState,
  to_state: HandoffState,
  actor: HandoffActor,
  user_id: Schema.NullOr(Schema.Number),
  assignee_id: Schema.NullOr(Schema.Number),
  reason: Schema.NullOr(Schema.String),
  note: Schema.NullOr(Schema.String),
  bridge: Schema.NullOr(Schema.Literal("first", "second")),
  /** the bridge's text when the request brings its own (a failed reply's fallback message) */
  bridge_text: Schema.NullOr(Schema.String)
})
export type EventRow = typeof EventRow.Type

/** An event not yet dispatched, with whether its conversation is an eval's. */
const Undispatched = Schema.Struct({
  id: Schema.Number,
  workspace_id: Schema.Number,
  conversation_id: Schema.Number,
  action: HandoffEventAction,
  from_state: Schema.String,
  to_state: Schema.String,
  actor: Schema.String,
  user_id: Schema.NullOr(Schema.Number),
  assignee_id: Schema.NullOr(Schema.Number),
  reason: Schema.NullOr(Schema.String),
  note: Schema.NullOr(Schema.String),
  bridge: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  is_eval: Schema.Boolean
})

export class HandoffRepo extends Effect.Service<HandoffRepo>()("@parley/server/HandoffRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pipelineOfConversation = joinConversationPipeline(sql)

    const lock = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.Number, workspaceIds: Schema.Array(Schema.Number) }),
      Result: Locked,
      execute: ({ id, workspaceIds }) =>
        sql`
          select c.id, c.workspace_id, c.handoff_state as state, c.handoff_assignee_id as assignee_id,
                 p.handoff_timeout_seconds as timeout_seconds, coalesce(p.handoff_timeout_action, 'return') as timeout_action,
                 (select m.id from messages m where m.conversation_id = c.id and m.role = 'user'
                  order by m.created_at desc, m.id desc limit 1) as newest_contact_message
          from conversations c
          ${pipelineOfConversation}
          where c.id = ${id} and c.workspace_id in ${sql.in(workspaceIds)}
          for update of c`
    })

    const workspaceOf = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ workspace_id: WorkspaceId }),
      execute: (id) => sql`select workspace_id from conversations where id = ${id}`
    })

    const stateOf = SqlSchema.single({
      Request: Schema.Number,
      Result: Schema.Struct({ state: HandoffState }),
      execute: (id) => sql`select handoff_state as state from conversations where id = ${id}`
    })

    const events = SqlSchema.findAll({
      Request: Schema.Number,
      Result: HandoffEvent,
      execute: (conversationId) =>
        sql`
          select id, action, from_state, to_state, actor, user_id, assignee_id, reason, note, created_at
          from handoff_events where conversation_id = ${conversationId} order by id`
    })

    const update = (id: number, c: HandoffColumns) => {
      const at = (v: "now" | null | undefined) => (v === undefined ? undefined : v === null ? null : sql`now()`)
      const due = c.due_in_seconds
      return ConversationWrites.update(sql, {
        handoff_state: c.state,
        status: c.status,
        handoff_requested_at: at(c.requested_at),
        handoff_requested_by: c.requested_by,
        handoff_reason: c.reason,
        handoff_summary: c.summary,
        handoff_assignee_id: c.assignee_id,
        handoff_taken_at: at(c.taken_at),
        handoff_returned_at: at(c.returned_at),
        handoff_return_note: c.return_note,
        handoff_returned_upto: c.returned_upto,
        handoff_due_at: due === undefined || due === null ? due : sql`now() + ${due}::int * interval '1 second'`,
        updated_at: sql`now()`
      }, sql`where id = ${id}`).pipe(Effect.asVoid)
    }

    const insertEvent = SqlSchema.single({
      Request: EventRow,
      Result: Schema.Struct({ id: Schema.Number }),
      execute: (e) =>
        sql`
          insert into handoff_events (workspace_id, conversation_id, action, from_state, to_state, actor, user_id, assignee_id,
                                      reason, note, bridge, bridge_text)
          values (${e.workspace_id}, ${e.conversation_id}, ${e.action}, ${e.from_state}, ${e.to_state}, ${e.actor}, ${e.user_id},
                  ${e.assignee_id}, ${e.reason}, ${e.note}, ${e.bridge}, ${e.bridge_text})
          returning id`
    })

    const memberships = SqlSchema.single({
      Request: Schema.Struct({ userId: Schema.Number, workspaceId: Schema.Number }),
      Result: Schema.Struct({ n: Schema.Number }),
      execute: ({ userId, workspaceId }) =>
        sql`select count(*)::int as n from memberships where user_id = ${userId} and workspace_id = ${workspaceId}`
    })

    const undispatched = SqlSchema.findAll({
      Request: Schema.Number,
      Result: Undispatched,
      execute: (limit) =>
        sql`
          select e.id, e.workspace_id, e.conversation_id, e.action, e.from_state, e.to_state, e.actor, e.user_id, e.assignee_id, e.reason,
                 e.note, e.bridge, e.created_at, c.is_eval
          from handoff_events e join conversations c on c.id = e.conversation_id
          where e.dispatched_at is null order by e.id limit ${limit}`
    })

    const dueTimeouts = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Schema.Struct({ id: ConversationId, action: HandoffTimeoutAction }),
      execute: () =>
        sql`
          select c.id, coalesce(p.handoff_timeout_action, 'return') as action
          from conversations c
            ${pipelineOfConversation}
          where c.handoff_due_at <= now() and c.handoff_state = 'waiting'
          order by c.handoff_due_at limit 100`
    })

    const returnedUpto = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ upto: Schema.NullOr(Schema.String) }),
      execute: (conversationId) =>
        sql`select handoff_returned_upto as upto from conversations where id = ${conversationId}`
    })

    return {
      lock: (id: ConversationId, workspaceIds: ReadonlyArray<WorkspaceId>) =>
        lock({ id, workspaceIds }).pipe(Effect.orDie),
      /** The conversation's own workspace, for a move made by the system. */
      workspaceOf: (id: ConversationId) =>
        workspaceOf(id).pipe(Effect.map(Option.map((r) => r.workspace_id)), Effect.orDie),
      /** The conversation's handoff state as it is now; the conversation must exist. */
      stateOf: (id: ConversationId) => stateOf(id).pipe(Effect.map((r) => r.state), Effect.orDie),
      update: (id: number, c: HandoffColumns) => Effect.orDie(update(id, c)),
      insertEvent: (e: EventRow) => insertEvent(e).pipe(Effect.map((r) => r.id), Effect.orDie),
      events: (conversationId: number) => Effect.orDie(events(conversationId)),
      isMember: (userId: number, workspaceId: number) =>
        memberships({ userId, workspaceId }).pipe(Effect.map((r) => r.n > 0), Effect.orDie),
      /**
       * The summary of a request, on the handoff and appended to the notes, once (while no later request replaced it).
       */
      storeSummary: (eventId: number, summary: string) =>
        ConversationWrites.update(
          sql,
          {
            handoff_summary: summary,
            notes: sql`notes || array[${`Handoff summary: ${summary}`}]::text[]`,
            updated_at: sql`now()`
          },
          sql`where handoff_summary is null and id = (select conversation_id from handoff_events where id = ${eventId})`
        ).pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      /** Events not yet dispatched (bridge, summary and socket events), oldest first. */
      undispatched: (limit: number) => Effect.orDie(undispatched(limit)),
      markDispatched: (eventId: number) =>
        sql`update handoff_events set dispatched_at = now() where id = ${eventId}`.pipe(Effect.asVoid, Effect.orDie),
      /** Waiting conversations whose timeout ran out, with what the pipeline says to do. */
      dueTimeouts: Effect.orDie(dueTimeouts(undefined)),
      /** Whether `messageId` is at or before the newest contact message when an operator last handed back. */
      handedBackAfter: (conversationId: number, messageId: string) =>
        returnedUpto(conversationId).pipe(
          Effect.map(Option.flatMap((r) => Option.fromNullable(r.upto))),
          Effect.map(Option.exists((upto) => messageId <= upto)),
          Effect.orDie
        )
    }
  })
}) {}
