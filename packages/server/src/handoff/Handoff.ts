/**
 * The handoff state machine (docs/handoff.md), the same for every surface: REST and MCP moves by
 * operators, the agent's own request, rules, timeouts and resolutions. A move checks the current state
 * (`handoffTarget`), writes the new one, its `status` and a `handoff_events` row in one transaction;
 * what follows (bridge message, summary, socket events) is the event dispatcher's (HandoffEvents.ts).
 */
import { SqlClient } from "@effect/sql"
import {
  type ConversationId,
  ConversationNotFound,
  CurrentActor,
  HandoffConflict,
  type HandoffMove,
  type HandoffState,
  handoffTarget,
  statusOfHandoff,
  Unprocessable,
  type WorkspaceId
} from "@parley/domain"
import { Effect, Option } from "effect"
import { someOrFail } from "../util/Effects.js"
import { type HandoffColumns, HandoffRepo, type Locked } from "./HandoffRepo.js"

/** The columns a move sets, from the conversation as locked. */
const columnsOf = (locked: Locked, move: HandoffMove, to: HandoffState): HandoffColumns => {
  const status = statusOfHandoff(to)
  switch (move.action) {
    case "request":
      return {
        state: to,
        status,
        requested_at: "now",
        requested_by: move.actor,
        reason: move.reason,
        summary: null,
        assignee_id: null,
        taken_at: null,
        return_note: null,
        due_in_seconds: locked.timeout_seconds
      }
    case "take":
      return { state: to, status, assignee_id: move.userId, taken_at: "now", due_in_seconds: null }
    case "assign":
      return { state: to, status, assignee_id: move.assigneeId, taken_at: "now", due_in_seconds: null }
    case "timeout":
      return move.then === "second_bridge"
        ? { state: to, status, due_in_seconds: null }
        : { state: to, status, assignee_id: null, returned_at: "now", return_note: null, due_in_seconds: null }
    case "return":
    case "resolve":
      return {
        state: to,
        status,
        assignee_id: null,
        returned_at: "now",
        return_note: move.action === "return" ? move.note : null,
        returned_upto: locked.newest_contact_message,
        due_in_seconds: null
      }
  }
}

const actorOf = (move: HandoffMove) => {
  switch (move.action) {
    case "request":
      return move.actor
    case "take":
    case "assign":
      return "operator" as const
    case "return":
      return move.actor
    case "timeout":
    case "resolve":
      return "system" as const
  }
}

export class Handoff extends Effect.Service<Handoff>()("@parley/server/Handoff", {
  dependencies: [HandoffRepo.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* HandoffRepo

    /**
     * One move on a conversation of `workspaceIds`, in one transaction: the new state and the event's id,
     * or 404 / 409 / 422 (an assignee who is not a member of the workspace).
     */
    const apply = (id: ConversationId, workspaceIds: ReadonlyArray<WorkspaceId>, move: HandoffMove) =>
      sql.withTransaction(Effect.gen(function*() {
        const locked = yield* repo.lock(id, workspaceIds).pipe(someOrFail(() => new ConversationNotFound()))
        const target = handoffTarget(locked.state, locked.assignee_id, move)
        if ("conflict" in target) return yield* new HandoffConflict({ message: target.conflict })
        if (move.action === "assign" && !(yield* repo.isMember(move.assigneeId, locked.workspace_id))) {
          return yield* Unprocessable.of([{
            field: "assignee_id",
            message: "is not a member of the conversation's workspace"
          }])
        }
        yield* repo.update(locked.id, columnsOf(locked, move, target.to))
        const eventId = yield* repo.insertEvent({
          workspace_id: locked.workspace_id,
          conversation_id: locked.id,
          action: move.action,
          from_state: locked.state,
          to_state: target.to,
          actor: actorOf(move),
          user_id: "userId" in move ? move.userId : null,
          assignee_id: move.action === "assign" ? move.assigneeId : move.action === "take" ? move.userId : null,
          reason: move.action === "request" ? move.reason : null,
          note: move.action === "return" ? move.note : null,
          // the agent's own request carries its bridge in the reply; a second bridge when a wait outlasts the timeout
          bridge: move.action === "request" && move.actor !== "ai"
            ? "first"
            : move.action === "timeout" && move.then === "second_bridge"
            ? "second"
            : null,
          bridge_text: move.action === "request" ? move.bridgeText ?? null : null
        })
        return { eventId, from: locked.state, to: target.to }
      })).pipe(Effect.catchTag("SqlError", Effect.die))

    /** An operator's move (REST, MCP), on the caller's workspaces. */
    const move = Effect.fn("Handoff.move")(function*(id: ConversationId, m: HandoffMove) {
      const actor = yield* CurrentActor
      return yield* apply(id, actor.workspaceIds, m)
    })

    /** A move made by the system (the agent, a rule, a timeout), on the conversation's own workspace. */
    const moveAsSystem = Effect.fn("Handoff.moveAsSystem")(function*(id: ConversationId, m: HandoffMove) {
      const owner = yield* repo.workspaceOf(id)
      if (Option.isNone(owner)) return yield* new ConversationNotFound()
      return yield* apply(id, [owner.value], m)
    })

    return { move, moveAsSystem, events: repo.events, handedBackAfter: repo.handedBackAfter }
  })
}) {}
