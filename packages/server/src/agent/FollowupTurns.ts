/**
 * The conversation engine's side of a followup sequence step (the `ConversationTurns` port): whether the
 * step sends (the sequence still running, under the pipeline's followup_limit, the agent in charge and
 * the workspace in good standing) with the turn context to write it, and storing it once per step.
 */
import { type FollowupDue, type ReplyDraft } from "@parley/domain"
import { Effect, Option } from "effect"
import { blocker, FollowupsRepo } from "../followups/FollowupsRepo.js"
import type { SnapshotContext } from "./TurnContextFrom.js"
import { draftColumns, followupKey, storedId } from "./TurnDrafts.js"
import { TurnsRepo } from "./TurnsRepo.js"

type Skip = Extract<FollowupDue, { _tag: "Skip" }>["outcome"]
const skip = (outcome: Skip): FollowupDue => ({ _tag: "Skip", outcome })

export const makeFollowupTurns = (snapshotContext: SnapshotContext) =>
  Effect.gen(function*() {
    const repo = yield* TurnsRepo
    const followups = yield* FollowupsRepo

    const followup = Effect.fn("ConversationTurns.followup")(function*(sequenceId: number, step: number) {
      yield* Effect.annotateCurrentSpan({ sequenceId, step })
      // stored by an earlier run of this step (and delivered with the entity's leftovers)
      if (Option.isSome(yield* repo.replyTo(followupKey(sequenceId, step)))) return skip("sent")
      const found = yield* followups.sequenceState(sequenceId)
      if (Option.isNone(found)) return skip("ended")
      const s = found.value
      const stop = blocker(s)
      if (stop !== null) return skip(stop)
      if (s.followups_sent >= s.followup_limit) return skip("limit_reached")
      if (s.conversation_id === null) return skip("skipped")
      const current = yield* snapshotContext(String(s.conversation_id), null)
      if (Option.isNone(current)) return skip("skipped")
      const c = current.value.snap
      // a person was asked for, or has it: the stage's followups stay silent (docs/handoff.md)
      if (
        c.status === "paused" || c.opportunity_status === "paused" || c.handoff_state !== "ai" ||
        !c.is_subscription_active || !(c.credits > 0)
      ) {
        return skip("skipped")
      }
      const ready = current.value.ready
      if (Option.isNone(ready)) return skip("skipped")
      const p = ready.value.pipeline
      if (p.status !== "active" || p.is_archived) return skip("skipped")
      return {
        _tag: "Send",
        followup: {
          sequenceId,
          step,
          steps: s.steps,
          instructions: s.instructions,
          assets: s.assets,
          context: ready.value.context
        }
      } satisfies FollowupDue
    })

    const commitFollowup = (conversationId: string, sequenceId: number, step: number, draft: ReplyDraft) =>
      repo.storeReply({
        ...draftColumns(conversationId, followupKey(sequenceId, step), draft, "followup"),
        followupSequenceId: sequenceId,
        followupStep: step
      }).pipe(Effect.map(storedId))

    return { followup, commitFollowup }
  })
