/**
 * The followup sequence of one stage entry, as a durable workflow (its implementation is in
 * FollowupSequence.ts): declared apart so the stage-entry consumer can start it without importing the
 * implementation, which itself calls the conversation entity.
 */
import { Workflow, type WorkflowEngine } from "@effect/workflow"
import { FollowupSequences } from "@parley/domain"
import { Effect, Schema } from "effect"

export const FollowupSequence = Workflow.make({
  name: "FollowupSequence",
  payload: { entryId: Schema.Number },
  idempotencyKey: ({ entryId }) => `stage-entry:${entryId}`
})

/**
 * Starts the entry's followup sequence when its stage has an active followup. Durable once this returns;
 * a repeat (the consumer re-running an entry after a crash) is the same workflow, not a second one.
 */
export const startFollowups = (
  entryId: number
): Effect.Effect<void, never, FollowupSequences | WorkflowEngine.WorkflowEngine> =>
  Effect.gen(function*() {
    const sequences = yield* FollowupSequences
    if (yield* sequences.starts(entryId)) yield* FollowupSequence.execute({ entryId }, { discard: true })
  }).pipe(Effect.withSpan("Followups.start", { attributes: { entryId } }))
