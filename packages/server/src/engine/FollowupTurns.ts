/**
 * The conversation engine's side of a followup sequence step (the `ConversationTurns` port): whether the
 * step sends (the sequence still running, the contact silent for the step's interval since the last message sent
 * to them, under the pipeline's followup_limit, the agent in charge and the workspace in good standing) with the
 * turn context to write it, and storing it once per step.
 */
import { type FollowupDue, intervalMillis, type ReplyDraft } from "@parley/domain"
import { Clock, Effect, Option } from "effect"
import { windowClosed } from "../channels/ServiceWindow.js"
import { ChannelTemplates } from "../channels/Templates.js"
import { blocker, SequencesRepo } from "./SequencesRepo.js"
import type { SnapshotContext } from "./TurnContextFrom.js"
import { draftColumns, followupKey, storedId } from "./TurnDrafts.js"
import { TurnsRepo } from "./TurnsRepo.js"

type Skip = Extract<FollowupDue, { _tag: "Skip" }>["outcome"]
const skip = (outcome: Skip): FollowupDue => ({ _tag: "Skip", outcome })

export const makeFollowupTurns = (snapshotContext: SnapshotContext) =>
  Effect.gen(function*() {
    const repo = yield* TurnsRepo
    const followups = yield* SequencesRepo
    const templates = yield* ChannelTemplates

    const followup = Effect.fn("ConversationTurns.followup")(function*(sequenceId: number, step: number) {
      yield* Effect.annotateCurrentSpan({ sequenceId, step })
      // stored by an earlier run of this step (and delivered with the entity's leftovers)
      if (Option.isSome(yield* repo.replyTo(followupKey(sequenceId, step)))) return skip("sent")
      const found = yield* followups.sequenceState(sequenceId)
      if (Option.isNone(found)) return skip("ended")
      const s = found.value
      const stop = blocker({ ...s, contact_wrote: false })
      if (stop !== null) return skip(stop)
      // silence counts from the last message sent to the contact; their message pauses the step until the next one
      if (s.sent_since_id !== null) {
        if (s.contact_wrote_since) return skip("paused")
        const left = (s.current_interval === null ? 0 : intervalMillis(s.current_interval)) - s.sent_since_age_ms!
        const now = yield* Clock.currentTimeMillis
        yield* followups.rearmSequence(sequenceId, s.sent_since_id, new Date(now + Math.max(left, 0)).toISOString())
        if (left > 0) return skip("rearmed")
      } else if (s.contact_wrote) return skip("paused")
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
      // a provider's window closed: the followup's template goes, or the step is skipped; the sequence goes on
      if (windowClosed(c, yield* Clock.currentTimeMillis)) {
        if (s.template === null) return skip("outside_service_window")
        const template = yield* templates.resolveForSend(String(s.conversation_id), s.template, "A followup step")
        return Option.match(template, {
          onNone: () => skip("outside_service_window"),
          onSome: (t): FollowupDue => ({ _tag: "Template", template: t.send, text: t.text })
        })
      }
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
